package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/browsertest"
	"github.com/hutchzk/hutch/monitor/prometheus"
)

// closedWithin reports whether the server closes nc within d: a read
// that ends in EOF or a reset, not in the read deadline.
func closedWithin(nc net.Conn, d time.Duration) bool {
	_ = nc.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, nc)
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// keepAliveGet sends one GET on nc, keeping the connection, and reads
// the answer.
func keepAliveGet(t *testing.T, nc net.Conn, path string) {
	t.Helper()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(nc, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, nc.RemoteAddr())
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_ = nc.SetDeadline(time.Time{})
}

// TestHTTPPortsBounded: the admin, metrics and live-view ports close idle
// and silent connections and hold no more than their cap, and the client
// port keeps serving meanwhile. Issue 26 saw 19,988 idle keep-alive
// connections to the admin port exhaust the process's descriptors, after
// which the client port refused clients.
func TestHTTPPortsBounded(t *testing.T) {
	const maxConns = 4
	s := startServer(t, Config{AdminAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", MetricsProvider: prometheus.Handler, UIAddr: "127.0.0.1:0",
		HTTPLimits: HTTPLimits{IdleTimeout: 300 * time.Millisecond, MaxConns: maxConns}})
	ports := []struct {
		name, addr, path string
	}{
		{"admin", s.AdminAddr().String(), "/commands/ruok"},
		{"metrics", s.MetricsAddr().String(), "/metrics"},
		{"ui", s.UIAddr().String(), "/ui/"},
	}
	for _, p := range ports {
		t.Run(p.name, func(t *testing.T) {
			var held []net.Conn
			for range maxConns {
				nc, err := net.Dial("tcp", p.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				keepAliveGet(t, nc, p.path)
				held = append(held, nc)
			}
			// The port resets the connection past its cap: the dial
			// itself may see it.
			if extra, err := net.Dial("tcp", p.addr); err == nil {
				defer extra.Close()
				if !closedWithin(extra, 5*time.Second) {
					t.Errorf("connection %d stayed open on a port capped at %d", maxConns+1, maxConns)
				}
			}
			for i, nc := range held {
				if !closedWithin(nc, 10*time.Second) {
					t.Errorf("idle keep-alive connection %d still open 10s past a 300ms idle timeout", i)
				}
			}
			silent, err := net.Dial("tcp", p.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer silent.Close()
			if !closedWithin(silent, 10*time.Second) {
				t.Error("a connection that never sent a request still open 10s past the timeout")
			}
		})
	}
	c, _ := dial(t, s.Addr().String(), 10*time.Second)
	if _, err := c.Create("/still-serving", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("client port after the HTTP ports were flooded: %v", err)
	}
}

// TestAdminResetsNeedToken: the admin commands that change the server
// (connection_stat_reset, stat_reset) need the admin token over HTTP; the
// read-only ones do not.
func TestAdminResetsNeedToken(t *testing.T) {
	const token = "admin-token-0123456789"
	withToken := startServer(t, Config{AdminAddr: "127.0.0.1:0", AdminToken: token})
	noToken := startServer(t, Config{AdminAddr: "127.0.0.1:0"})
	tests := []struct {
		name, cmd, auth string
		s               *Server
		want            int
	}{
		{"read-only without a token", "stat", "", noToken, http.StatusOK},
		{"reset with no token configured", "crst", "Bearer " + token, noToken, http.StatusForbidden},
		{"reset without the token", "srst", "", withToken, http.StatusUnauthorized},
		{"reset with a wrong token", "stat_reset", "Bearer nope", withToken, http.StatusUnauthorized},
		{"reset with the token", "connection_stat_reset", "Bearer " + token, withToken, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, "http://"+tc.s.AdminAddr().String()+"/commands/"+tc.cmd, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if tc.want == http.StatusOK && !strings.Contains(string(body), `"error": null`) {
				t.Fatalf("answer %s", body)
			}
		})
	}
}

// TestControlsRefuseCrossSitePage: a page of another origin in headless
// Chromium POSTs /pause to the test controls (a no-cors fetch, which a
// browser sends without a preflight); the server must not pause. Issue 26
// saw it pause. A program's POST still works.
func TestControlsRefuseCrossSitePage(t *testing.T) {
	s := startServer(t, Config{})
	controls := httptest.NewServer(s.ControlHandler())
	defer controls.Close()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!doctype html><title>elsewhere</title>")
	}))
	defer page.Close()

	ctx := browsertest.Start(t)
	browsertest.Step(t, ctx, "open the other site's page", chromedp.Navigate(page.URL))
	for _, path := range []string{"/pause", "/advance?by=1h", "/drop"} {
		sent := browsertest.Eval[string](t, ctx, fmt.Sprintf(
			`fetch(%q, {method: "POST", mode: "no-cors"}).then(() => "sent", e => "failed: " + e)`, controls.URL+path))
		if sent != "sent" {
			t.Fatalf("the page's fetch of %s did not go out: %s", path, sent)
		}
	}
	if s.Paused() {
		s.Resume()
		t.Fatal("a page from another origin paused the server through the test controls")
	}

	resp, err := http.Post(controls.URL+"/pause", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !s.Paused() {
		t.Fatalf("a program's POST /pause: status %d, paused %v", resp.StatusCode, s.Paused())
	}
	s.Resume()
}
