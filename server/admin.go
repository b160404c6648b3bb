package server

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// ErrNotReplicated is returned by membership calls on a node without Raft.
var ErrNotReplicated = errors.New("server: not a replicated node")

// AddMember adds a voting member to the ensemble. Only the leader can.
func (s *Server) AddMember(id uint64, raftAddr string) error { return s.repl.AddMember(id, raftAddr) }

// RemoveMember removes a member from the ensemble. Only the leader can.
func (s *Server) RemoveMember(id uint64) error { return s.repl.RemoveMember(id) }

// memberRequest is the JSON body of a membership change.
type memberRequest struct {
	ID   uint64 `json:"id"`
	Addr string `json:"addr"`
}

// adminHandler serves ZooKeeper's AdminServer commands under /commands/
// (by name or alias, JSON answers as in ZooKeeper 3.8), hutch's own
// (digest, members, raft), and GET /commands, the list.
func (s *Server) adminHandler() http.Handler {
	mux := http.NewServeMux()
	commands := s.adminCommands()
	byName := map[string]*adminCommand{}
	for i := range commands {
		for _, n := range commands[i].names {
			byName[n] = &commands[i]
		}
	}
	mux.HandleFunc("GET /commands", func(w http.ResponseWriter, _ *http.Request) {
		names := make([]string, 0, len(commands))
		for _, c := range commands {
			names = append(names, c.names[0])
		}
		slices.Sort(names)
		w.Header().Set("Content-Type", "text/html")
		for _, n := range names {
			fmt.Fprintf(w, "<a href=\"/commands/%s\">%s</a>\n<br/>\n", n, n)
		}
	})
	mux.HandleFunc("GET /commands/{name}", func(w http.ResponseWriter, r *http.Request) {
		cmd := byName[r.PathValue("name")]
		if cmd == nil {
			// ZooKeeper answers an unknown command with 200 and an error.
			adminReply(w, http.StatusOK, map[string]any{"command": r.PathValue("name"), "error": "Unknown command: " + r.PathValue("name")})
			return
		}
		out := map[string]any{}
		if cmd.serving && s.notServing.Load() {
			out["error"] = "This ZooKeeper instance is not currently serving requests"
		} else {
			cmd.run(out)
		}
		out["command"] = cmd.names[0]
		if _, ok := out["error"]; !ok {
			out["error"] = nil
		}
		adminReply(w, http.StatusOK, out)
	})
	// Membership changes: an authenticated JSON request. Requiring a
	// header and a JSON body means no page in a browser can make one
	// (a cross-site form cannot set either without a preflight).
	member := func(name string, change func(memberRequest) error, valid func(memberRequest) bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if status, err := s.authorizeAdmin(r); err != nil {
				adminReply(w, status, map[string]any{"command": name, "error": err.Error()})
				return
			}
			var m memberRequest
			if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&m); err != nil || !valid(m) {
				adminReply(w, http.StatusBadRequest, map[string]any{"command": name, "error": `want a JSON body {"id": N, "addr": "host:port"}`})
				return
			}
			if err := change(m); err != nil {
				adminReply(w, http.StatusConflict, map[string]any{"command": name, "error": err.Error()})
				return
			}
			adminReply(w, http.StatusOK, map[string]any{"command": name, "id": m.ID, "addr": m.Addr, "error": nil})
		}
	}
	mux.HandleFunc("POST /commands/members", member("add_member",
		func(m memberRequest) error { return s.AddMember(m.ID, m.Addr) },
		func(m memberRequest) bool { return m.ID >= 1 && m.ID <= MaxServerID && m.Addr != "" }))
	mux.HandleFunc("DELETE /commands/members", member("remove_member",
		func(m memberRequest) error { return s.RemoveMember(m.ID) },
		func(m memberRequest) bool { return m.ID >= 1 && m.ID <= MaxServerID }))
	return mux
}

func adminReply(w http.ResponseWriter, status int, v map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// authorizeAdmin checks a state-changing admin request: the configured
// token as a bearer token, and a JSON body.
func (s *Server) authorizeAdmin(r *http.Request) (int, error) {
	if s.cfg.AdminToken == "" {
		return http.StatusForbidden, errors.New("membership changes are disabled: no admin token is configured")
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.AdminToken)) != 1 {
		return http.StatusUnauthorized, errors.New("a valid Authorization: Bearer token is required")
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return http.StatusUnsupportedMediaType, errors.New("the body must be application/json")
	}
	return 0, nil
}

// serveAdmin runs the admin HTTP listener until the server closes.
func (s *Server) serveAdmin(ln net.Listener) {
	hs := &http.Server{Handler: s.adminHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-s.ctx.Done()
		_ = hs.Close()
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.log.Warn("admin server stopped", "err", err)
	}
}
