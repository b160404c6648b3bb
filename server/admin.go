package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"
)

// ErrNotReplicated is returned by membership calls on a node without Raft.
var ErrNotReplicated = errors.New("server: not a replicated node")

// Digest returns a hash of the whole tree and the last applied zxid; equal
// digests at equal zxids mean two nodes hold identical trees.
func (s *Server) Digest() (digest uint64, lastZxid int64) {
	s.treeMu.RLock()
	defer s.treeMu.RUnlock()
	return s.tree.Digest(), s.tree.LastZxid()
}

// AddMember adds a voting member to the ensemble. Only the leader can.
func (s *Server) AddMember(id uint64, raftAddr string) error {
	rc, ok := s.commit.(*raftCommitter)
	if !ok {
		return ErrNotReplicated
	}
	return rc.store.AddVoter(id, raftAddr)
}

// RemoveMember removes a member from the ensemble. Only the leader can.
func (s *Server) RemoveMember(id uint64) error {
	rc, ok := s.commit.(*raftCommitter)
	if !ok {
		return ErrNotReplicated
	}
	return rc.store.RemoveServer(id)
}

// adminHandler serves AdminServer-style commands under /commands/.
func (s *Server) adminHandler() http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, status int, v map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /commands/ruok", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, map[string]any{"command": "ruok", "error": nil})
	})
	mux.HandleFunc("GET /commands/digest", func(w http.ResponseWriter, _ *http.Request) {
		d, z := s.Digest()
		reply(w, http.StatusOK, map[string]any{"command": "digest", "digest": fmt.Sprintf("%016x", d), "last_zxid": z, "error": nil})
	})
	mux.HandleFunc("POST /commands/members", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseUint(r.FormValue("id"), 10, 64)
		addr := r.FormValue("addr")
		if err != nil || id == 0 || addr == "" {
			reply(w, http.StatusBadRequest, map[string]any{"command": "add_member", "error": "want id=N and addr=host:port"})
			return
		}
		if err := s.AddMember(id, addr); err != nil {
			reply(w, http.StatusConflict, map[string]any{"command": "add_member", "error": err.Error()})
			return
		}
		reply(w, http.StatusOK, map[string]any{"command": "add_member", "id": id, "addr": addr, "error": nil})
	})
	mux.HandleFunc("DELETE /commands/members", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseUint(r.FormValue("id"), 10, 64)
		if err != nil || id == 0 {
			reply(w, http.StatusBadRequest, map[string]any{"command": "remove_member", "error": "want id=N"})
			return
		}
		if err := s.RemoveMember(id); err != nil {
			reply(w, http.StatusConflict, map[string]any{"command": "remove_member", "error": err.Error()})
			return
		}
		reply(w, http.StatusOK, map[string]any{"command": "remove_member", "id": id, "error": nil})
	})
	return mux
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
