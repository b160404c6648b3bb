package raftstore

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Connection tags: the first byte a dialer writes says which protocol the
// connection carries.
const (
	tagRaft    byte = 'R'
	tagForward byte = 'F'
)

// tagTimeout bounds how long an accepted connection may take to send its
// tag, so a silent client cannot hold a demultiplexing goroutine.
const tagTimeout = 5 * time.Second

var errListenerClosed = errors.New("raftstore: listener closed")

// mux owns a node's one TCP listener. It reads each accepted connection's
// tag and hands Raft connections to Accept (as the raft.StreamLayer) and
// forwarding connections to onForward.
type mux struct {
	ln        net.Listener
	log       *slog.Logger
	onForward func(net.Conn)
	advertise string // what Addr reports to Raft
	dial      func(addr string, timeout time.Duration) (net.Conn, error)

	pendingMu sync.Mutex
	pending   map[net.Conn]struct{} // accepted, tag not yet read; guarded by pendingMu

	raftConns chan net.Conn
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	wg        sync.WaitGroup // the accept loop and tag readers
}

func newMux(ln net.Listener, advertise string, log *slog.Logger, onForward func(net.Conn),
	dial func(addr string, timeout time.Duration) (net.Conn, error)) *mux {
	m := &mux{ln: ln, advertise: advertise, log: log, onForward: onForward, dial: dial,
		raftConns: make(chan net.Conn), done: make(chan struct{}),
		pending: make(map[net.Conn]struct{})}
	m.wg.Add(1)
	go m.acceptLoop()
	return m
}

func (m *mux) acceptLoop() {
	defer m.wg.Done()
	var backoff time.Duration
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			// Temporary failures (fd exhaustion): back off and retry.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			m.log.Warn("raftstore: accept failed", "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
				continue
			case <-m.done:
				return
			}
		}
		backoff = 0
		m.wg.Add(1)
		go m.route(c)
	}
}

// route reads the tag and dispatches the connection.
func (m *mux) route(c net.Conn) {
	defer m.wg.Done()
	m.pendingMu.Lock()
	select {
	case <-m.done:
		m.pendingMu.Unlock()
		c.Close()
		return
	default:
	}
	m.pending[c] = struct{}{}
	m.pendingMu.Unlock()
	var tag [1]byte
	c.SetReadDeadline(time.Now().Add(tagTimeout))
	_, err := c.Read(tag[:])
	m.pendingMu.Lock()
	delete(m.pending, c)
	m.pendingMu.Unlock()
	if err != nil {
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	switch tag[0] {
	case tagRaft:
		select {
		case m.raftConns <- c:
		case <-m.done:
			c.Close()
		}
	case tagForward:
		m.onForward(c)
	default:
		m.log.Warn("raftstore: unknown connection tag", "tag", tag[0], "remote", c.RemoteAddr().String())
		c.Close()
	}
}

// Accept returns the next Raft connection (raft.StreamLayer).
func (m *mux) Accept() (net.Conn, error) {
	select {
	case c := <-m.raftConns:
		return c, nil
	case <-m.done:
		return nil, errListenerClosed
	}
}

// Close stops accepting; Raft's transport calls it on shutdown. It does not
// wait for forwarding handlers, which Store.Close stops.
func (m *mux) Close() error {
	var err error
	m.closeOnce.Do(func() {
		m.pendingMu.Lock()
		close(m.done)
		for c := range m.pending {
			c.Close()
		}
		m.pendingMu.Unlock()
		err = m.ln.Close()
	})
	return err
}

// Addr is the advertised address (raft.StreamLayer): Raft sends it to
// peers as this node's address.
func (m *mux) Addr() net.Addr {
	if m.advertise != "" {
		return tcpAddr(m.advertise)
	}
	return m.ln.Addr()
}

// tcpAddr is an advertised host:port.
type tcpAddr string

func (a tcpAddr) Network() string { return "tcp" }
func (a tcpAddr) String() string  { return string(a) }

// Dial opens a Raft connection to address (raft.StreamLayer).
func (m *mux) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return dialTagged(m.dial, string(address), tagRaft, timeout)
}

// dialTagged connects to addr with dial and sends tag.
func dialTagged(dial func(string, time.Duration) (net.Conn, error), addr string, tag byte, timeout time.Duration) (net.Conn, error) {
	c, err := dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{tag}); err != nil {
		c.Close()
		return nil, err
	}
	c.SetWriteDeadline(time.Time{})
	return c, nil
}
