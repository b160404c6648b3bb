package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/hutchzk/hutch/internal/httpserve"
	"github.com/hutchzk/hutch/monitor"
)

// ControlHandler serves the test controls over HTTP, for test harnesses
// in any language that run the hutch binary (its --test-controls flag).
// Every answer is JSON; a control that fails answers 4xx or 5xx with
// {"error": "..."}.
//
//	POST /expire?session=ID    expire a session (ExpireSession)
//	POST /drop?session=ID      drop the connection carrying it (DropConnection)
//	POST /drop                 drop every connection (DropAll)
//	POST /advance?by=DURATION  move the fake clock (AdvanceClock), e.g. by=30s
//	POST /pause, POST /resume  stop and resume answering (Pause, Resume)
//	GET  /sessions             the live sessions (Sessions)
//
// A session ID is decimal or 0x-prefixed hexadecimal, as clients print
// them. The handler has no authentication: serve it on loopback only. It
// answers programs on this machine, never a web page: a request whose
// Host is not a loopback name, or that a browser sent from another
// origin, is refused with 403 (httpserve.LocalOnly).
func (s *Server) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /expire", func(w http.ResponseWriter, r *http.Request) {
		id, ok := sessionParam(w, r, true)
		if !ok {
			return
		}
		writeControlReply(w, s.ExpireSession(id), map[string]any{"expired": id})
	})
	mux.HandleFunc("POST /drop", func(w http.ResponseWriter, r *http.Request) {
		id, ok := sessionParam(w, r, false)
		if !ok {
			return
		}
		if id == 0 {
			writeControlReply(w, nil, map[string]any{"dropped": s.DropAll()})
			return
		}
		writeControlReply(w, s.DropConnection(id), map[string]any{"dropped": 1, "session": id})
	})
	mux.HandleFunc("POST /advance", func(w http.ResponseWriter, r *http.Request) {
		d, err := time.ParseDuration(r.URL.Query().Get("by"))
		if err != nil || d < 0 {
			replyError(w, http.StatusBadRequest, errors.New("by must be a duration such as 30s or 1h"))
			return
		}
		err = s.AdvanceClock(d)
		writeControlReply(w, err, map[string]any{"advanced": d.String(), "now": s.clock.Now().UTC().Format(time.RFC3339Nano)})
	})
	mux.HandleFunc("POST /pause", func(w http.ResponseWriter, r *http.Request) {
		s.Pause()
		writeControlReply(w, nil, map[string]any{"paused": true})
	})
	mux.HandleFunc("POST /resume", func(w http.ResponseWriter, r *http.Request) {
		s.Resume()
		writeControlReply(w, nil, map[string]any{"paused": false})
	})
	mux.HandleFunc("GET /sessions", func(w http.ResponseWriter, r *http.Request) {
		type session struct {
			ID         int64    `json:"id"`
			TimeoutMS  int64    `json:"timeout_ms"`
			Connected  bool     `json:"connected"`
			Ephemerals []string `json:"ephemerals"`
		}
		out := []session{}
		for _, ss := range s.Snapshot(monitor.PartSessions).Sessions {
			out = append(out, session{ss.ID, ss.Timeout.Milliseconds(), ss.Remote != "", ss.Ephemerals})
		}
		writeControlReply(w, nil, map[string]any{"sessions": out})
	})
	return httpserve.LocalOnly(mux)
}

// sessionParam reads ?session=; a missing one is 0 unless required.
func sessionParam(w http.ResponseWriter, r *http.Request, required bool) (int64, bool) {
	v := r.URL.Query().Get("session")
	if v == "" && !required {
		return 0, true
	}
	id, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		// Ids with the top bit set print as large unsigned numbers.
		u, uerr := strconv.ParseUint(v, 0, 64)
		if uerr != nil {
			replyError(w, http.StatusBadRequest, errors.New("session must be a session id, decimal or 0x hexadecimal"))
			return 0, false
		}
		id = int64(u)
	}
	return id, true
}

// writeControlReply answers body, or err with the status it calls for.
func writeControlReply(w http.ResponseWriter, err error, body map[string]any) {
	if err != nil {
		status := http.StatusInternalServerError
		switch {
		case errors.Is(err, ErrNoSession), errors.Is(err, ErrNoConnection):
			status = http.StatusNotFound
		case errors.Is(err, ErrRealClock), errors.Is(err, ErrNotLeader):
			status = http.StatusConflict
		case errors.Is(err, ErrNotStarted), errors.Is(err, ErrClosed):
			status = http.StatusServiceUnavailable
		}
		replyError(w, status, err)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

func replyError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]any{"error": err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
