package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
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
	controls, err := prepareTestControls("127.0.0.1:0", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(cfg)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	controls.serve(srv)
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
