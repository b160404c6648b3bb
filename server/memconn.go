package server

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DialMemory connects to the server without a socket: it returns one end
// of a buffered in-memory pipe and serves the other (ServeConn), as if a
// client on 127.0.0.1 had connected. A ZooKeeper client given it as its
// dialer (go-zookeeper's zk.WithDialer) talks to the server with no port
// at all: an embedding program's own clients, or a test's. It fails as a
// dial to a closed port would while the server is not serving.
func (s *Server) DialMemory() (net.Conn, error) {
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1 + int(nextPipePort.Add(1)%65535)}
	remote := s.Addr()
	if remote == nil {
		remote = memoryAddr{}
	}
	client, end := newPipe(local, remote)
	if err := s.ServeConn(end); err != nil && !errors.Is(err, ErrRefused) {
		_ = client.Close()
		return nil, &net.OpError{Op: "dial", Net: "memory", Addr: remote, Err: err}
	}
	// A refused connection (too many from one address) is closed by the
	// server, as a real one accepts and closes it.
	return client, nil
}

// nextPipePort numbers in-memory connections: the port their client end
// shows, so that logs tell them apart.
var nextPipePort atomic.Int32

// pipeBuffer is how many bytes one direction of an in-memory connection
// holds before a writer waits: about a loopback socket's buffer. net.Pipe
// holds none, so a writer waits for every read; a client that stops
// reading for a moment (go-zookeeper while it hands out an event) would
// then stall the server's writer at once, which TCP would absorb.
const pipeBuffer = 256 << 10

// newPipe returns the two ends of a buffered, full-duplex in-memory
// connection: what one writes the other reads. Each end reports the
// addresses given, so a server sees a: its client's, b: its own.
func newPipe(a, b net.Addr) (net.Conn, net.Conn) {
	ab, ba := newStream(), newStream()
	return &pipeConn{in: ba, out: ab, local: a, remote: b, closed: make(chan struct{})},
		&pipeConn{in: ab, out: ba, local: b, remote: a, closed: make(chan struct{})}
}

// stream is one direction of a pipe.
type stream struct {
	mu      sync.Mutex // guards the fields below
	buf     []byte
	eof     bool // the writing end closed: reads drain buf, then io.EOF
	broken  bool // the reading end closed: writes fail
	changed chan struct{}
}

func newStream() *stream { return &stream{changed: make(chan struct{})} }

// signal wakes everyone waiting on the stream; mu is held.
func (s *stream) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// deadline is one end's read or write deadline.
type deadline struct {
	mu      sync.Mutex // guards at and changed
	at      time.Time
	changed chan struct{}
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.at = t
	if d.changed != nil {
		close(d.changed)
	}
	d.changed = make(chan struct{})
}

// passed reports whether the deadline is set and past: an operation
// then fails at once, even if it could go on, as on a socket.
func (d *deadline) passed() bool {
	at, _ := d.get()
	return !at.IsZero() && !time.Now().Before(at)
}

func (d *deadline) get() (time.Time, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.changed == nil {
		d.changed = make(chan struct{})
	}
	return d.at, d.changed
}

// pipeConn is one end of a pipe.
type pipeConn struct {
	in, out       *stream
	local, remote net.Addr
	rd, wd        deadline
	closeOnce     sync.Once
	closed        chan struct{} // closed by Close
}

func (c *pipeConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

func (c *pipeConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "pipe", Source: c.local, Addr: c.remote, Err: err}
}

// wait blocks until the stream changes, the deadline passes or changes,
// or this end closes; it returns the error that ends the operation, if
// any.
func (c *pipeConn) wait(op string, changed <-chan struct{}, d *deadline) error {
	at, moved := d.get()
	var expire <-chan time.Time
	if !at.IsZero() {
		left := time.Until(at)
		if left <= 0 {
			return c.opError(op, os.ErrDeadlineExceeded)
		}
		t := time.NewTimer(left)
		defer t.Stop()
		expire = t.C
	}
	select {
	case <-changed:
	case <-moved:
	case <-c.closed:
		return c.opError(op, net.ErrClosed)
	case <-expire:
		return c.opError(op, os.ErrDeadlineExceeded)
	}
	return nil
}

func (c *pipeConn) Read(b []byte) (int, error) {
	for {
		if c.isClosed() {
			return 0, c.opError("read", net.ErrClosed)
		}
		if c.rd.passed() {
			return 0, c.opError("read", os.ErrDeadlineExceeded)
		}
		s := c.in
		s.mu.Lock()
		if len(s.buf) > 0 {
			n := copy(b, s.buf)
			s.buf = s.buf[n:]
			if len(s.buf) == 0 {
				s.buf = s.buf[:0:0] // let a large burst's array go
			}
			s.signal()
			s.mu.Unlock()
			return n, nil
		}
		if s.eof {
			s.mu.Unlock()
			return 0, io.EOF
		}
		changed := s.changed
		s.mu.Unlock()
		if err := c.wait("read", changed, &c.rd); err != nil {
			return 0, err
		}
	}
}

func (c *pipeConn) Write(b []byte) (int, error) {
	written := 0
	for written < len(b) {
		if c.isClosed() {
			return written, c.opError("write", net.ErrClosed)
		}
		if c.wd.passed() {
			return written, c.opError("write", os.ErrDeadlineExceeded)
		}
		s := c.out
		s.mu.Lock()
		if s.broken {
			s.mu.Unlock()
			return written, c.opError("write", io.ErrClosedPipe)
		}
		if room := pipeBuffer - len(s.buf); room > 0 {
			n := min(room, len(b)-written)
			s.buf = append(s.buf, b[written:written+n]...)
			written += n
			s.signal()
			s.mu.Unlock()
			continue
		}
		changed := s.changed
		s.mu.Unlock()
		if err := c.wait("write", changed, &c.wd); err != nil {
			return written, err
		}
	}
	return written, nil
}

// Close ends this end: the other end reads what was written and then
// io.EOF, and its writes fail; this end's blocked calls return.
func (c *pipeConn) Close() error {
	first := false
	c.closeOnce.Do(func() {
		first = true
		close(c.closed)
		c.out.mu.Lock()
		c.out.eof = true
		c.out.signal()
		c.out.mu.Unlock()
		c.in.mu.Lock()
		c.in.broken = true
		c.in.buf = nil
		c.in.signal()
		c.in.mu.Unlock()
	})
	if !first {
		return c.opError("close", net.ErrClosed)
	}
	return nil
}

func (c *pipeConn) LocalAddr() net.Addr  { return c.local }
func (c *pipeConn) RemoteAddr() net.Addr { return c.remote }

func (c *pipeConn) SetDeadline(t time.Time) error {
	c.rd.set(t)
	c.wd.set(t)
	return nil
}

func (c *pipeConn) SetReadDeadline(t time.Time) error  { c.rd.set(t); return nil }
func (c *pipeConn) SetWriteDeadline(t time.Time) error { c.wd.set(t); return nil }
