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
	"POST /expire?session=ID, /drop[?session=ID], /advance?by=30s, /pause, /resume; GET /sessions. " +
	"The server then runs on a fake clock that only /advance moves: sessions never time out and TTL nodes never age by themselves. " +
	"The bound URL is printed as the second line of standard output"

// testControls is the --test-controls listener, bound before the server
// starts so that a bad address fails the start.
type testControls struct {
	ln  net.Listener
	srv *http.Server
}

// prepareTestControls checks addr (loopback only), binds it and puts the
// server on a fake clock; nil when addr is empty.
func prepareTestControls(addr string, cfg *server.Config) (*testControls, error) {
	if addr == "" {
		return nil, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--test-controls: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, errors.New("--test-controls: refusing " + addr + ": the controls expire sessions and stop the server without authentication, so they listen on a loopback address only (127.0.0.1:PORT, [::1]:PORT)")
	}
	if cfg.Raft != nil && len(cfg.Raft.Peers) > 1 {
		return nil, errors.New("--test-controls: a single node only (an ensemble member's clock and expiry are the leader's)")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--test-controls: %w", err)
	}
	cfg.Clock = clock.NewFake(time.Now())
	return &testControls{ln: ln}, nil
}

// serve answers the controls for srv until close.
func (t *testControls) serve(srv *server.Server) {
	t.srv = httpserve.Serve(t.ln, srv.ControlHandler(), httpserve.Limits{}, nil)
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
