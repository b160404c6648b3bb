package server

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/hutchzk/hutch/internal/controlhttp"
	"github.com/hutchzk/hutch/monitor"
)

// ControlHandler serves the test controls over HTTP, for test harnesses
// in any language that run the hutch binary (its --test-controls flag).
// Every answer is a JSON object; a control that fails, and a request for
// an unknown path (404) or with the wrong method (405), answers 4xx or
// 5xx with {"error": "..."}.
//
//	POST /expire?session=ID    expire a session (ExpireSession)
//	POST /drop?session=ID      drop the connection carrying it (DropConnection)
//	POST /drop                 drop every connection (DropAll)
//	POST /advance?by=DURATION  move the fake clock (AdvanceClock), e.g. by=30s;
//	                           keep_connected=true keeps connected clients' sessions
//	POST /pause, POST /resume  stop and resume answering (Pause, Resume)
//	GET  /sessions             the live sessions (Sessions)
//	GET  /                     the list of controls
//
// A session ID is decimal or 0x-prefixed hexadecimal, as clients print
// them. The handler has no authentication: serve it on loopback only. It
// answers programs on this machine, never a web page: a request whose
// Host is not a loopback name, or that a browser sent from another
// origin, is refused with 403 (httpserve.LocalOnly, which
// controlhttp.Handler applies).
func (s *Server) ControlHandler() http.Handler {
	return controlhttp.Handler([]controlhttp.Route{
		{Method: "POST", Path: "/expire", Doc: "expire a session: ?session=ID", Handle: func(r *http.Request) (any, error) {
			id, err := SessionParam(r, true)
			if err != nil {
				return nil, err
			}
			return map[string]any{"expired": id}, s.ExpireSession(id)
		}},
		{Method: "POST", Path: "/drop", Doc: "drop the connection of ?session=ID, or every connection", Handle: func(r *http.Request) (any, error) {
			id, err := SessionParam(r, false)
			if err != nil {
				return nil, err
			}
			if id == 0 {
				return map[string]any{"dropped": s.DropAll()}, nil
			}
			return map[string]any{"dropped": 1, "session": id}, s.DropConnection(id)
		}},
		{Method: "POST", Path: "/advance", Doc: "move the fake clock: ?by=30s[&keep_connected=true]", Handle: func(r *http.Request) (any, error) {
			d, keep, err := AdvanceParams(r)
			if err != nil {
				return nil, err
			}
			var alive []int64
			if keep {
				alive = s.ConnectedSessions()
			}
			if err := s.AdvanceClock(d, alive...); err != nil {
				return nil, err
			}
			return map[string]any{"advanced": d.String(), "now": s.clock.Now().UTC().Format(time.RFC3339Nano)}, nil
		}},
		{Method: "POST", Path: "/pause", Doc: "stop answering, sockets left open", Handle: func(*http.Request) (any, error) {
			s.Pause()
			return map[string]any{"paused": true}, nil
		}},
		{Method: "POST", Path: "/resume", Doc: "answer again", Handle: func(*http.Request) (any, error) {
			s.Resume()
			return map[string]any{"paused": false}, nil
		}},
		{Method: "GET", Path: "/sessions", Doc: "the live sessions", Handle: func(*http.Request) (any, error) {
			out := []ControlSession{}
			for _, ss := range s.Snapshot(monitor.PartSessions).Sessions {
				out = append(out, NewControlSession(ss))
			}
			return map[string]any{"sessions": out}, nil
		}},
	}, ControlStatus)
}

// ControlSession is a live session as the HTTP controls show it.
type ControlSession struct {
	ID        int64 `json:"id"`
	TimeoutMS int64 `json:"timeout_ms"`
	Connected bool  `json:"connected"`
	// Member is the ensemble member its client is connected to, from 1;
	// 0 alone, or when not connected (hutch test-ensemble only).
	Member     int      `json:"member,omitempty"`
	Ephemerals []string `json:"ephemerals"` // never null: [] for none
}

// NewControlSession is ss as the controls show it.
func NewControlSession(ss monitor.Session) ControlSession {
	eph := ss.Ephemerals
	if eph == nil {
		eph = []string{}
	}
	return ControlSession{ID: ss.ID, TimeoutMS: ss.Timeout.Milliseconds(), Connected: ss.Remote != "", Ephemerals: eph}
}

// SessionParam reads ?session=, decimal or 0x hexadecimal as clients
// print it; a missing one is 0 unless required.
func SessionParam(r *http.Request, required bool) (int64, error) {
	v := r.URL.Query().Get("session")
	if v == "" && !required {
		return 0, nil
	}
	id, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		// Ids with the top bit set print as large unsigned numbers.
		u, uerr := strconv.ParseUint(v, 0, 64)
		if uerr != nil {
			return 0, controlhttp.BadRequest("session must be a session id, decimal or 0x hexadecimal (got %q)", v)
		}
		id = int64(u)
	}
	return id, nil
}

// AdvanceParams reads /advance's ?by= and ?keep_connected=.
func AdvanceParams(r *http.Request) (time.Duration, bool, error) {
	q := r.URL.Query()
	d, err := time.ParseDuration(q.Get("by"))
	if err != nil || d < 0 {
		return 0, false, controlhttp.BadRequest("by must be a duration such as 30s or 1h (got %q)", q.Get("by"))
	}
	keep := false
	if v := q.Get("keep_connected"); v != "" {
		if keep, err = strconv.ParseBool(v); err != nil {
			return 0, false, controlhttp.BadRequest("keep_connected must be true or false (got %q)", v)
		}
	}
	return d, keep, nil
}

// ControlStatus is the HTTP status of a control's error: 404 for what
// does not exist, 409 for what the server's state refuses, 503 for a
// server not serving.
func ControlStatus(err error) int {
	switch {
	case errors.Is(err, ErrNoSession), errors.Is(err, ErrNoConnection):
		return http.StatusNotFound
	case errors.Is(err, ErrRealClock), errors.Is(err, ErrNotLeader):
		return http.StatusConflict
	case errors.Is(err, ErrNotStarted), errors.Is(err, ErrClosed), errors.Is(err, ErrNotApplied):
		return http.StatusServiceUnavailable
	}
	return 0
}
