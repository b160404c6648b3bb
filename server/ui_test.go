package server

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestUIAddr: the live view and its trace are served on their own port
// and on the admin port, read-only; the trace streams what the server
// applies; closing the server ends an open stream.
func TestUIAddr(t *testing.T) {
	s := startServer(t, Config{UIAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0"})
	for _, base := range []string{"http://" + s.UIAddr().String(), "http://" + s.AdminAddr().String()} {
		resp, err := http.Get(base + "/ui/tree?path=/zookeeper")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "quota") || resp.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("%s/ui/tree: %d %s", base, resp.StatusCode, body)
		}
		resp, err = http.Post(base+"/ui/tree", "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: POST /ui/tree = %d", base, resp.StatusCode)
		}
	}
	resp, err := http.Get("http://" + s.UIAddr().String() + "/trace?path=/ui-")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	c, _ := dial(t, s.Addr().String(), 10*time.Second)
	deadline := time.After(10 * time.Second)
	for n := 0; ; n++ {
		// The stream subscribes once its request is in: create until a
		// create shows.
		if _, err := c.Create("/ui-"+string(rune('a'+n%26))+strings.Repeat("x", n/26), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		select {
		case line := <-lines:
			if !strings.Contains(line, `"op":"create"`) || !strings.Contains(line, `"path":"/ui-`) {
				t.Fatalf("trace line %q", line)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			gone := time.After(10 * time.Second)
			for open := true; open; {
				select {
				case _, open = <-lines:
				case <-gone:
					t.Fatal("the trace stream outlived the server")
				}
			}
			return
		case <-deadline:
			t.Fatal("no trace line within 10s")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestHTTPListenersLogged: each operators' HTTP listener logs where it
// serves (zoo.cfg's admin defaults bind every interface on 8080, and
// nothing said so).
func TestHTTPListenersLogged(t *testing.T) {
	var buf syncBuffer
	s := startServer(t, Config{AdminAddr: "127.0.0.1:0", UIAddr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	out := buf.String()
	for _, want := range []string{
		`msg="serving admin server" addr=` + s.AdminAddr().String() + ` url=http://` + s.AdminAddr().String() + `/commands`,
		`msg="serving live view" addr=` + s.UIAddr().String(),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the log:\n%s", want, out)
		}
	}
}
