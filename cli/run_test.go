package cli

import (
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkclient"
)

// TestMain removes the hutch binary realzk.BuildHutch compiled.
func TestMain(m *testing.M) { realzk.Main(m) }

const waitLong = 30 * time.Second

// startServer runs the hutch binary for one test.
func startServer(tb testing.TB) string {
	tb.Helper()
	return realzk.StartHutchBinary(tb, realzk.BuildHutch(tb), "--max-client-conns", "0").Addr
}

// output collects what hutch cli prints, safe for the goroutine printing
// events.
type output struct {
	mu sync.Mutex // guards b
	b  strings.Builder
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// run runs hutch cli with args and stdin to its end.
func run(tb testing.TB, stdin string, args ...string) (string, int) {
	tb.Helper()
	var out output
	code := Run(Config{Args: args, Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &out})
	return out.String(), code
}

// client opens a zkclient session for the test's own changes.
func client(tb testing.TB, addr string) *zkclient.Client {
	tb.Helper()
	c, err := zkclient.New(zkclient.Config{Servers: []string{addr}, SessionTimeout: 10 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	if !c.WaitConnected(waitLong) {
		tb.Fatalf("no session with %s", addr)
	}
	return c
}

var open = []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}

// TestExitStatus checks the exit status of one-shot commands and scripts.
func TestExitStatus(t *testing.T) {
	addr := startServer(t)
	for _, c := range []struct {
		name  string
		args  []string
		stdin string
		out   string
		code  int
	}{
		{"one-shot success", []string{"-server", addr, "ls", "/"}, "", "[zookeeper]\n", 0},
		{"one-shot failure", []string{"-server", addr, "get", "/nope"}, "", "Node does not exist: /nope\n", 1},
		{"unknown command", []string{"-server", addr, "nosuch"}, "", "Command not found: Command not found nosuch\n", 127},
		{"script stops at the first failure", []string{"-server", addr},
			"create /s a\nget /s\n\nget /nope\nls /s\n", "Created /s\na\nNode does not exist: /nope\n", 1},
		{"script runs to its end with -keep-going", []string{"--server=" + addr, "-keep-going"},
			"get /nope\nget /s\n", "Node does not exist: /nope\na\n", 0},
		{"-keep-going: the last command's status", []string{"-server", addr, "--keep-going"},
			"get /s\nget /nope\n", "a\nNode does not exist: /nope\n", 1},
		{"quit keeps the last status", []string{"-server", addr, "-keep-going"}, "get /nope\nquit\nget /s\n", "Node does not exist: /nope\n", 1},
		{"not connected fails", []string{"-server", addr}, "close\nls /\n", "Not connected\n", 1},
		{"bad option", []string{"-server", addr, "-bogus", "ls", "/"}, "", "hutch cli: unknown option -bogus\n", 2},
		{"missing option value", []string{"-server"}, "", "hutch cli: no argument found for option -server\n", 2},
		{"bad timeout", []string{"-timeout", "soon", "ls", "/"}, "", "hutch cli: -timeout \"soon\" is not a positive number of milliseconds\n", 2},
		{"chroot", []string{"-server", addr + "/app", "ls", "/"}, "", "hutch cli: connect string \"" + addr + "/app\": a chroot is not supported\n", 2},
		{"help", []string{"-h"}, "", helpText, 0},
	} {
		out, code := run(t, c.stdin, c.args...)
		if code != c.code || !strings.HasSuffix(out, c.out) {
			t.Errorf("%s: exit %d, printed\n%s\nwant exit %d, ending with\n%s", c.name, code, out, c.code, c.out)
		}
	}
}

// TestNamedErrors checks where hutch cli names a code that zkCli numbers,
// and the failures zkCli lets pass.
func TestNamedErrors(t *testing.T) {
	dead := "127.0.0.1:" + strconv.Itoa(realzk.FreePort(t))
	out, code := run(t, "", "-server", dead, "-timeout", "2000", "sync", "/")
	if code != 1 || out != "Sync has failed. rc=CONNECTIONLOSS\n" {
		t.Errorf("sync with no server: exit %d, printed %q", code, out)
	}

	addr := startServer(t)
	out, code = run(t, "addauth nosuchscheme x\nls /\n", "-server", addr)
	want := "\nWATCHER::\n\nWatchedEvent state:AuthFailed type:None path:null\n"
	if code != 1 || out != want {
		t.Errorf("refused addauth: exit %d, printed %q, want exit 1 and %q", code, out, want)
	}
}

// TestWatchCommand runs hutch cli's watch: it prints the events of a
// persistent recursive watch as zkCli prints events, and ends after -n of
// them, at the end of a script's input, or on SIGINT.
func TestWatchCommand(t *testing.T) {
	addr := startServer(t)
	c := client(t, addr)
	if _, err := c.Create("/w", nil, open, wire.ModePersistent, 0); err != nil {
		t.Fatal(err)
	}

	// -n: ends by itself after the count.
	var out output
	done := make(chan int, 1)
	go func() {
		done <- Run(Config{Args: []string{"-server", addr, "watch", "-R", "-n", "2", "/w"}, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out})
	}()
	waitWatched(t, addr, "/w")
	if _, err := c.Create("/w/a", nil, open, wire.ModePersistent, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/w/a", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, done); code != 0 {
		t.Errorf("watch -n 2: exit %d", code)
	}
	want := "\nWATCHER::\n\nWatchedEvent state:SyncConnected type:NodeCreated path:/w/a\n" +
		"\nWATCHER::\n\nWatchedEvent state:SyncConnected type:NodeDataChanged path:/w/a\n"
	if got := out.String(); got != want {
		t.Errorf("watch -n 2 printed %q, want %q", got, want)
	}
	waitWatched(t, addr, "") // removed, and the session closed

	// In a script without -n: until stdin ends; the next line then runs.
	r, w := io.Pipe()
	var sout output
	go func() {
		done <- Run(Config{Args: []string{"-server", addr}, Stdin: r, Stdout: &sout, Stderr: &sout})
	}()
	io.WriteString(w, "watch /w\nls /w\n")
	waitWatched(t, addr, "/w")
	if _, err := c.Set("/w", []byte("y"), -1); err != nil {
		t.Fatal(err)
	}
	waitPrinted(t, &sout, "type:NodeDataChanged path:/w\n")
	w.Close()
	if code := wait(t, done); code != 0 {
		t.Errorf("watch in a script: exit %d", code)
	}
	if got := sout.String(); !strings.HasSuffix(got, "path:/w\n[a]\n") {
		t.Errorf("watch in a script printed %q, want the event and then ls's [a]", got)
	}

	// SIGINT stops a watch; outside one it ends hutch cli.
	sig := make(chan os.Signal, 1)
	exited := make(chan int, 1)
	r, w = io.Pipe()
	defer w.Close()
	go func() {
		done <- Run(Config{Args: []string{"-server", addr}, Stdin: r, Stdout: io.Discard, Stderr: io.Discard,
			Interrupt: sig, Exit: func(code int) { exited <- code }})
	}()
	io.WriteString(w, "watch -n 100 /w\n")
	waitWatched(t, addr, "/w")
	sig <- os.Interrupt
	waitWatched(t, addr, "")
	select {
	case code := <-exited:
		t.Fatalf("SIGINT during a watch ended hutch cli with %d", code)
	default:
	}
	sig <- os.Interrupt
	select {
	case code := <-exited:
		if code != 130 {
			t.Errorf("SIGINT at the prompt: exit %d, want 130", code)
		}
	case <-time.After(waitLong):
		t.Fatal("SIGINT outside a watch did not end hutch cli")
	}
	w.Close()
	wait(t, done)
}

func wait(tb testing.TB, done <-chan int) int {
	tb.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(waitLong):
		tb.Fatalf("hutch cli still running after %v", waitLong)
		return 0
	}
}

func waitPrinted(tb testing.TB, o *output, text string) {
	tb.Helper()
	deadline := time.Now().Add(waitLong)
	for !strings.Contains(o.String(), text) {
		if time.Now().After(deadline) {
			tb.Fatalf("waited %v for %q; printed %q", waitLong, text, o.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitWatched waits until the server's wchp lists path as watched, or
// lists no path when path is empty.
func waitWatched(tb testing.TB, addr, path string) {
	tb.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		out, err := realzk.FourLetterWord(addr, "wchp", 5*time.Second)
		if err == nil {
			fields := strings.Fields(out)
			watched := slices.ContainsFunc(fields, func(f string) bool { return strings.HasPrefix(f, "/") })
			if (path == "" && !watched) || (path != "" && slices.Contains(fields, path)) {
				return
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("wchp: waited %v for %q (last %q, %v)", waitLong, path, out, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestComplete checks tab completion: command names for the first word,
// znode paths from the children the server lists at the time.
func TestComplete(t *testing.T) {
	addr := startServer(t)
	s := newSession(addr, 10*time.Second, io.Discard, io.Discard)
	if err := s.connect(addr, true); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	for _, p := range []string{"/comp", "/comp/alpha", "/comp/alps", "/comp/beta"} {
		if _, err := s.zk.Create(p, nil, open, wire.ModePersistent, 0); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		line       string
		pos        int
		candidates []string
	}
	check := func(line string, pos int, want result) {
		t.Helper()
		l, p, c := s.complete(line, pos)
		if l != want.line || p != want.pos || !slices.Equal(c, want.candidates) {
			t.Errorf("complete(%q, %d) = %q, %d, %q; want %q, %d, %q", line, pos, l, p, c, want.line, want.pos, want.candidates)
		}
	}
	check("ls /comp/al", 11, result{"ls /comp/alp", 12, []string{"alpha", "alps"}})
	check("ls /comp/b", 10, result{"ls /comp/beta", 13, []string{"beta"}})
	check("ls /co", 6, result{"ls /comp", 8, []string{"comp"}})
	check("ls /comp/al -w", 11, result{"ls /comp/alp -w", 12, []string{"alpha", "alps"}})
	check("ls /nope/x", 10, result{"ls /nope/x", 10, nil})
	check("cr", 2, result{"create ", 7, []string{"create"}})
	check("getA", 4, result{"getA", 4, []string{"getAcl", "getAllChildrenNumber"}})
	check("ls foo", 6, result{"ls foo", 6, nil})
	// The server is asked each time: a node created since is offered.
	if _, err := s.zk.Create("/comp/beta2", nil, open, wire.ModePersistent, 0); err != nil {
		t.Fatal(err)
	}
	check("ls /comp/b", 10, result{"ls /comp/beta", 13, []string{"beta", "beta2"}})
}
