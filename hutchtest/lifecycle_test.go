package hutchtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestRestartWithDataDir: with a data directory a restart keeps the tree
// and the sessions: the client re-attaches, its ephemeral still there.
// Without one the server comes back empty and the session is expired.
func TestRestartWithDataDir(t *testing.T) {
	srv := Start(t, DataDir(t.TempDir()))
	c, events := srv.Connect(10 * time.Second)
	_, err := c.Create("/kept", []byte("v"), 0, open)
	must(t, err)
	_, err = c.Create("/eph", nil, zk.FlagEphemeral, open)
	must(t, err)
	id := c.SessionID()

	srv.Restart()

	waitState(t, events, zk.StateHasSession)
	if c.SessionID() != id {
		t.Fatalf("session %#x lost in the restart (now %#x)", id, c.SessionID())
	}
	data, _, err := c.Get("/kept")
	if err != nil || string(data) != "v" {
		t.Fatalf("/kept after restart: %q %v", data, err)
	}
	if want := map[string]string{"/kept": "v", "/eph": ""}; !reflect.DeepEqual(srv.Tree(), want) {
		t.Fatalf("tree after restart %v, want %v", srv.Tree(), want)
	}

	mem := Start(t)
	mc, _ := mem.Connect(10 * time.Second)
	_, err = mc.Create("/gone", nil, 0, open)
	must(t, err)
	mem.Restart()
	if len(mem.Tree()) != 0 || len(mem.Sessions()) != 0 {
		t.Fatalf("in-memory server kept %v and %d sessions across a restart", mem.Tree(), len(mem.Sessions()))
	}
	fresh, _ := mem.Connect(10 * time.Second)
	if ok, _, err := fresh.Exists("/gone"); err != nil || ok {
		t.Fatalf("/gone after an in-memory restart: %v %v", ok, err)
	}
}

// TestSnapshotLoad: a tree captured with Snapshot, written as JSON and
// read back, loads into another server with its data, ACLs, container
// and TTL modes; ephemerals are left out.
func TestSnapshotLoad(t *testing.T) {
	src := Start(t)
	c, _ := src.Connect(10 * time.Second)
	digest := zk.DigestACL(zk.PermRead|zk.PermAdmin, "bob", "secret")
	for _, n := range []struct {
		path string
		data []byte
		acl  []zk.ACL
	}{
		{"/app", []byte("config"), open},
		{"/app/bin", []byte{0xff, 0, 1}, open},
		{"/app/private", []byte("p"), digest},
	} {
		_, err := c.Create(n.path, n.data, 0, n.acl)
		must(t, err)
	}
	_, err := c.CreateContainer("/app/box", nil, zk.FlagContainer, open)
	must(t, err)
	_, err = c.CreateTTL("/app/ttl", []byte("t"), zk.FlagTTL, open, time.Minute)
	must(t, err)
	_, err = c.Create("/app/eph", nil, zk.FlagEphemeral, open)
	must(t, err)

	file := filepath.Join(t.TempDir(), "tree.json")
	must(t, src.Snapshot().WriteFile(file))
	raw, _ := os.ReadFile(file)
	if !bytes.Contains(raw, []byte(`"data": "config"`)) || !bytes.Contains(raw, []byte(`"digest:bob:`)) {
		t.Fatalf("fixture is not readable JSON:\n%s", raw)
	}
	snap, err := ReadSnapshot(file)
	must(t, err)

	dst := Start(t)
	dst.Load(snap)
	want := src.Tree()
	delete(want, "/app/eph")
	if got := dst.Tree(); !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded tree %v, want %v", got, want)
	}
	for _, p := range []string{"/app/private", "/app/box", "/app/ttl"} {
		a, _ := src.Node(p)
		b, _ := dst.Node(p)
		if !reflect.DeepEqual(a.ACL, b.ACL) || a.Container != b.Container || a.TTL != b.TTL {
			t.Fatalf("%s: loaded %+v, captured %+v", p, b, a)
		}
	}
	// The ACL binds clients of the loaded tree.
	dc, _ := dst.Connect(10 * time.Second)
	if _, _, err := dc.Get("/app/private"); err != zk.ErrNoAuth {
		t.Fatalf("read of a digest-protected fixture node: %v", err)
	}
	// Loading over an existing node fails the test with the reason.
	if msg := runFatal(t, func(tb *fatalTB) { dst.tb = tb; dst.Load(snap) }); !strings.Contains(msg, "exists") {
		t.Fatalf("loading twice: %q", msg)
	}
	dst.tb = t
	if b, err := json.Marshal(snap); err != nil || len(b) == 0 {
		t.Fatal(err)
	}
}

// TestOptions: tick time and session bounds, a super user, a connection
// limit, the four-letter word list and the log level each take effect.
func TestOptions(t *testing.T) {
	t.Run("session bounds", func(t *testing.T) {
		srv := Start(t, TickTime(100*time.Millisecond), SessionTimeouts(300*time.Millisecond, 3*time.Second))
		for _, tc := range []struct{ ask, want time.Duration }{
			{100 * time.Millisecond, 300 * time.Millisecond}, {time.Second, time.Second}, {time.Minute, 3 * time.Second},
		} {
			c, _ := srv.Connect(tc.ask)
			s, _ := srv.Session(c.SessionID())
			if s.Timeout != tc.want {
				t.Errorf("asked %v, negotiated %v, want %v", tc.ask, s.Timeout, tc.want)
			}
		}
	})
	t.Run("super user", func(t *testing.T) {
		srv := Start(t, SuperUser("admin", "pw"))
		owner, _ := srv.Connect(10 * time.Second)
		_, err := owner.Create("/locked", []byte("x"), 0, zk.DigestACL(zk.PermAll, "bob", "bob"))
		must(t, err)
		super, _ := srv.Connect(10 * time.Second)
		if _, _, err := super.Get("/locked"); err != zk.ErrNoAuth {
			t.Fatalf("before auth: %v", err)
		}
		must(t, super.AddAuth("digest", []byte("admin:pw")))
		if data, _, err := super.Get("/locked"); err != nil || string(data) != "x" {
			t.Fatalf("as super: %q %v", data, err)
		}
	})
	t.Run("max connections", func(t *testing.T) {
		srv := Start(t, MaxConnections(1))
		srv.Connect(10 * time.Second)
		if got := srv.FourLetterWord("ruok"); got != "" {
			t.Fatalf("a second connection was served (%q)", got)
		}
	})
	t.Run("four-letter words", func(t *testing.T) {
		srv := Start(t, FourLetterWords("ruok"))
		if got := srv.FourLetterWord("ruok"); got != "imok" {
			t.Fatalf("ruok: %q", got)
		}
		if got := srv.FourLetterWord("stat"); !strings.Contains(got, "not in the whitelist") {
			t.Fatalf("stat: %q", got)
		}
	})
	t.Run("log to the test", func(t *testing.T) {
		lt := &logTB{TB: t}
		srv := Start(lt, LogLevel(slog.LevelDebug))
		srv.Connect(10 * time.Second)
		if !lt.has("session created") || !lt.has("hutch: ") {
			t.Fatalf("test log: %q", lt.all())
		}
	})
	t.Run("TCP", func(t *testing.T) {
		srv := Start(t, TCP())
		if !strings.HasPrefix(srv.Addr(), "127.0.0.1:") || strings.HasSuffix(srv.Addr(), ":0") {
			t.Fatalf("Addr %q", srv.Addr())
		}
		c, _, err := zk.Connect([]string{srv.ConnectString()}, 10*time.Second, zk.WithLogger(discard{}))
		must(t, err)
		defer c.Close()
		_, err = c.Create("/over-tcp", nil, 0, open)
		must(t, err)
	})
}

// logTB records what is logged to it.
type logTB struct {
	testing.TB
	mu    sync.Mutex
	lines []string
}

func (l *logTB) Log(args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprint(args...))
	l.mu.Unlock()
}

func (l *logTB) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (l *logTB) has(s string) bool { return strings.Contains(l.all(), s) }

// TestFailedStartFailsAtOnce: a server that cannot start fails the test
// at once, saying why; nothing waits.
func TestFailedStartFailsAtOnce(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	must(t, os.WriteFile(notADir, nil, 0o644))
	msg := runFatal(t, func(tb *fatalTB) { Start(tb, DataDir(notADir)) })
	if !strings.Contains(msg, "hutchtest: start") || !strings.Contains(msg, "not a directory") {
		t.Fatalf("failed start said %q", msg)
	}
}
