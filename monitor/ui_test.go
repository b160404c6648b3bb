package monitor

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/trace"
)

// TestUIGuard: the view is read-only, answers a loopback address's
// requests only for a loopback host, and on any other address only with
// the admin token (bearer or basic), refusing outright without one; every
// answer, refusals too, carries the Content-Security-Policy.
func TestUIGuard(t *testing.T) {
	const token = "s3cret-token"
	tests := []struct {
		name, listen, token, method, host, auth string
		status                                  int
	}{
		{"loopback read", "127.0.0.1:0", "", "GET", "127.0.0.1:8080", "", 200},
		{"localhost read", "localhost:0", "", "GET", "localhost:8080", "", 200},
		{"ipv6 loopback read", "[::1]:0", "", "HEAD", "[::1]:8080", "", 200},
		{"loopback write refused", "127.0.0.1:0", "", "POST", "127.0.0.1:8080", "", 405},
		{"loopback delete refused", "127.0.0.1:0", "", "DELETE", "127.0.0.1:8080", "", 405},
		{"rebound name refused", "127.0.0.1:0", "", "GET", "attacker.example:8080", "", 403},
		{"open address without a token", ":0", "", "GET", "10.0.0.5:8080", "", 403},
		{"open address, no credentials", ":0", token, "GET", "10.0.0.5:8080", "", 401},
		{"open address, wrong bearer", ":0", token, "GET", "10.0.0.5:8080", "Bearer nope", 401},
		{"open address, bearer", "0.0.0.0:0", token, "GET", "10.0.0.5:8080", "Bearer " + token, 200},
		{"open address, basic", "0.0.0.0:0", token, "GET", "10.0.0.5:8080", "basic", 200},
		{"open address, token still read-only", "0.0.0.0:0", token, "PUT", "10.0.0.5:8080", "Bearer " + token, 405},
	}
	for _, tc := range tests {
		m := newMonitor(t, standalone(), Config{AdminToken: tc.token})
		h := m.UIHandler(tc.listen)
		for _, path := range []string{"/ui/tree", "/ui/static/app.js", "/trace?rate=1", "/debug/pprof/goroutine?debug=1"} {
			req := httptest.NewRequest(tc.method, path, nil)
			req.Host = tc.host
			switch tc.auth {
			case "":
			case "basic":
				req.SetBasicAuth("anyone", token)
			default:
				req.Header.Set("Authorization", tc.auth)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond) // ends the trace's stream
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req.WithContext(ctx))
			cancel()
			if rec.Code != tc.status {
				t.Errorf("%s: %s %s = %d, want %d: %s", tc.name, tc.method, path, rec.Code, tc.status, rec.Body)
			}
			if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") {
				t.Errorf("%s: %s: CSP %q", tc.name, path, csp)
			}
			if tc.status == 401 && !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("%s: a 401 without a basic challenge", tc.name)
			}
		}
	}
}

// TestAdminServesUI: the admin port serves the view and the profiles beside the commands,
// guarded by the admin port's own address.
func TestAdminServesUI(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		status int
	}{{"127.0.0.1:8080", 200}, {"0.0.0.0:8080", 403}} {
		h := newMonitor(t, standalone(), Config{AdminAddr: tc.addr}).AdminHandler()
		for path, want := range map[string]string{"/ui/sessions": "sessions", "/debug/pprof/goroutine?debug=1": "goroutine profile: total"} {
			req := httptest.NewRequest("GET", path, nil)
			req.Host = "127.0.0.1:8080"
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Errorf("admin on %s: %s = %d, want %d", tc.addr, path, rec.Code, tc.status)
			}
			if rec.Code == 200 && !strings.Contains(rec.Body.String(), want) {
				t.Errorf("admin on %s: %s does not say %q", tc.addr, path, want)
			}
		}
	}
}

// TestUIPanelsRender: every panel renders the fixture, leader and
// follower, whole and as the fragment its script redraws.
func TestUIPanelsRender(t *testing.T) {
	for _, mode := range []membership.State{Standalone, Leader, Follower} {
		h := newMonitor(t, ensemble(mode), Config{}).UIHandler("127.0.0.1:0")
		for _, p := range panels {
			for _, q := range []string{"", "?fragment=1", "?session=0x100000000000001", "?page=99"} {
				req := httptest.NewRequest("GET", "/ui/"+p.name+q, nil)
				req.Host = "localhost"
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				body := rec.Body.String()
				whole := !strings.Contains(q, "fragment")
				if rec.Code != 200 || strings.Contains(body, "<html") != whole || !strings.Contains(body, "data-now=") {
					t.Errorf("%s /ui/%s%s: %d\n%s", mode, p.name, q, rec.Code, body)
				}
			}
		}
	}
	// What the fixture holds shows: its sessions, the follower's note.
	h := newMonitor(t, ensemble(Follower), Config{}).UIHandler("127.0.0.1:0")
	req := httptest.NewRequest("GET", "/ui/sessions", nil)
	req.Host = "127.0.0.1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	for _, want := range []string{"0x100000000000001", "0x100000000000003", "This node is a follower", "node 2"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("follower's sessions panel lacks %q", want)
		}
	}
}

// traceLines streams /trace?query from a live test server and returns
// its lines as they come, decoded.
func traceLines(t *testing.T, m *Monitor, query string) (<-chan map[string]any, func()) {
	t.Helper()
	srv := httptest.NewServer(m.UIHandler("127.0.0.1:0"))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/trace?"+query, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "application/x-ndjson") {
		t.Fatalf("/trace: %d %s", resp.StatusCode, ct)
	}
	lines := make(chan map[string]any, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var v map[string]any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Errorf("not JSON: %q", sc.Text())
				return
			}
			lines <- v
		}
	}()
	stop := func() {
		cancel()
		resp.Body.Close()
		srv.Close()
	}
	t.Cleanup(stop)
	return lines, stop
}

// waitViewers waits until the monitor's trace hub has n viewers.
func waitViewers(t *testing.T, m *Monitor, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		m.hub.mu.Lock()
		got := len(m.hub.viewers)
		m.hub.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d viewers, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// next reads a line or fails after a while.
func next(t *testing.T, lines <-chan map[string]any) map[string]any {
	t.Helper()
	select {
	case v, ok := <-lines:
		if !ok {
			t.Fatal("stream ended")
		}
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("no line within 5s")
	}
	return nil
}

// TestTraceStream: a viewer's stream keeps what its filter keeps, in
// order; two viewers share one subscription to the server's trace, which
// ends with the last of them.
func TestTraceStream(t *testing.T) {
	src := standalone()
	m := newMonitor(t, src, Config{})
	lines, stop := traceLines(t, m, "path=/app/&session=0x7")
	all, stopAll := traceLines(t, m, "")
	waitViewers(t, m, 2)
	events := []trace.Event{
		{Kind: trace.TxnApplied, Op: "create", Path: "/app/a", Session: 7},
		{Kind: trace.TxnApplied, Op: "create", Path: "/other", Session: 7},
		{Kind: trace.WatchDelivered, Type: "NodeCreated", Path: "/app/a", Session: 8},
		{Kind: trace.TxnApplied, Op: "delete", Path: "/app/a", Session: 7},
	}
	for _, e := range events {
		src.broker.Publish(e)
	}
	for _, want := range []string{"create /app/a", "delete /app/a"} {
		v := next(t, lines)
		if got := v["op"].(string) + " " + v["path"].(string); got != want || v["kind"] != "txn" {
			t.Fatalf("filtered stream: %v, want %s", v, want)
		}
	}
	for i := range events {
		if v := next(t, all); v["path"] != events[i].Path {
			t.Fatalf("whole stream, event %d: %v", i, v)
		}
	}
	stop()
	stopAll()
	waitViewers(t, m, 0)
	m.hub.mu.Lock()
	sub := m.hub.sub
	m.hub.mu.Unlock()
	if sub != nil || src.broker.Active() {
		t.Fatal("the trace subscription outlived its viewers")
	}
}

// rateLimitedViewer is a standalone server's monitor with one trace
// viewer reading at 5 events a second, subscribed.
func rateLimitedViewer(t *testing.T) (*memSource, *Monitor, <-chan map[string]any) {
	t.Helper()
	src := standalone()
	m := newMonitor(t, src, Config{})
	lines, _ := traceLines(t, m, "rate=5")
	waitViewers(t, m, 1)
	return src, m, lines
}

// TestTraceRateLimit: a viewer over its rate gets what the rate allows,
// and is told of every event it lost: what it read and what it was told
// it lost add up to what was published.
func TestTraceRateLimit(t *testing.T) {
	src, m, lines := rateLimitedViewer(t)
	const published = 60
	for i := range published {
		src.broker.Publish(trace.Event{Kind: trace.TxnApplied, Op: "setData", Path: "/x", Zxid: int64(i + 1)})
	}
	var read, dropped int
	var lastZxid float64
	for read+dropped < published {
		v := next(t, lines)
		if v["kind"] == "dropped" {
			dropped += int(v["dropped"].(float64))
			continue
		}
		if z := v["zxid"].(float64); z <= lastZxid {
			t.Fatalf("out of order: zxid %v after %v", z, lastZxid)
		}
		lastZxid = v["zxid"].(float64)
		read++
	}
	if read+dropped != published || read > published/2 || dropped == 0 {
		t.Fatalf("read %d, told of %d dropped, of %d published", read, dropped, published)
	}
	if n := metricValue(t, m, "hutch_trace_dropped_total"); n != float64(dropped) {
		t.Errorf("hutch_trace_dropped_total %v, want %d", n, dropped)
	}
	if n := metricValue(t, m, "hutch_trace_viewers"); n != 1 {
		t.Errorf("hutch_trace_viewers %v, want 1", n)
	}
}

// TestTraceRateOverTime: events published a few at a time, below what a
// viewer's buffer holds between two reads, still reach it no faster than
// its rate (its burst, then so many a second).
func TestTraceRateOverTime(t *testing.T) {
	src, _, lines := rateLimitedViewer(t)
	const published = 60
	start := time.Now()
	pace := time.NewTicker(40 * time.Millisecond)
	defer pace.Stop()
	for i := range published {
		if i%2 == 0 {
			<-pace.C
		}
		src.broker.Publish(trace.Event{Kind: trace.TxnApplied, Op: "setData", Path: "/x", Zxid: int64(i + 1)})
	}
	var read, dropped int
	for read+dropped < published {
		if v := next(t, lines); v["kind"] == "dropped" {
			dropped += int(v["dropped"].(float64))
		} else {
			read++
		}
	}
	// A burst of 5, and 5 a second after it, from the first event to the
	// last one's delivery (a tick after it at most).
	if most := 5 + int(5*time.Since(start).Seconds()) + 1; read > most || dropped == 0 {
		t.Fatalf("read %d (at most %d at rate 5 in %v), told of %d dropped", read, most, time.Since(start), dropped)
	}
}

// TestTraceStartsFrom: /trace starts from the history the server keeps
// at a zxid (hex or decimal), at a time, or with the whole window's
// newest n, ends the history with its count, and refuses what it cannot
// read.
func TestTraceStartsFrom(t *testing.T) {
	src := standalone()
	src.broker.KeepHistory(trace.HistoryLimits{})
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for i := range 10 {
		src.broker.Publish(trace.Event{Kind: trace.TxnApplied, Op: "setData", Path: "/x", Zxid: int64(i + 1), Time: start.Add(time.Duration(i) * time.Second)})
	}
	m := newMonitor(t, src, Config{})
	for _, c := range []struct {
		query string
		zxids []float64
	}{
		{"zxid=7", []float64{7, 8, 9, 10}},
		{"zxid=0x9", []float64{9, 10}},
		{"since=" + url.QueryEscape(start.Add(5*time.Second).Format(time.RFC3339Nano)), []float64{6, 7, 8, 9, 10}},
		{"since=all&last=3", []float64{8, 9, 10}},
		{"since=all", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
	} {
		lines, stop := traceLines(t, m, c.query)
		var got []float64
		for {
			v := next(t, lines)
			if v["kind"] == "history" {
				if n := v["events"].(float64); int(n) != len(got) {
					t.Errorf("%s: the history line counts %v events, %d came", c.query, n, len(got))
				}
				break
			}
			got = append(got, v["zxid"].(float64))
		}
		stop()
		if !slices.Equal(got, c.zxids) {
			t.Errorf("%s: zxids %v, want %v", c.query, got, c.zxids)
		}
	}
	h := m.UIHandler("127.0.0.1:0")
	for _, q := range []string{"zxid=-1", "zxid=x", "since=yesterday", "last=0"} {
		req := httptest.NewRequest("GET", "/trace?"+q, nil)
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("/trace?%s: %d, want 400", q, rec.Code)
		}
	}
}
