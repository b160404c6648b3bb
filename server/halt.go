package server

import (
	"errors"
	"sync"
	"sync/atomic"
)

// ErrHalted is ServeConn's answer on a member that stopped itself.
var ErrHalted = errors.New("server: this member stopped itself and serves no clients until it is restarted")

// haltState is the record of a member that stopped itself.
type haltState struct {
	once sync.Once
	err  atomic.Pointer[error]
	done chan struct{} // closed when the member halts
}

// Halted is closed when this member stops itself because it cannot go on
// safely (a write to its disk failed, its log or state is damaged or
// differs from the others'): see HaltError. It then serves no client
// until it is restarted, as ZooKeeper exits; the hutch command exits.
func (s *Server) Halted() <-chan struct{} { return s.halting.done }

// HaltError says why this member stopped itself, or nil while it serves.
func (s *Server) HaltError() error {
	if p := s.halting.err.Load(); p != nil {
		return *p
	}
	return nil
}

// halt stops serving clients for good: new ones are refused (the client
// ports close, so they are turned away at once and try another member)
// and every open one is closed, so its client reconnects elsewhere.
// Writes waiting for their outcome are given up, as when a leader dies.
func (s *Server) halt(err error) {
	s.halting.once.Do(func() {
		s.halting.err.Store(&err)
		close(s.halting.done)
		s.lifeMu.Lock()
		listeners := []interface{ Close() error }{}
		if s.ln != nil {
			listeners = append(listeners, s.ln)
		}
		if s.secureLn != nil {
			listeners = append(listeners, s.secureLn)
		}
		s.lifeMu.Unlock()
		for _, l := range listeners {
			_ = l.Close()
		}
		open := s.openConns()
		s.log.Error("this member stopped serving clients: it cannot go on safely. It refuses clients until it is restarted; "+
			"see docs/operations.md, \"A member that stopped itself\"", "err", err, "connections", len(open))
		for _, c := range open {
			c.out.abort()
		}
		s.pending.failAll()
	})
}

// isHalted reports whether this member stopped itself.
func (s *Server) isHalted() bool {
	select {
	case <-s.halting.done:
		return true
	default:
		return false
	}
}
