package server

import (
	"net"
	"sync"
)

// The pause gate: Pause holds every client connection's I/O (and the
// timer loops) without closing anything, as a stopped process would.

func (g *pauseGate) init() {
	g.resumed = make(chan struct{})
	close(g.resumed)
}

func (g *pauseGate) pause() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused.Load() {
		return false
	}
	g.resumed = make(chan struct{})
	g.paused.Store(true)
	return true
}

func (g *pauseGate) resume() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.paused.Load() {
		return false
	}
	g.paused.Store(false)
	close(g.resumed)
	return true
}

// wait blocks while paused; false means stop closed first.
func (g *pauseGate) wait(stop <-chan struct{}) bool {
	if !g.paused.Load() {
		return true
	}
	g.mu.Lock()
	ch := g.resumed
	g.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-stop:
		return false
	}
}

// gated wraps a client connection so that Pause holds its I/O.
func (s *Server) gated(nc net.Conn) net.Conn {
	return &gatedConn{Conn: nc, gate: &s.gate, closed: make(chan struct{})}
}

// gatedConn is a client connection whose reads and writes wait while the
// server is paused. Bytes that arrive then stay unread, as in a stopped
// process's socket.
type gatedConn struct {
	net.Conn
	gate   *pauseGate
	once   sync.Once
	closed chan struct{} // closed by Close: held I/O gives up
}

func (g *gatedConn) Read(b []byte) (int, error) {
	if !g.gate.wait(g.closed) {
		return 0, net.ErrClosed
	}
	n, err := g.Conn.Read(b)
	if !g.gate.wait(g.closed) {
		return 0, net.ErrClosed
	}
	return n, err
}

func (g *gatedConn) Write(b []byte) (int, error) {
	if !g.gate.wait(g.closed) {
		return 0, net.ErrClosed
	}
	return g.Conn.Write(b)
}

func (g *gatedConn) Close() error {
	g.once.Do(func() { close(g.closed) })
	return g.Conn.Close()
}
