package monitor

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
)

// AdminHandler serves ZooKeeper's AdminServer commands under /commands/
// (by name or alias, JSON answers as in ZooKeeper 3.8), hutch's own, GET
// /commands, the list, and the membership changes; and the live view
// and the event trace (UIHandler on Config.AdminAddr).
func (m *Monitor) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	ui := m.UIHandler(m.cfg.AdminAddr)
	mux.Handle("/ui/", ui)
	mux.Handle("/trace", ui)
	mux.Handle("/debug/pprof/", ui)
	mux.HandleFunc("GET /commands", func(w http.ResponseWriter, _ *http.Request) {
		var names []string
		for i := range registry {
			if c := &registry[i]; c.change == nil {
				names = append(names, c.names[0])
			}
		}
		slices.Sort(names)
		w.Header().Set("Content-Type", "text/html")
		for _, n := range names {
			fmt.Fprintf(w, "<a href=\"/commands/%s\">%s</a>\n<br/>\n", n, n)
		}
	})
	mux.HandleFunc("GET /commands/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		cmd := m.byName[name]
		if cmd == nil {
			// ZooKeeper answers an unknown command with 200 and an error.
			adminReply(w, http.StatusOK, map[string]any{"command": name, "error": "Unknown command: " + name})
			return
		}
		if cmd.do != nil {
			// It changes the server (a statistics reset): the token is
			// required, as for membership changes.
			if status, err := m.checkToken(r); err != nil {
				adminReply(w, status, map[string]any{"command": cmd.names[0], "error": err.Error()})
				return
			}
		}
		adminReply(w, http.StatusOK, m.run(cmd))
	})
	for i := range registry {
		if c := &registry[i]; c.change != nil {
			mux.HandleFunc(c.method+" /commands/"+c.path, m.changeHandler(c))
		}
	}
	// ZooKeeper 3.9's snapshot and restore, under their names and aliases.
	snap := m.snapshotHandler(&rateLimit{interval: snapshotInterval})
	mux.HandleFunc("GET /commands/snapshot", snap)
	mux.HandleFunc("GET /commands/snap", snap)
	rest := m.restoreHandler()
	mux.HandleFunc("POST /commands/restore", rest)
	mux.HandleFunc("POST /commands/rest", rest)
	return mux
}

// run answers cmd as JSON.
func (m *Monitor) run(cmd *command) map[string]any {
	out := map[string]any{}
	v := m.take(cmd.needs)
	if cmd.serving && !v.Serving {
		out["error"] = strings.TrimSuffix(notServingText, "\n")
	} else {
		if cmd.do != nil {
			cmd.do(m.src)
		}
		if cmd.json != nil {
			cmd.json(out, v)
		}
	}
	out["command"] = cmd.names[0]
	if _, ok := out["error"]; !ok {
		out["error"] = nil
	}
	return out
}

// changeHandler serves a membership change: an authenticated JSON
// request. Requiring a header and a JSON body means no page in a browser
// can make one (a cross-site form cannot set either without a preflight).
func (m *Monitor) changeHandler(cmd *command) http.HandlerFunc {
	name := cmd.names[0]
	return func(w http.ResponseWriter, r *http.Request) {
		if cmd.token {
			if status, err := m.authorize(r); err != nil {
				adminReply(w, status, map[string]any{"command": name, "error": err.Error()})
				return
			}
		}
		var req memberRequest
		var (
			err       error
			versionOK bool
		)
		if err = json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err == nil {
			_, versionOK = req.from()
		}
		if err != nil || !versionOK || !cmd.valid(req, m.cfg.MaxMemberID) {
			adminReply(w, http.StatusBadRequest, map[string]any{"command": name, "error": `want a JSON body {"id": N, "addr": "host:port"}, and "version" in hex if given`})
			return
		}
		cfg, err := cmd.change(r.Context(), m.src, req)
		if err != nil {
			adminReply(w, http.StatusConflict, map[string]any{"command": name, "error": err.Error()})
			return
		}
		adminReply(w, http.StatusOK, map[string]any{"command": name, "id": req.ID, "addr": req.Addr,
			"config": cfg.Text(), "error": nil})
	}
}

// authorize checks a state-changing admin request: the configured token
// as a bearer token, and a JSON body.
func (m *Monitor) authorize(r *http.Request) (int, error) {
	if status, err := m.checkToken(r); err != nil {
		return status, err
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return http.StatusUnsupportedMediaType, errors.New("the body must be application/json")
	}
	return 0, nil
}

// checkToken checks that r carries the admin token as a bearer token.
func (m *Monitor) checkToken(r *http.Request) (int, error) {
	token := m.cfg.AdminToken
	if token == "" {
		return http.StatusForbidden, errors.New("commands that change the server are disabled: no admin token is configured")
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
		return http.StatusUnauthorized, errors.New("a valid Authorization: Bearer token is required")
	}
	return 0, nil
}

func adminReply(w http.ResponseWriter, status int, v map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
