package monitor_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/hutchtest"
	"github.com/hutchzk/hutch/monitor"
	"github.com/hutchzk/hutch/trace"
)

// chromiumPath is Debian's chromium, which scripts/test.sh installs.
const chromiumPath = "/usr/bin/chromium"

// browser starts headless Chromium for the test, with a profile of its
// own and nothing that reaches the network, and returns a context whose
// actions run in its tab. Without Chromium the test is skipped, or fails
// under CI=true.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			t.Fatalf("%s is missing: the browser test cannot be skipped under CI (scripts/test.sh installs chromium)", chromiumPath)
		}
		t.Skipf("%s is missing (scripts/test.sh installs chromium)", chromiumPath)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
	}
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses root with its sandbox
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first action starts the browser; it must not run under a
	// timeout, which would stop the browser with it.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// step runs actions in the tab within a deadline, failing the test with
// what it was doing if they fail.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the tab.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until a JavaScript expression is true in the tab.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	step(t, ctx, "wait for "+what, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond),
			chromedp.WithPollingTimeout(15*time.Second))(ctx, tg)
		return chromedp.Void{}, err
	})
}

// screenshot keeps a picture of the page in HUTCH_UI_SCREENSHOTS (the
// docs' pictures are made so) or in the test's directory.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("HUTCH_UI_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rowSessions is the expression listing the sessions of a queue's rows,
// in order, as the page shows them.
func rowSessions(parent string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('section.queue[data-parent=%q] tr[data-session]')].map(r => r.dataset.session).join(",")`, parent)
}

func hexIDs(conns ...*zk.Conn) string {
	ids := make([]string, len(conns))
	for i, c := range conns {
		ids[i] = "0x" + strconv.FormatInt(c.SessionID(), 16)
	}
	return strings.Join(ids, ",")
}

// TestBrowserLiveView drives the live view of the leader of a three-node
// ensemble in headless Chromium while clients run the seeds' fair lock
// (go-zookeeper's zk.Lock: an ephemeral sequential node each, every
// waiter watching its predecessor) and, beside it, a herd that watches
// the parent: the lock panel shows the holder and the waiters in order
// and the herd; expiring the holder's session moves the queue on the
// open page; a session's countdown runs; the trace shows a release's
// delete and the watch event it fires.
func TestBrowserLiveView(t *testing.T) {
	ctx := browser(t)
	e := hutchtest.StartEnsemble(t, 3)
	li := e.Leader()
	leader := e.Member(li)
	follower := e.Member(li%3 + 1) // members are numbered from 1
	view := httptest.NewServer(monitor.New(leader.Server(), monitor.Config{}).UIHandler("127.0.0.1:0"))
	t.Cleanup(view.Close)

	admin, _ := leader.Connect(10 * time.Second)
	for _, p := range []string{"/locks", "/locks/stock", "/election", "/config"} {
		if _, err := admin.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.Create("/config/app", []byte(`{"pool":8,"hosts":["db1","db2"]}`), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	// The fair lock: a holds it; b, c and d queue through the leader, in
	// that order; f queues last through a follower, whose watches the
	// leader cannot see.
	const lockPath = "/locks/stock"
	var conns []*zk.Conn
	for range 4 {
		c, _ := leader.Connect(8 * time.Second)
		conns = append(conns, c)
	}
	viaFollower, _ := follower.Connect(8 * time.Second)
	conns = append(conns, viaFollower)
	a, b, c, d, f := conns[0], conns[1], conns[2], conns[3], conns[4]
	locks := make([]*zk.Lock, len(conns))
	acquired := make([]chan error, len(conns))
	nodes := make([]string, len(conns))
	for i, conn := range conns {
		locks[i] = zk.NewLock(conn, lockPath, zk.WorldACL(zk.PermAll))
		acquired[i] = make(chan error, 1)
		go func() { acquired[i] <- locks[i].Lock() }()
		nodes[i] = leader.WaitFor(fmt.Sprintf("contender %d to queue", i), func(ev trace.Event) bool {
			return ev.Kind == trace.TxnApplied && ev.Op == "create" && ev.Err == "" && ev.Session == conn.SessionID() &&
				strings.HasPrefix(ev.Path, lockPath+"/")
		}).Path
	}
	if err := <-acquired[0]; err != nil {
		t.Fatal(err)
	}
	waitWatches(t, leader, 3) // b, c and d each watch their predecessor

	// The herd: three contenders under /election, the waiters watching
	// the parent's children rather than their predecessor.
	var herd []*zk.Conn
	for range 3 {
		h, _ := leader.Connect(8 * time.Second)
		if _, err := h.Create("/election/n-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		herd = append(herd, h)
	}
	for _, h := range herd[1:] {
		if _, _, _, err := h.ChildrenW("/election"); err != nil {
			t.Fatal(err)
		}
	}
	waitWatches(t, leader, 5)

	// The lock panel: holder and waiters in order, each waiter on its
	// predecessor, the follower's waiter marked as watched elsewhere.
	step(t, ctx, "open the lock panel", chromedp.Navigate(view.URL+"/ui/locks"))
	waitJS(t, ctx, "the queue of five", rowSessions(lockPath)+` === `+strconv.Quote(hexIDs(a, b, c, d, f)))
	waits := eval[[]string](t, ctx, `[...document.querySelectorAll('section.queue[data-parent="/locks/stock"] tr[data-session] td:last-child')].map(td => td.className)`)
	if want := []string{"wait-none", "wait-predecessor", "wait-predecessor", "wait-predecessor", "wait-elsewhere"}; !slices.Equal(waits, want) {
		t.Errorf("waits %v, want %v", waits, want)
	}
	herdText := eval[string](t, ctx, `(document.querySelector('section.queue[data-parent="/election"] .herd')?.textContent ?? "")`)
	if !strings.Contains(herdText, "herd: 2") {
		t.Errorf("the election's herd is not shown: %q", herdText)
	}
	screenshot(t, ctx, "observe-locks.png")

	// The watches of every kind this node holds.
	if _, _, _, err := admin.GetW("/config/app"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := admin.ExistsW("/config/next"); err != nil {
		t.Fatal(err)
	}
	step(t, ctx, "open the watches", chromedp.Navigate(view.URL+"/ui/watches"))
	waitJS(t, ctx, "the watches", `[...document.querySelectorAll('table.watches td')].some(td => td.textContent === "exist")`)
	kinds := eval[[]string](t, ctx, `[...document.querySelectorAll('table.watches tr td:last-child')].map(td => td.textContent)`)
	slices.Sort(kinds)
	if want := []string{"child", "child", "data", "data", "data", "data", "exist"}; !slices.Equal(kinds, want) {
		t.Errorf("watch kinds %v, want %v", kinds, want)
	}
	screenshot(t, ctx, "observe-watches.png")
	step(t, ctx, "back to the locks", chromedp.Navigate(view.URL+"/ui/locks"))
	waitJS(t, ctx, "the queue of five again", rowSessions(lockPath)+` === `+strconv.Quote(hexIDs(a, b, c, d, f)))

	// Expire the holder: on the same open page the queue moves up, and b
	// holds.
	drawn := eval[string](t, ctx, `document.getElementById('live').dataset.drawn || "0"`)
	e.ExpireSession(a.SessionID())
	if err := <-acquired[1]; err != nil {
		t.Fatalf("b after the holder expired: %v", err)
	}
	waitJS(t, ctx, "the queue to move up", rowSessions(lockPath)+` === `+strconv.Quote(hexIDs(b, c, d, f)))
	if now := eval[string](t, ctx, `document.getElementById('live').dataset.drawn`); now == drawn {
		t.Errorf("the queue moved without the page redrawing (drawn %s): was it reloaded?", now)
	}
	screenshot(t, ctx, "observe-locks-after-expiry.png")

	// The sessions panel: the time left before expiry counts down
	// between redraws.
	step(t, ctx, "open the sessions panel", chromedp.Navigate(view.URL+"/ui/sessions"))
	countdown := fmt.Sprintf(`(document.querySelector('tr[data-session="0x%x"] .countdown')?.textContent ?? "")`, c.SessionID())
	waitJS(t, ctx, "a countdown", countdown+` !== ""`)
	// It runs in the page between redraws: the text changes while the
	// panel drawn stays the same (a redraw starts the comparison over).
	waitJS(t, ctx, "the countdown to run between redraws", `(() => {
		const text = `+countdown+`, drawn = document.getElementById('live').dataset.drawn;
		if (window.lastDrawn !== drawn || window.lastText === undefined) {
			window.lastDrawn = drawn;
			window.lastText = text;
			return false;
		}
		return text !== window.lastText;
	})()`)
	screenshot(t, ctx, "observe-sessions.png")

	// The trace: b releases; the delete and the NodeDeleted that wakes c
	// appear as they happen. Then the election's holder expires: its
	// close and the NodeChildrenChanged that wakes the whole herd.
	step(t, ctx, "open the trace", chromedp.Navigate(view.URL+"/ui/trace"))
	waitJS(t, ctx, "the stream to open", `document.getElementById('trace-status').textContent.startsWith('live')`)
	if err := locks[1].Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-acquired[2]; err != nil {
		t.Fatalf("c after b released: %v", err)
	}
	rowText := `[...document.querySelectorAll('#trace-rows tr')].map(r => r.textContent).join("\n")`
	waitJS(t, ctx, "the delete and the watch event", fmt.Sprintf(`(t => t.includes("delete") && t.includes("NodeDeleted"))(%s)`, rowText))
	e.ExpireSession(herd[0].SessionID())
	waitJS(t, ctx, "the herd woken", fmt.Sprintf(`(t => t.split("NodeChildrenChanged").length === 3)(%s)`, rowText))
	screenshot(t, ctx, "observe-trace.png")

	// The other panels render the same state; their pictures are for
	// the docs.
	step(t, ctx, "open a node", chromedp.Navigate(view.URL+"/ui/tree?path=/config/app"))
	waitJS(t, ctx, "the node's data", `document.querySelector('pre.data')?.textContent.includes('"pool": 8')`)
	screenshot(t, ctx, "observe-tree.png")
	step(t, ctx, "open a waiter's node", chromedp.Navigate(view.URL+"/ui/tree?path="+url.QueryEscape(nodes[3])))
	owner := fmt.Sprintf("0x%x", d.SessionID())
	waitJS(t, ctx, "its owner's link", fmt.Sprintf(`[...document.querySelectorAll('table.stat a')].some(a => a.textContent === %q)`, owner))
	screenshot(t, ctx, "observe-tree-ephemeral.png")
	step(t, ctx, "open the ensemble", chromedp.Navigate(view.URL+"/ui/ensemble"))
	waitJS(t, ctx, "three members", `document.querySelectorAll('table.members tr').length === 4`)
	screenshot(t, ctx, "observe-ensemble.png")

	// Hostile names and data on screen: markup that would run if it were
	// not escaped (and CSP did not stop it), quotes, and invalid UTF-8 in
	// the data (go-zookeeper refuses it in a path; TestViewEscapes puts it
	// there through a raw client). The page must show it all as text and
	// run none of it.
	const hostileDir = `/"><img src=x onerror="window.pwned=1">`
	hostileNode := hostileDir + `/'<img src=y onerror=window.pwned=2>`
	for _, p := range []string{hostileDir, hostileNode} {
		if _, err := admin.Create(p, []byte("<script>window.pwned=3</script>\"'&\xff\xfe"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %q: %v", p, err)
		}
	}
	step(t, ctx, "open the hostile directory", chromedp.Navigate(view.URL+"/ui/tree?"+url.Values{"path": {hostileDir}, "format": {"text"}}.Encode()))
	waitJS(t, ctx, "the hostile data as text", `document.querySelector('pre.data')?.textContent.includes("<script>window.pwned=3</script>")`)
	waitJS(t, ctx, "the hostile child's name as text", `document.body.textContent.includes("'<img src=y onerror=window.pwned=2>")`)
	if pwned := eval[bool](t, ctx, `window.pwned !== undefined || document.querySelector('img[src="x"], img[src="y"]') !== null || document.querySelectorAll('script:not([src])').length > 0`); pwned {
		t.Fatal("hostile znode names or data became markup or ran on the page")
	}
	screenshot(t, ctx, "observe-hostile.png")
}

// waitWatches waits until the server holds n watches on the lock and
// election queues' nodes and parents.
func waitWatches(t *testing.T, srv *hutchtest.Server, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		count := 0
		for _, w := range srv.Watches() {
			if strings.HasPrefix(w.Path, "/locks/") || w.Path == "/election" {
				count++
			}
		}
		if count >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d watches on the queues, want %d: %+v", count, n, srv.Watches())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
