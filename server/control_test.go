package server

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/clock"
	"github.com/hutchzk/hutch/monitor/prometheus"
	"github.com/hutchzk/hutch/wire"
)

// TestLifecycleInAnyOrder: every method may be called in any state:
// Addr before Start, Close before Start and twice, Start twice or after
// Close, and none panics.
func TestLifecycleInAnyOrder(t *testing.T) {
	s := New(Config{ListenAddr: "127.0.0.1:0", Logger: testLogger()})
	if s.Addr() != nil || s.AdminAddr() != nil || s.SecureAddr() != nil {
		t.Fatal("addresses before Start")
	}
	select {
	case <-s.Ready():
		t.Fatal("ready before Start")
	default:
	}
	if err := s.ServeConn(nopConn()); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("ServeConn before Start: %v", err)
	}
	if err := s.ExpireSession(1); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("ExpireSession before Start: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close before Start: %v", err)
	}
	if err := s.Start(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	s = New(Config{ListenAddr: "127.0.0.1:0", Logger: testLogger()})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	<-s.Ready()
	if err := s.Start(); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start: %v", err)
	}
	if s.Addr() == nil {
		t.Fatal("no address once started")
	}
	for range 2 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if err := s.ServeConn(nopConn()); !errors.Is(err, ErrClosed) {
		t.Fatalf("ServeConn after Close: %v", err)
	}
	if _, err := s.DialMemory(); err == nil {
		t.Fatal("DialMemory after Close succeeded")
	}
}

// nopConn is a connection nobody serves.
func nopConn() net.Conn {
	a, _ := newPipe(pipeClientAddr, pipeServerAddr)
	return a
}

// TestFailedStartReleasesEverything: a Start that fails on its last port
// says which, closes what it had opened (no descriptor or goroutine
// left), and may be retried once the port is free.
func TestFailedStartReleasesEverything(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)
	s := New(Config{ListenAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", MetricsAddr: taken.Addr().String(), MetricsProvider: prometheus.Handler, Logger: testLogger()})
	err = s.Start()
	if err == nil || !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "metrics listen "+taken.Addr().String()) {
		t.Fatalf("start with the metrics port taken: %v", err)
	}
	settleGoroutines(t, goroutines)
	if n := openFDs(t); n > fds {
		t.Fatalf("%d descriptors open after the failed start, %d before", n, fds)
	}
	_ = taken.Close()
	if err := s.Start(); err != nil {
		t.Fatalf("start once the port is free: %v", err)
	}
	_ = s.Close()
}

func openFDs(tb testing.TB) int {
	tb.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Skipf("no /proc: %v", err)
	}
	return len(entries)
}

// TestNoClientPortServesInMemory: a server with no client port serves
// go-zookeeper through DialMemory, and its clients count as 127.0.0.1 for
// ip ACLs.
func TestNoClientPortServesInMemory(t *testing.T) {
	s := startServer(t, Config{NoClientPort: true})
	if a := s.Addr(); a == nil || a.Network() != "memory" {
		t.Fatalf("Addr %v", a)
	}
	c, _ := dialVia(t, "127.0.0.1:0", 10*time.Second, func(string, string, time.Duration) (net.Conn, error) { return s.DialMemory() })
	if _, err := c.Create("/local", nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get("/local"); err != nil {
		t.Fatalf("read under an ip:127.0.0.1 ACL: %v", err)
	}
}

// TestAdvanceClockIsNotAStall: time moved on purpose expires a session
// whose timeout it passes, even when the expiry loop has seen the whole
// move at once; a stall of the same length (Jump) would have been given
// back (TestExpiryGivesBackAStall).
func TestAdvanceClockIsNotAStall(t *testing.T) {
	const tick = 100 * time.Millisecond
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := startServer(t, Config{TickTime: tick, Clock: fake})
	r := dialRaw(t, s.Addr().String())
	resp := r.handshake(1000, 0, nil)
	alive := func() bool { _, _, ok := s.db.Session(resp.SessionID); return ok }
	waitLoops := func() {
		if !fake.WaitPending(2, 10*time.Second) {
			t.Fatal("the server's loops are not waiting on the clock")
		}
	}
	waitLoops()
	if err := s.AdvanceClock(900 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitLoops() // the expiry loop woke 800ms "late" and went back to sleep
	if !alive() {
		t.Fatal("session closed before its timeout")
	}
	if err := s.AdvanceClock(300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if alive() {
		t.Fatal("session alive when AdvanceClock returned past its timeout: the move was taken for a stall")
	}
	r.expectClosed()
	if err := New(Config{}).AdvanceClock(time.Second); !errors.Is(err, ErrRealClock) {
		t.Fatalf("AdvanceClock on the real clock: %v", err)
	}
}

// TestControlErrors: the controls say what is missing.
func TestControlErrors(t *testing.T) {
	s := startServer(t, Config{})
	if err := s.ExpireSession(42); !errors.Is(err, ErrNoSession) {
		t.Fatalf("expire unknown session: %v", err)
	}
	if err := s.DropConnection(42); !errors.Is(err, ErrNoConnection) {
		t.Fatalf("drop unknown session: %v", err)
	}
	if !s.Pause() || s.Pause() || !s.Paused() || !s.Resume() || s.Resume() {
		t.Fatal("Pause/Resume do not report their change")
	}
	if err := s.CreateNode("/eph", nil, nil, wire.ModeEphemeral, 0); err == nil {
		t.Fatal("a server-owned ephemeral was created")
	}
}

// TestControlHTTPAnswersJSON: every answer of the HTTP controls is a JSON
// object, an unknown path's (404) and a wrong method's (405) too; a
// session without ephemerals lists [] rather than null; an error says
// what failed once, without a package prefix in the middle.
func TestControlHTTPAnswersJSON(t *testing.T) {
	s := startServer(t, Config{})
	c, _, err := zk.Connect([]string{"127.0.0.1:2181"}, 10*time.Second, zk.WithLogger(discardLogger{}),
		zk.WithDialer(func(string, string, time.Duration) (net.Conn, error) { return s.DialMemory() }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, 10*time.Second, "a session", func() bool { return c.State() == zk.StateHasSession })
	h := s.ControlHandler()
	ask := func(method, target string) (int, map[string]any, http.Header) {
		t.Helper()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, target, nil)
		req.Host = "127.0.0.1:2181"
		if strings.HasPrefix(target, "//") { // a foreign Host, refused
			req.Host, req.URL.Path = strings.TrimPrefix(target, "//"), "/"
		}
		h.ServeHTTP(rec, req)
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("%s %s: %d %q is not JSON (%v)", method, target, rec.Code, rec.Body.String(), err)
		}
		return rec.Code, body, rec.Header()
	}
	for _, tc := range []struct {
		method, target string
		status         int
		err            string
	}{
		{"POST", "/nothing", http.StatusNotFound, "no control /nothing (GET / lists them)"},
		{"GET", "/expire?session=1", http.StatusMethodNotAllowed, "/expire takes POST, not GET"},
		{"POST", "/sessions", http.StatusMethodNotAllowed, "/sessions takes GET, not POST"},
		{"POST", "/expire?session=0x2a", http.StatusNotFound, "expire session 0x2a: no such session"},
		{"POST", "/expire?session=x", http.StatusBadRequest, `session must be a session id, decimal or 0x hexadecimal (got "x")`},
		{"POST", "/advance?by=1s", http.StatusConflict, ErrRealClock.Error()},
		{"GET", "//evil.example", http.StatusForbidden, "refused: the Host header must name a loopback address (this port serves programs on this machine, not web pages)"},
	} {
		status, body, header := ask(tc.method, tc.target)
		if status != tc.status || body["error"] != tc.err {
			t.Errorf("%s %s: %d %v, want %d %q", tc.method, tc.target, status, body, tc.status, tc.err)
		}
		if status == http.StatusMethodNotAllowed && header.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", tc.method, tc.target)
		}
	}
	_, body, _ := ask("GET", "/sessions")
	sessions, _ := body["sessions"].([]any)
	if len(sessions) != 1 {
		t.Fatalf("sessions: %v", body)
	}
	if eph, ok := sessions[0].(map[string]any)["ephemerals"].([]any); !ok || len(eph) != 0 {
		t.Fatalf("a session without ephemerals lists %v", sessions[0])
	}
	if _, body, _ := ask("GET", "/"); len(body["controls"].([]any)) != 6 {
		t.Fatalf("index: %v", body)
	}
}
