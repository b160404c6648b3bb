package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hutchzk/hutch/clock"
	"github.com/hutchzk/hutch/internal/httpserve"
	"github.com/hutchzk/hutch/server"
)

// testControlsHelp is --test-controls' line in --help.
const testControlsHelp = "FOR TESTS ONLY: serve HTTP controls here (loopback only, e.g. 127.0.0.1:0; refused on any other address; off by default): " +
	"POST /expire?session=ID, /drop[?session=ID], /advance?by=30s (with --clock fake), /pause, /resume; GET /sessions. " +
	"The bound URL is printed as the second line of standard output"

// clockHelp is --clock's line in --help, here and in hutch test-ensemble.
const clockHelp = "FOR TESTS ONLY (needs the test controls): real, or fake: a clock that only POST /advance moves, so sessions time out and TTL nodes age only when told; " +
	"fake-keep-connected: the same, but /advance counts a connected client's pings, so only sessions with no client connected expire"

// clockMode is a --clock value: whether the server runs on a fake clock,
// and whether /advance keeps connected clients' sessions by default.
type clockMode struct{ fake, keepConnected bool }

func parseClock(v string) (clockMode, error) {
	switch v {
	case "", "real":
		return clockMode{}, nil
	case "fake":
		return clockMode{fake: true}, nil
	case "fake-keep-connected":
		return clockMode{fake: true, keepConnected: true}, nil
	}
	return clockMode{}, fmt.Errorf("--clock: %q is not real, fake or fake-keep-connected", v)
}

// testControls is a test-control listener, bound before the server
// starts so that a bad address fails the start.
type testControls struct {
	ln  net.Listener
	srv *http.Server
}

// listenControls checks addr (loopback only: the controls have no
// authentication) and binds it; flag names it in errors.
func listenControls(flag, addr string) (*testControls, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, errors.New(flag + ": refusing " + addr + ": the controls expire sessions and stop the server without authentication, so they listen on a loopback address only (127.0.0.1:PORT, [::1]:PORT)")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return &testControls{ln: ln}, nil
}

// prepareTestControls checks and binds a single server's controls, and
// puts the server on a fake clock if the clock mode says so; nil when
// addr is empty.
func prepareTestControls(addr string, mode clockMode, cfg *server.Config) (*testControls, error) {
	if addr == "" {
		if mode.fake {
			return nil, errors.New("--clock fake needs --test-controls: nothing else can move the clock")
		}
		return nil, nil
	}
	if cfg.Raft != nil && len(cfg.Raft.Peers) > 1 {
		return nil, errors.New("--test-controls: a single node only; hutch test-ensemble runs an ensemble with its controls")
	}
	t, err := listenControls("--test-controls", addr)
	if err != nil {
		return nil, err
	}
	if mode.fake {
		cfg.Clock = clock.NewFake(time.Now())
	}
	return t, nil
}

// keepConnectedByDefault makes /advance keep connected clients' sessions
// unless the request says keep_connected itself.
func keepConnectedByDefault(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/advance" && !r.URL.Query().Has("keep_connected") {
			q := r.URL.Query()
			q.Set("keep_connected", "true")
			r.URL.RawQuery = q.Encode()
		}
		h.ServeHTTP(w, r)
	})
}

// serve answers the controls with h until close.
func (t *testControls) serve(h http.Handler) {
	t.srv = httpserve.Serve(t.ln, h, httpserve.Limits{}, nil)
}

// url is where the controls answer.
func (t *testControls) url() string { return "http://" + t.ln.Addr().String() }

func (t *testControls) close() {
	if t.srv == nil {
		_ = t.ln.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = t.srv.Shutdown(ctx)
}

// announce writes the machine-readable lines a test harness reads from
// standard output: the client address the server bound, then the test
// controls' URL and the live view's when they are on.
func announce(w io.Writer, srv *server.Server, controls *testControls) {
	fmt.Fprintln(w, srv.Addr().String())
	if controls != nil {
		fmt.Fprintln(w, "test-controls", controls.url())
	}
	if ui := srv.UIAddr(); ui != nil {
		fmt.Fprintln(w, "ui", "http://"+ui.String()+"/ui/")
	}
}
