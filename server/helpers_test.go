package server

import (
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/wire"
)

// startServer runs an in-process hutch on a free loopback port.
func startServer(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	if cfg.ListenAddr == "" {
		cfg.ListenAddr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := New(cfg)
	if err := s.Start(); err != nil {
		tb.Fatalf("start: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// dial opens a go-zookeeper session and waits until it is connected.
func dial(tb testing.TB, addr string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	tb.Helper()
	return dialVia(tb, addr, timeout, nil)
}

// dialVia is dial through dialer (nil: go-zookeeper's own).
func dialVia(tb testing.TB, addr string, timeout time.Duration, dialer zk.Dialer) (*zk.Conn, <-chan zk.Event) {
	tb.Helper()
	var (
		c      *zk.Conn
		events <-chan zk.Event
		err    error
	)
	if dialer != nil {
		c, events, err = zk.Connect([]string{addr}, timeout, zk.WithLogger(discardLogger{}), zk.WithDialer(dialer))
	} else {
		c, events, err = zk.Connect([]string{addr}, timeout, zk.WithLogger(discardLogger{}))
	}
	return awaitSession(tb, c, events, err, addr)
}

// awaitSession takes what zk.Connect returned for servers, fails tb on
// its error, closes the connection when the test ends and waits up to 30s
// until it has its session.
func awaitSession(tb testing.TB, c *zk.Conn, events <-chan zk.Event, err error, servers any) (*zk.Conn, <-chan zk.Event) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(c.Close)
	deadline := time.After(30 * time.Second)
	for c.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-deadline:
			tb.Fatalf("no session with %v after 30s (state %v)", servers, c.State())
		}
	}
	return c, events
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rawClient speaks the protocol by hand, for malformed and edge-case input.
type rawClient struct {
	tb testing.TB
	nc net.Conn
}

func dialRaw(tb testing.TB, addr string) *rawClient {
	tb.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	tb.Cleanup(func() { _ = nc.Close() })
	return &rawClient{tb: tb, nc: nc}
}

func (r *rawClient) writeRaw(b []byte) {
	r.tb.Helper()
	_ = r.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.nc.Write(b); err != nil {
		r.tb.Fatalf("write: %v", err)
	}
}

// frame encodes one length-prefixed frame built by fill.
func frame(fill func(e *wire.Encoder)) []byte {
	var e wire.Encoder
	at := e.BeginFrame()
	fill(&e)
	e.EndFrame(at)
	return append([]byte(nil), e.Bytes()...)
}

func (r *rawClient) handshake(timeoutMs int32, sessionID int64, passwd []byte) wire.ConnectResponse {
	r.tb.Helper()
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	r.writeRaw(frame(func(e *wire.Encoder) {
		(&wire.ConnectRequest{Timeout: timeoutMs, SessionID: sessionID, Passwd: passwd}).Encode(e)
	}))
	body := r.readFrame()
	var resp wire.ConnectResponse
	d := wire.NewDecoder(body)
	resp.Decode(d)
	if d.Err() != nil {
		r.tb.Fatalf("decode connect response: %v", d.Err())
	}
	return resp
}

func (r *rawClient) send(xid int32, op wire.OpCode, body encodable) {
	r.tb.Helper()
	r.writeRaw(frame(func(e *wire.Encoder) {
		(&wire.RequestHeader{Xid: xid, Type: op}).Encode(e)
		if body != nil {
			body.Encode(e)
		}
	}))
}

// readFrame returns the next frame's body, failing the test on error.
func (r *rawClient) readFrame() []byte {
	r.tb.Helper()
	b, err := r.tryReadFrame(10 * time.Second)
	if err != nil {
		r.tb.Fatalf("read frame: %v", err)
	}
	return b
}

func (r *rawClient) tryReadFrame(within time.Duration) ([]byte, error) {
	_ = r.nc.SetReadDeadline(time.Now().Add(within))
	var hdr [4]byte
	if _, err := io.ReadFull(r.nc, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	body := make([]byte, n)
	_, err := io.ReadFull(r.nc, body)
	return body, err
}

// reply reads the next reply header and returns it with a decoder over the rest.
func (r *rawClient) reply() (wire.ReplyHeader, *wire.Decoder) {
	r.tb.Helper()
	d := wire.NewDecoder(r.readFrame())
	var h wire.ReplyHeader
	h.Decode(d)
	if d.Err() != nil {
		r.tb.Fatalf("decode reply header: %v", d.Err())
	}
	return h, d
}

// expectClosed waits for the server to close the connection.
func (r *rawClient) expectClosed() {
	r.tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_, err := r.tryReadFrame(time.Until(deadline))
		if err == nil {
			continue // drain anything queued before the close
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			break
		}
		return
	}
	r.tb.Fatalf("connection still open after 10s")
}

// settleGoroutines waits until the goroutine count falls back to at most base.
func settleGoroutines(tb testing.TB, base int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			tb.Fatalf("goroutines: %d > %d after 10s\n%s", runtime.NumGoroutine(), base, buf[:n])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
