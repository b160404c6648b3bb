package httpserve

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

// serve runs an ok handler within l on a loopback port.
func serve(t *testing.T, l Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }), l, nil)
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// closedWithin reports whether the server closes nc within d: a read
// that ends in EOF or a reset, not in the read deadline.
func closedWithin(nc net.Conn, d time.Duration) bool {
	_ = nc.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, nc)
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// get sends one keep-alive GET on nc and reads the answer.
func get(t *testing.T, nc net.Conn) {
	t.Helper()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(nc, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_ = nc.SetDeadline(time.Time{})
}

// TestIdleAndSilentConnectionsClosed: a keep-alive connection that sends
// no next request, and one that never sends a request, are closed after
// the idle timeout (without it a port kept 19,988 of them, issue 26).
func TestIdleAndSilentConnectionsClosed(t *testing.T) {
	addr := serve(t, Limits{IdleTimeout: 200 * time.Millisecond})
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	get(t, idle)
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	for name, nc := range map[string]net.Conn{"idle keep-alive": idle, "silent": silent} {
		if !closedWithin(nc, 5*time.Second) {
			t.Errorf("%s connection still open 5s past a 200ms idle timeout", name)
		}
	}
}

// TestConnectionCap: past MaxConns a new connection is closed at once,
// and a slot frees when a held connection closes.
func TestConnectionCap(t *testing.T) {
	addr := serve(t, Limits{MaxConns: 3, IdleTimeout: time.Minute})
	var held []net.Conn
	for range 3 {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		get(t, nc)
		held = append(held, nc)
	}
	// Past the cap the port resets the connection: the dial itself may
	// see it.
	if extra, err := net.Dial("tcp", addr); err == nil {
		defer extra.Close()
		if !closedWithin(extra, 5*time.Second) {
			t.Fatal("a fourth connection to a port capped at 3 stayed open")
		}
	}
	held[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			ok := !closedWithin(nc, 200*time.Millisecond)
			nc.Close()
			if ok {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no slot came free after a held connection closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStreamExtendsWriteDeadline: a handler that streams past the
// port's WriteTimeout keeps going while it extends its deadline.
func TestStreamExtendsWriteDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for range 6 {
			ExtendWrite(w, time.Second)
			io.WriteString(w, "tick\n")
			http.NewResponseController(w).Flush()
			time.Sleep(100 * time.Millisecond)
		}
	}), Limits{WriteTimeout: 200 * time.Millisecond}, nil)
	defer hs.Close()
	resp, err := http.Get("http://" + ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || len(b) != 6*len("tick\n") {
		t.Fatalf("stream = %q, %v; want six ticks", b, err)
	}
}

func TestLocalOnly(t *testing.T) {
	h := LocalOnly(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	tests := []struct {
		name    string
		host    string
		headers map[string]string
		want    int
	}{
		{"program", "127.0.0.1:9000", nil, http.StatusOK},
		{"program by name", "localhost:9000", nil, http.StatusOK},
		{"program over IPv6", "[::1]:9000", nil, http.StatusOK},
		{"same origin", "127.0.0.1:9000", map[string]string{"Origin": "http://127.0.0.1:9000", "Sec-Fetch-Site": "same-origin"}, http.StatusOK},
		{"typed into the address bar", "127.0.0.1:9000", map[string]string{"Sec-Fetch-Site": "none"}, http.StatusOK},
		{"other port", "127.0.0.1:9000", map[string]string{"Origin": "http://127.0.0.1:9001"}, http.StatusForbidden},
		{"other site", "127.0.0.1:9000", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"opaque origin", "127.0.0.1:9000", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"cross-site fetch metadata", "127.0.0.1:9000", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site fetch metadata", "127.0.0.1:9000", map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"DNS rebinding", "evil.example:9000", map[string]string{"Origin": "http://evil.example:9000"}, http.StatusForbidden},
		{"other host, no origin", "10.1.2.3:9000", nil, http.StatusForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/pause", nil)
			r.Host = tc.host
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != tc.want {
				t.Errorf("status %d, want %d (%s)", rec.Code, tc.want, rec.Body.String())
			}
		})
	}
}
