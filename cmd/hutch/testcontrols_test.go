package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hutchzk/hutch/server"
)

// TestTestControlsLoopbackOnly: the controls are off by default and
// refused on any address but a loopback one, before anything starts.
func TestTestControlsLoopbackOnly(t *testing.T) {
	if _, f := newFlags(); f.testControls != "" {
		t.Fatalf("test controls on by default: %q", f.testControls)
	}
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:9000", "example.com:9000", "[::]:0"} {
		err := run([]string{"--listen", "127.0.0.1:0", "--test-controls", addr})
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("--test-controls %s: %v", addr, err)
		}
	}
}

// TestAnnounceAndControls: the first line of standard output is the
// client address bound, the second the controls' URL, which answers.
func TestAnnounceAndControls(t *testing.T) {
	cfg := server.Config{ListenAddr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)}
	controls, err := prepareTestControls("127.0.0.1:0", clockMode{fake: true}, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(cfg)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	controls.serve(srv.ControlHandler())
	defer controls.close()
	var out bytes.Buffer
	announce(&out, srv, controls)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || lines[0] != srv.Addr().String() || lines[1] != "test-controls "+controls.url() {
		t.Fatalf("announced %q", lines)
	}
	resp, err := http.Post(controls.url()+"/advance?by=1h", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"advanced":"1h0m0s"`) {
		t.Fatalf("advance: %d %s", resp.StatusCode, body)
	}
	resp, err = http.Post(controls.url()+"/expire?session=0x99", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("expire of an unknown session: %d", resp.StatusCode)
	}
}

// TestTestControlsClock: the controls leave the clock real unless --clock
// says fake (/advance is then refused, 409, in JSON); --clock fake
// without the controls is refused, nothing else being able to move it;
// fake-keep-connected makes /advance keep connected sessions by default.
func TestTestControlsClock(t *testing.T) {
	if err := run([]string{"--listen", "127.0.0.1:0", "--clock", "fake"}); err == nil || !strings.Contains(err.Error(), "needs --test-controls") {
		t.Errorf("--clock fake alone: %v", err)
	}
	if err := run([]string{"--listen", "127.0.0.1:0", "--clock", "slow"}); err == nil || !strings.Contains(err.Error(), "--clock") {
		t.Errorf("--clock slow: %v", err)
	}
	cfg := server.Config{ListenAddr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)}
	controls, err := prepareTestControls("127.0.0.1:0", clockMode{}, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Clock != nil {
		t.Fatalf("the controls put the server on %T", cfg.Clock)
	}
	srv := server.New(cfg)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	controls.serve(srv.ControlHandler())
	defer controls.close()
	resp, err := http.Post(controls.url()+"/advance?by=1h", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), `"error":"the clock is real`) {
		t.Fatalf("advance on the real clock: %d %s", resp.StatusCode, body)
	}

	var seen string
	h := keepConnectedByDefault(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { seen = r.URL.RawQuery }))
	for target, want := range map[string]string{
		"/advance?by=1h":                      "by=1h&keep_connected=true",
		"/advance?by=1h&keep_connected=false": "by=1h&keep_connected=false",
		"/sessions":                           "",
	} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", target, nil))
		if seen != want {
			t.Errorf("%s reached the controls as %q, want %q", target, seen, want)
		}
	}
}
