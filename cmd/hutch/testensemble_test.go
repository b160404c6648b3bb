package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// ensembleControls is a running hutch test-ensemble: its connect string's
// parts and its controls.
type ensembleControls struct {
	t     *testing.T
	addrs []string
	url   string
}

// startTestEnsemble runs hutch test-ensemble in the test process with
// args and reads the two lines it announces.
func startTestEnsemble(t *testing.T, args ...string) *ensembleControls {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- runTestEnsemble(ctx, args, pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		go io.Copy(io.Discard, pr)
		if err := <-done; err != nil {
			t.Errorf("test-ensemble: %v", err)
		}
	})
	lines := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		var got []string
		for len(got) < 2 && sc.Scan() {
			got = append(got, sc.Text())
		}
		lines <- got
	}()
	select {
	case got := <-lines:
		if len(got) != 2 || !strings.HasPrefix(got[1], "test-controls http://127.0.0.1:") {
			t.Fatalf("announced %q", got)
		}
		return &ensembleControls{t: t, addrs: strings.Split(got[0], ","), url: strings.TrimPrefix(got[1], "test-controls ")}
	case <-time.After(60 * time.Second):
		t.Fatal("test-ensemble announced nothing in 60s")
	}
	return nil
}

// call sends a control and decodes its JSON answer, whatever the status.
func (e *ensembleControls) call(method, target string) (int, map[string]any) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+target, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		e.t.Fatalf("%s %s: %s is not JSON: %v", method, target, resp.Status, err)
	}
	return resp.StatusCode, body
}

// ok sends a control that must succeed.
func (e *ensembleControls) ok(method, target string) map[string]any {
	e.t.Helper()
	status, body := e.call(method, target)
	if status != http.StatusOK {
		e.t.Fatalf("%s %s: %d %v", method, target, status, body)
	}
	return body
}

func (e *ensembleControls) leader() int {
	e.t.Helper()
	return int(e.ok("GET", "/leader")["leader"].(float64))
}

// TestTestEnsemble: hutch test-ensemble announces a connect string of
// three members and its controls; members are numbered in connect-string
// order (the member /sessions names is the server the client is on);
// killing the leader elects another, which /leader reports; a
// partitioned leader is not reported; a client's link slowed by /link is
// slow until restored; /expire expires through the leader; unknown
// paths, wrong methods and bad members answer JSON errors.
func TestTestEnsemble(t *testing.T) {
	e := startTestEnsemble(t, "--nodes", "3", "--listen", "127.0.0.1:0", "--election-timeout", "500ms")
	if len(e.addrs) != 3 {
		t.Fatalf("connect string %v", e.addrs)
	}
	lead := e.leader()
	if got := e.ok("GET", "/leader")["address"]; got != e.addrs[lead-1] {
		t.Fatalf("leader %d at %v, the connect string's part %d is %s", lead, got, lead, e.addrs[lead-1])
	}

	c, events, err := zk.Connect(e.addrs, 10*time.Second, zk.WithLogger(discardLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, "a session", func() bool { return c.State() == zk.StateHasSession })
	id := c.SessionID()
	member := func() int {
		for _, s := range e.ok("GET", "/sessions")["sessions"].([]any) {
			if s := s.(map[string]any); int64(s["id"].(float64)) == id {
				if eph, ok := s["ephemerals"].([]any); !ok || eph == nil {
					t.Fatalf("session %v: ephemerals not a list", s)
				}
				n, _ := s["member"].(float64)
				return int(n)
			}
		}
		return 0
	}
	waitFor(t, "the session on a member", func() bool { return member() > 0 })
	if n := member(); e.addrs[n-1] != c.Server() {
		t.Fatalf("/sessions puts the client on member %d (%s); it is connected to %s", n, e.addrs[n-1], c.Server())
	}

	e.ok("POST", "/kill?member="+itoa(lead))
	next := e.leader()
	if next == lead {
		t.Fatalf("/leader = %d, the killed member", lead)
	}
	retry(t, "a write after the failover", func() error {
		_, err := c.Create("/after-kill", nil, 0, zk.WorldACL(zk.PermAll))
		if err == zk.ErrNodeExists {
			return nil
		}
		return err
	})
	e.ok("POST", "/restart?member="+itoa(lead))

	e.ok("POST", "/partition?group="+itoa(next))
	if again := e.leader(); again == next {
		t.Fatalf("/leader = %d, the member just cut off", next)
	}
	e.ok("POST", "/heal")

	retry(t, "a read", func() error { _, _, err := c.Get("/after-kill"); return err })
	e.ok("POST", "/link?session="+itoa64(id)+"&delay=150ms")
	start := time.Now()
	retry(t, "a slow read", func() error { _, _, err := c.Get("/after-kill"); return err })
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("a read over a link delayed 150ms each way took %v", took)
	}
	e.ok("POST", "/link?session="+itoa64(id))

	for _, tc := range []struct {
		method, target string
		status         int
		err            string
	}{
		{"GET", "/kill?member=1", http.StatusMethodNotAllowed, "/kill takes POST, not GET"},
		{"POST", "/nope", http.StatusNotFound, "no control /nope (GET / lists them)"},
		{"POST", "/kill?member=9", http.StatusNotFound, "member 9: no such member (members are numbered 1 to 3)"},
		{"POST", "/kill", http.StatusBadRequest, `member must be a member number, from 1 in connect-string order (got "")`},
		{"POST", "/advance?by=1s", http.StatusConflict, "the clock is real: only a fake clock can be moved (hutchtest.FakeClock, hutch --clock fake)"},
		{"POST", "/link?member=1&loss=1", http.StatusBadRequest, "loss must be a fraction from 0 up to (not including) 1"},
	} {
		status, body := e.call(tc.method, tc.target)
		if status != tc.status || body["error"] != tc.err {
			t.Errorf("%s %s: %d %v, want %d %q", tc.method, tc.target, status, body, tc.status, tc.err)
		}
	}

	e.ok("POST", "/expire?session="+itoa64(id))
	for deadline := time.After(30 * time.Second); ; {
		select {
		case ev := <-events:
			if ev.State == zk.StateExpired {
				return
			}
		case <-deadline:
			t.Fatal("the client was not told its session expired")
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// retry calls f until it succeeds, failing after 30s.
func retry(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}
