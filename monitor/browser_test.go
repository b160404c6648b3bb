package monitor_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/hutchtest"
	"github.com/hutchzk/hutch/internal/browsertest"
	"github.com/hutchzk/hutch/monitor"
)

// waitJS waits until a JavaScript expression is true in the tab.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := chromedp.Run(c, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond),
		chromedp.WithPollingTimeout(25*time.Second)))
	if err != nil {
		// What the page showed instead, for the failure's reader.
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText.slice(0, 3000)`))
		t.Fatalf("wait for %s: %v\nthe page says:\n%s", what, err, text)
	}
}

// screenshot keeps a picture of the page in HUTCH_UI_SCREENSHOTS (the
// docs' pictures are made so) or in the test's directory.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("HUTCH_UI_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// queueWaits is the expression listing a queue's contenders as the
// diagram draws them: "session wait" for each box, in order.
func queueWaits(parent string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('section.queue[data-parent=%q] g.contender')].map(g => g.dataset.session + " " + g.dataset.wait).join(",")`, parent)
}

// textOutsideBoxes counts the texts of the diagram's contender boxes
// that run out of their box, as the browser lays them out.
const textOutsideBoxes = `[...document.querySelectorAll('g.contender')].map(g => {
	const box = g.querySelector('rect').getBoundingClientRect();
	return [...g.querySelectorAll('text')].filter(t => { const r = t.getBoundingClientRect(); return r.left < box.left || r.right > box.right; }).length;
}).reduce((a, b) => a + b, 0)`

// hexID is a session id as the view writes it.
func hexID(id int64) string { return "0x" + strconv.FormatInt(id, 16) }

// contenderEnv names the environment that makes the test binary a lock
// contender (TestHelperContender): the client address, the lock's parent
// and the contender's name, comma separated.
const contenderEnv = "HUTCH_TEST_CONTENDER"

// TestHelperContender is not a test: run as a child process of the browser
// test (with HUTCH_TEST_CONTENDER set), it takes the seeds' fair lock as a
// named contender, says so on standard output ("queued <path> <session>",
// then "holds") and holds it until it is killed. The browser test stops it
// with SIGSTOP, as a stalled JVM or a paused container would stop.
func TestHelperContender(t *testing.T) {
	spec := os.Getenv(contenderEnv)
	if spec == "" {
		t.Skip("a helper process of TestBrowserLiveView")
	}
	parts := strings.SplitN(spec, ",", 3)
	c, _, err := zk.Connect([]string{parts[0]}, 4*time.Second, zk.WithLogger(quietLog{}))
	if err != nil {
		t.Fatal(err)
	}
	// On a loaded machine the first connection may take a few tries.
	if err := retry(func() error { _, err := c.Sync(parts[1]); return err }); err != nil {
		t.Fatal(err)
	}
	path, acquired, err := fairLock(c, parts[1], parts[2])
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("queued %s %d\n", path, c.SessionID())
	<-acquired
	fmt.Println("holds")
	select {}
}

type quietLog struct{}

func (quietLog) Printf(string, ...any) {}

// fairLock is the seeds' fair lock, with the contender's name as its
// node's data: an ephemeral sequential child of parent; the lowest holds;
// each waiter watches the node just before its own (exists), and looks
// again when it goes. acquired is closed once it holds.
func fairLock(c *zk.Conn, parent, name string) (string, <-chan struct{}, error) {
	// A session on another member than the one that made the parent
	// sees it once that member has caught up.
	if _, err := c.Sync(parent); err != nil {
		return "", nil, err
	}
	own, err := c.Create(parent+"/lock-", []byte(name), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		return "", nil, err
	}
	acquired := make(chan struct{})
	go func() {
		for {
			children, _, err := c.Children(parent)
			if err != nil {
				return
			}
			slices.SortFunc(children, func(a, b string) int { return strings.Compare(a[len(a)-10:], b[len(b)-10:]) })
			i := slices.Index(children, own[len(parent)+1:])
			switch {
			case i < 0:
				return // its session is gone
			case i == 0:
				close(acquired)
				return
			}
			ok, _, ev, err := c.ExistsW(parent + "/" + children[i-1])
			if err != nil {
				return
			}
			if ok {
				<-ev
			}
		}
	}()
	return own, acquired, nil
}

// startContender runs TestHelperContender in a child process, and returns
// it with its node's path and session once it has queued.
func startContender(t *testing.T, addr, parent, name string) (*exec.Cmd, string, int64, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperContender$")
	cmd.Env = append(os.Environ(), contenderEnv+"="+addr+","+parent+","+name)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "queued" {
			rest := []string{l}
			for more := range lines {
				rest = append(rest, more)
			}
			t.Fatalf("contender %s said:\n%s", name, strings.Join(rest, "\n"))
		}
		id, _ := strconv.ParseInt(f[2], 10, 64)
		return cmd, f[1], id, lines
	case <-time.After(30 * time.Second):
		t.Fatalf("contender %s did not queue", name)
	}
	return nil, "", 0, nil
}

// TestBrowserLiveView drives the live view of a three-node ensemble in
// headless Chromium while named contenders run the seeds' fair lock on
// /locks/stock, connected through every member, and a naive election
// herds on /election. From a follower, the diagram shows the whole chain,
// every waiter's watch gathered from the members that hold them; the
// holder, a process of its own, is frozen with SIGSTOP: its countdown
// runs down on the open page and it expires, moving the queue; the
// sessions panel lists it as ended; afterwards the replay, opened from the
// trace, steps back to the moment before its node went and forward
// through it. The other panels, long child names, hostile names and data,
// and a queue of a thousand contenders are drawn for the docs and checked
// on the way.
func TestBrowserLiveView(t *testing.T) {
	ctx := browsertest.Start(t)
	e := hutchtest.StartEnsemble(t, 3, hutchtest.TCP(), hutchtest.LiveView())
	li := e.Leader()
	fi, fo := li%3+1, (li+1)%3+1 // members are numbered from 1
	leader, follower, other := e.Member(li), e.Member(fi), e.Member(fo)
	fview := httptest.NewServer(monitor.New(follower.Server(), monitor.Config{}).UIHandler("127.0.0.1:0"))
	t.Cleanup(fview.Close)

	// The administrator's session fails over between the members: on a
	// loaded machine a leader may be lost mid-test.
	admin, _ := e.Connect(10 * time.Second)
	for _, p := range []string{"/locks", "/locks/stock", "/election", "/config"} {
		create(t, admin, p, nil)
	}
	create(t, admin, "/config/app", []byte(`{"pool":8,"hosts":["db1","db2"]}`))

	// The fair lock: worker-1 holds it, from a process of its own
	// connected to the leader; worker-2 to worker-5 queue through the
	// leader, this follower, the other follower and this follower again.
	const lockPath = "/locks/stock"
	holderCmd, holderNode, holderID, holderSays := startContender(t, leader.Addr(), lockPath, "worker-1")
	if l := <-holderSays; l != "holds" {
		t.Fatalf("the holder said %q", l)
	}
	var conns []*zk.Conn
	acquired := make([]<-chan struct{}, 0, 4)
	for i, m := range []*hutchtest.Server{leader, follower, other, follower} {
		c, _ := m.Connect(8 * time.Second)
		_, got, err := fairLock(c, lockPath, fmt.Sprintf("worker-%d", i+2))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		acquired = append(acquired, got)
	}
	// The herd: three contenders under /election watch the parent's
	// children, not their predecessor.
	for i := range 3 {
		h, _ := follower.Connect(8 * time.Second)
		if _, err := h.Sync("/election"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Create("/election/n-", []byte(fmt.Sprintf("10.0.0.%d:8080", i+1)), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, h)
	}
	for _, h := range conns[len(conns)-2:] {
		if _, _, _, err := h.ChildrenW("/election"); err != nil {
			t.Fatal(err)
		}
	}

	// The whole chain from a follower: every waiter on its predecessor,
	// whichever member holds its watch.
	chain := strings.Join([]string{hexID(holderID) + " none", hexID(conns[0].SessionID()) + " predecessor",
		hexID(conns[1].SessionID()) + " predecessor", hexID(conns[2].SessionID()) + " predecessor",
		hexID(conns[3].SessionID()) + " predecessor"}, ",")
	browsertest.Step(t, ctx, "open the follower's lock panel", chromedp.Navigate(fview.URL+"/ui/locks"))
	waitJS(t, ctx, "the chain of five", queueWaits(lockPath)+` === `+strconv.Quote(chain))
	waitJS(t, ctx, "the herd of two", `(document.querySelector('section.queue[data-parent="/election"] .herd')?.textContent ?? "").includes("herd: 2")`)
	text := browsertest.Eval[string](t, ctx, `document.body.innerText`)
	for _, bad := range []string{"unknown", "did not answer"} {
		if strings.Contains(text, bad) {
			t.Errorf("the follower's view says %q", bad)
		}
	}
	for i := 1; i <= 5; i++ {
		if !strings.Contains(text, fmt.Sprintf("worker-%d", i)) {
			t.Errorf("worker-%d's name is not in the diagram", i)
		}
	}
	if n := browsertest.Eval[int](t, ctx, `document.querySelectorAll('section.queue[data-parent="/locks/stock"] path.arrow-predecessor').length`); n != 4 {
		t.Errorf("%d predecessor arrows, want 4", n)
	}
	if n := browsertest.Eval[int](t, ctx, textOutsideBoxes); n != 0 {
		t.Errorf("%d texts of the contenders' boxes run out of their box", n)
	}
	// An election's first is its leader, a lock's its holder; a legend
	// says what the boxes and arrows mean.
	firstRole := `(document.querySelector('section.queue[data-parent=%q] g.contender text.role')?.textContent ?? "")`
	if got := browsertest.Eval[string](t, ctx, fmt.Sprintf(firstRole, "/election")); got != "#0 leader" {
		t.Errorf("the election's first box says %q, want #0 leader", got)
	}
	if got := browsertest.Eval[string](t, ctx, fmt.Sprintf(firstRole, lockPath)); got != "#0 holds it" {
		t.Errorf("the lock's first box says %q, want #0 holds it", got)
	}
	if legend := browsertest.Eval[string](t, ctx, `document.querySelector('ul.legend')?.textContent ?? ""`); !strings.Contains(legend, "predecessor") || !strings.Contains(legend, "herd") {
		t.Errorf("the locks panel's legend is %q", legend)
	}
	screenshot(t, ctx, "observe-locks.png")

	// The watches of the whole ensemble from the follower.
	if _, _, _, err := admin.GetW("/config/app"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := admin.ExistsW("/config/next"); err != nil {
		t.Fatal(err)
	}
	browsertest.Step(t, ctx, "open the watches", chromedp.Navigate(fview.URL+"/ui/watches"))
	waitJS(t, ctx, "the watches of every member", `[...document.querySelectorAll('table.watches td')].filter(td => td.textContent === "exist").length === 1`)
	kinds := browsertest.Eval[[]string](t, ctx, `[...document.querySelectorAll('table.watches tr td:last-child')].map(td => td.textContent)`)
	slices.Sort(kinds)
	if want := []string{"child", "child", "data", "data", "data", "data", "data", "exist"}; !slices.Equal(kinds, want) {
		t.Errorf("watch kinds %v, want %v", kinds, want)
	}
	screenshot(t, ctx, "observe-watches.png")

	// Freeze the holder: its client stops, its session's countdown runs
	// down on the open page, and the leader expires it; the queue moves
	// up and worker-2 holds, without a reload.
	browsertest.Step(t, ctx, "back to the locks", chromedp.Navigate(fview.URL+"/ui/locks"))
	waitJS(t, ctx, "the chain again", queueWaits(lockPath)+` === `+strconv.Quote(chain))
	if got := browsertest.Eval[string](t, ctx, `document.getElementById('head-sessions').textContent`); got != "9 sessions" {
		t.Errorf("the header says %q before the holder froze, want 9 sessions", got)
	}
	drawn := browsertest.Eval[string](t, ctx, `document.getElementById('live').dataset.drawn || "0"`)
	if err := holderCmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	holderLeft := fmt.Sprintf(`(document.querySelector('g.contender[data-session="%s"] .countdown')?.textContent ?? "")`, hexID(holderID))
	waitJS(t, ctx, "the frozen holder's countdown under 2.5s", `(s => s.endsWith("ms") || (s.endsWith("s") && parseFloat(s) < 2.5))(`+holderLeft+`)`)
	screenshot(t, ctx, "observe-frozen-holder.png")
	select {
	case <-acquired[0]:
	case <-time.After(30 * time.Second):
		t.Fatal("worker-2 did not take the lock after the holder froze")
	}
	moved := strings.Join(strings.Split(chain, ",")[1:], ",")
	moved = strings.Replace(moved, hexID(conns[0].SessionID())+" predecessor", hexID(conns[0].SessionID())+" none", 1)
	waitJS(t, ctx, "the queue to move up", queueWaits(lockPath)+` === `+strconv.Quote(moved))
	// The header above the panel redraws with it: one session fewer.
	waitJS(t, ctx, "the header to count the expired session out", `document.getElementById('head-sessions').textContent === "8 sessions"`)
	if now := browsertest.Eval[string](t, ctx, `document.getElementById('live').dataset.drawn`); now == drawn {
		t.Errorf("the queue moved without the page redrawing (drawn %s): was it reloaded?", now)
	}
	screenshot(t, ctx, "observe-locks-after-expiry.png")

	// The sessions panel: countdowns run, and the holder is listed as
	// ended: when, why, the node it deleted.
	browsertest.Step(t, ctx, "open the sessions panel", chromedp.Navigate(fview.URL+"/ui/sessions"))
	endedRow := fmt.Sprintf(`(document.querySelector('table.ended tr[data-session="%s"]')?.textContent ?? "")`, hexID(holderID))
	waitJS(t, ctx, "the holder among the ended sessions", `(t => t.includes("expired") && t.includes(`+strconv.Quote(holderNode)+`))(`+endedRow+`)`)
	countdown := fmt.Sprintf(`(document.querySelector('tr[data-session="%s"] .countdown')?.textContent ?? "")`, hexID(conns[2].SessionID()))
	waitJS(t, ctx, "the countdown to run between redraws", `(() => {
		const text = `+countdown+`, drawn = document.getElementById('live').dataset.drawn;
		if (text === "" || window.lastDrawn !== drawn || window.lastText === undefined) {
			window.lastDrawn = drawn;
			window.lastText = text;
			return false;
		}
		return text !== window.lastText;
	})()`)
	screenshot(t, ctx, "observe-sessions.png")
	// Its own page (its id's link) says the same: when, why, what its
	// end deleted, rather than "no open session".
	browsertest.Step(t, ctx, "open the ended session's page", chromedp.Navigate(fview.URL+"/ui/sessions?session="+hexID(holderID)))
	waitJS(t, ctx, "the ended session's page", `(t => t.includes("Ended") && t.includes("expired") && t.includes(`+strconv.Quote(holderNode)+`) && !t.includes("No open session"))(document.getElementById('live').textContent)`)

	// worker-2 releases: the delete, and the watch event that wakes
	// worker-3 alone.
	if err := conns[0].Delete(mustNode(t, conns[0], lockPath), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-acquired[1]:
	case <-time.After(30 * time.Second):
		t.Fatal("worker-3 did not take the lock after worker-2 released it")
	}

	// The trace opens on the history: the holder's expiry is there,
	// listing the node it deleted, under the path filter.
	browsertest.Step(t, ctx, "open the trace", chromedp.Navigate(fview.URL+"/ui/trace?"+url.Values{"path": {lockPath + "/"}}.Encode()))
	waitJS(t, ctx, "the history", `document.getElementById('trace-status').textContent.includes("from the history")`)
	closeRow := `[...document.querySelectorAll('#trace-rows tr')].find(r => r.textContent.includes("closeSession") && r.textContent.includes("expired"))`
	waitJS(t, ctx, "the expiry's row", `(r => r !== undefined && r.textContent.includes(`+strconv.Quote(holderNode)+`))(`+closeRow+`)`)
	waitJS(t, ctx, "worker-3 woken by the release", `[...document.querySelectorAll('#trace-rows tr')].some(r => r.textContent.includes("NodeDeleted") && r.dataset.session === `+strconv.Quote(hexID(conns[1].SessionID()))+`)`)
	screenshot(t, ctx, "observe-trace.png")
	replayURL := browsertest.Eval[string](t, ctx, `(`+closeRow+`).querySelector('a').href`)

	// Replay, after the fact: just after the expiry worker-2 holds; a
	// step back is the moment before, worker-1 holding and worker-2
	// watching it; a step forward goes through the expiry again.
	browsertest.Step(t, ctx, "open the replay at the expiry", chromedp.Navigate(replayURL))
	waitJS(t, ctx, "the queue just after the expiry", queueWaits(lockPath)+` === `+strconv.Quote(moved))
	browsertest.Step(t, ctx, "step back", chromedp.Navigate(browsertest.Eval[string](t, ctx, `document.getElementById('replay-prev').href`)))
	waitJS(t, ctx, "the queue just before the expiry", queueWaits(lockPath)+` === `+strconv.Quote(chain))
	if !strings.Contains(browsertest.Eval[string](t, ctx, `document.getElementById('head').textContent`), "replaying") {
		t.Error("the header does not say the view is replayed")
	}
	screenshot(t, ctx, "observe-replay-before.png")
	browsertest.Step(t, ctx, "step forward", chromedp.Navigate(browsertest.Eval[string](t, ctx, `document.getElementById('replay-next').href`)))
	waitJS(t, ctx, "the queue after the expiry again", queueWaits(lockPath)+` === `+strconv.Quote(moved))
	screenshot(t, ctx, "observe-replay-after.png")

	// The same history as a sequence diagram.
	browsertest.Step(t, ctx, "open the sequence diagram", chromedp.Navigate(fview.URL+"/ui/sequence?"+url.Values{"path": {lockPath + "/"}, "last": {"40"}}.Encode()))
	waitJS(t, ctx, "the diagram", `document.querySelectorAll('svg.sequence path.seq-watch').length > 0 && document.querySelectorAll('svg.sequence path.seq-expire').length > 0`)
	if legend := browsertest.Eval[string](t, ctx, `document.querySelector('ul.legend')?.textContent ?? ""`); !strings.Contains(legend, "watch event") || !strings.Contains(legend, "expired") {
		t.Errorf("the sequence panel's legend is %q", legend)
	}
	screenshot(t, ctx, "observe-sequence.png")

	// The ensemble: every member as its own report says it.
	browsertest.Step(t, ctx, "open the ensemble", chromedp.Navigate(fview.URL+"/ui/ensemble"))
	waitJS(t, ctx, "three members answering", `document.querySelectorAll('table.members tr[data-member]').length === 3 && document.querySelectorAll('table.members tr.silent').length === 0`)
	// Commit and applied indexes count the same entries: an idle member
	// lags by none, Raft's own entries (the election's) included.
	waitJS(t, ctx, "every member's lag to be 0", `[...document.querySelectorAll('table.members tr[data-member]')].every(r => r.children[6]?.textContent === "0")`)
	screenshot(t, ctx, "observe-ensemble.png")
	// Each member's row links to that member's own view: the other
	// follower's link, followed, opens its view, which names it as this
	// node.
	link := fmt.Sprintf(`table.members tr[data-member="%d"] a`, fo)
	want := "http://" + other.Server().UIAddr().String() + "/ui/ensemble"
	href := browsertest.Eval[string](t, ctx, `document.querySelector('`+link+`')?.href ?? ""`)
	if href != want {
		t.Fatalf("node %d's row links to %q, want %q", fo, href, want)
	}
	browsertest.Step(t, ctx, "follow the other follower's link", chromedp.Navigate(href))
	waitJS(t, ctx, "the other follower's own view", `document.querySelector('table.kv.self td')?.textContent === "`+strconv.Itoa(fo)+`"`)

	// The tree: a node's data, an ephemeral's owner, and the children of
	// a kazoo lock, whose long names must not run into each other.
	browsertest.Step(t, ctx, "open a node", chromedp.Navigate(fview.URL+"/ui/tree?path=/config/app"))
	waitJS(t, ctx, "the node's data", `document.querySelector('pre.data')?.textContent.includes('"pool": 8')`)
	screenshot(t, ctx, "observe-tree.png")
	create(t, admin, "/kazoo", nil)
	for i := range 24 {
		// kazoo's lock names: a uuid4's hex, "__lock__", the sequence.
		create(t, admin, fmt.Sprintf("/kazoo/%016x%016x__lock__%010d", uint64(i+1)*0x9e3779b97f4a7c15, uint64(i+7)*0xbf58476d1ce4e5b9, i), nil)
	}
	browsertest.Step(t, ctx, "open kazoo's lock", chromedp.Navigate(fview.URL+"/ui/tree?path=/kazoo"))
	waitJS(t, ctx, "24 children", `document.querySelectorAll('ul.children li').length === 24`)
	overlaps := browsertest.Eval[int](t, ctx, `(() => {
		const boxes = [...document.querySelectorAll('ul.children li a')].map(a => a.getBoundingClientRect());
		let n = 0;
		for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
			const a = boxes[i], b = boxes[j];
			if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) n++;
		}
		return n;
	})()`)
	if overlaps != 0 {
		t.Errorf("%d pairs of child names overlap", overlaps)
	}
	screenshot(t, ctx, "observe-tree-children.png")

	// Hostile names and data on screen: markup that would run if it were
	// not escaped (and CSP did not stop it), quotes, and invalid UTF-8 in
	// the data, in the tree and in the lock diagram's names. The page must
	// show it all as text and run none of it.
	const hostileDir = `/"><img src=x onerror="window.pwned=1">`
	hostileNode := hostileDir + `/'<img src=y onerror=window.pwned=2>`
	for _, p := range []string{hostileDir, hostileNode} {
		create(t, admin, p, []byte("<script>window.pwned=3</script>\"'&\xff\xfe"))
	}
	evil, _ := follower.Connect(8 * time.Second)
	if err := retry(func() error { _, err := evil.Sync(hostileDir); return err }); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{`<svg onload="window.pwned=4"></svg>`, `"></text><script>window.pwned=5</script>`} {
		if _, err := evil.Create(hostileDir+"/\"><b>x<b>-", []byte(data), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	pwned := `window.pwned !== undefined || document.querySelector('img[src="x"], img[src="y"], svg[onload]') !== null || document.querySelectorAll('script:not([src])').length > 0`
	browsertest.Step(t, ctx, "open the hostile directory", chromedp.Navigate(fview.URL+"/ui/tree?"+url.Values{"path": {hostileDir}, "format": {"text"}}.Encode()))
	waitJS(t, ctx, "the hostile data as text", `document.querySelector('pre.data')?.textContent.includes("<script>window.pwned=3</script>")`)
	waitJS(t, ctx, "the hostile child's name as text", `document.body.textContent.includes("'<img src=y onerror=window.pwned=2>")`)
	if browsertest.Eval[bool](t, ctx, pwned) {
		t.Fatal("hostile znode names or data became markup or ran on the page")
	}
	screenshot(t, ctx, "observe-hostile.png")
	browsertest.Step(t, ctx, "open the hostile queue", chromedp.Navigate(fview.URL+"/ui/locks?"+url.Values{"prefix": {hostileDir}}.Encode()))
	waitJS(t, ctx, "the hostile names in the diagram", `document.body.textContent.includes('<svg onload="window.pwned=4"></svg>') && document.querySelectorAll('g.contender').length >= 2`)
	if browsertest.Eval[bool](t, ctx, pwned) {
		t.Fatal("hostile contender names became markup or ran in the diagram")
	}
	if n := browsertest.Eval[int](t, ctx, textOutsideBoxes); n != 0 {
		t.Errorf("%d texts of the hostile queue's boxes run out of their box", n)
	}
	screenshot(t, ctx, "observe-hostile-locks.png")
	// Their lanes in the sequence diagram, beside a contender whose name
	// is all wide letters: no lane's head runs into the next one's.
	wide, _ := follower.Connect(8 * time.Second)
	if err := retry(func() error { _, err := wide.Sync(hostileDir); return err }); err != nil {
		t.Fatal(err)
	}
	if _, err := wide.Create(hostileDir+"/\"><b>x<b>-", []byte(strings.Repeat("W", 40)), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	browsertest.Step(t, ctx, "open the hostile queue's sequence", chromedp.Navigate(fview.URL+"/ui/sequence?"+url.Values{"path": {hostileDir + "/"}}.Encode()))
	waitJS(t, ctx, "the wide name's lane", `document.querySelectorAll('svg.sequence text.seq-lane-name').length >= 3 && document.querySelector('svg.sequence').textContent.includes("WWW")`)
	if browsertest.Eval[bool](t, ctx, pwned) {
		t.Fatal("hostile contender names became markup or ran in the sequence diagram")
	}
	overlapping := browsertest.Eval[int](t, ctx, `(() => {
		const heads = [...document.querySelectorAll('svg.sequence text.seq-lane-name')].map(e => e.getBBox());
		let n = 0;
		for (let i = 1; i < heads.length; i++) {
			if (heads[i-1].x + heads[i-1].width > heads[i].x) n++;
		}
		return n;
	})()`)
	if overlapping != 0 {
		t.Errorf("%d pairs of lane heads in the sequence diagram run into each other", overlapping)
	}

	// A queue of a thousand contenders: drawn a page at a time, readable,
	// and quick to redraw.
	n := bigQueue(t, e, admin, "/big", 1000)
	browsertest.Step(t, ctx, "open the big queue", chromedp.Navigate(fview.URL+"/ui/locks?parent=/big"))
	waitJS(t, ctx, "its first page", `document.querySelectorAll('section.queue[data-parent="/big"] g.contender').length === 50 && document.body.textContent.includes("`+strconv.Itoa(n)+` in line")`)
	ms := browsertest.Eval[float64](t, ctx, `(async () => {
		const t0 = performance.now();
		const r = await fetch(location.href + "&fragment=1", {cache: "no-store"});
		await r.text();
		return performance.now() - t0;
	})()`)
	t.Logf("a redraw of the 1,000-contender queue's page took %.0f ms", ms)
	if ms > 3000 {
		t.Errorf("a redraw of the 1,000-contender queue took %.0f ms", ms)
	}
	screenshot(t, ctx, "observe-queue-1000.png")

	// A failover seen from the open page: the leader dies; without a
	// reload the header names the new leader (or says this member leads)
	// and the member that no longer answers.
	browsertest.Step(t, ctx, "open the ensemble again", chromedp.Navigate(fview.URL+"/ui/ensemble"))
	waitJS(t, ctx, "the leader in the header", `document.getElementById('head').textContent.includes("leader: node `+strconv.Itoa(li)+`")`)
	drawn = browsertest.Eval[string](t, ctx, `document.getElementById('live').dataset.drawn || "0"`)
	e.Kill(li)
	nl := e.WaitLeader(fi, fo)
	newRole := `document.getElementById('head').textContent.includes("leader: node ` + strconv.Itoa(nl) + `")`
	if nl == fi {
		newRole = `document.getElementById('role').textContent.startsWith("leader")`
	}
	waitJS(t, ctx, "the header to show the new leader and the dead one silent", newRole+` && document.getElementById('head').textContent.includes("node `+strconv.Itoa(li)+` silent")`)
	if now := browsertest.Eval[string](t, ctx, `document.getElementById('live').dataset.drawn`); now == drawn {
		t.Errorf("the header changed without the page redrawing (drawn %s): was it reloaded?", now)
	}
	// The panel's table follows within its snapshot's second.
	waitJS(t, ctx, "the members table to show the new leader", `document.querySelector('table.members tr[data-member="`+strconv.Itoa(nl)+`"] td.mode-leader') !== null`)
	screenshot(t, ctx, "observe-failover.png")
}

// mustNode is the lock node a connection's session owns under parent.
func mustNode(t *testing.T, c *zk.Conn, parent string) string {
	t.Helper()
	children, _, err := c.Children(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range children {
		_, st, err := c.Get(parent + "/" + ch)
		if err == nil && st.EphemeralOwner == c.SessionID() {
			return parent + "/" + ch
		}
	}
	t.Fatalf("no node of session %#x under %s", c.SessionID(), parent)
	return ""
}

// bigQueue queues n contenders under parent, named client-1 to client-n,
// each watching its predecessor: twenty sessions, spread over the members,
// hold fifty nodes each. It returns how many are in line.
func bigQueue(t *testing.T, e *hutchtest.Ensemble, admin *zk.Conn, parent string, n int) int {
	t.Helper()
	create(t, admin, parent, nil)
	const sessions = 20
	bySession := map[int64]*zk.Conn{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for s := range sessions {
		c, _ := e.Member(s%3 + 1).Connect(10 * time.Second)
		mu.Lock()
		bySession[c.SessionID()] = c
		mu.Unlock()
		wg.Go(func() {
			if err := retry(func() error { _, err := c.Sync(parent); return err }); err != nil {
				t.Error(err)
				return
			}
			for i := s; i < n; i += sessions {
				err := retry(func() error {
					_, err := c.Create(parent+"/lock-", []byte(fmt.Sprintf("client-%d", i+1)), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := retry(func() error { _, err := admin.Sync(parent); return err }); err != nil {
		t.Fatal(err)
	}
	children, _, err := admin.Children(parent)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(children)
	// Each waiter's session watches its predecessor; a create retried
	// after a lost connection may have queued one more, which its owner
	// (read from the node) watches for all the same.
	for i := 1; i < len(children); i++ {
		_, st, err := admin.Exists(parent + "/" + children[i])
		if err != nil {
			t.Fatal(err)
		}
		c := bySession[st.EphemeralOwner]
		if c == nil {
			t.Fatalf("%s is owned by no session of the test", children[i])
		}
		if err := retry(func() error { _, _, _, err := c.ExistsW(parent + "/" + children[i-1]); return err }); err != nil {
			t.Fatal(err)
		}
	}
	return len(children)
}

// create makes a persistent node through a session that may lose its
// connection on a loaded machine: it retries, and a node that exists is
// made.
func create(t *testing.T, c *zk.Conn, path string, data []byte) {
	t.Helper()
	err := retry(func() error {
		_, err := c.Create(path, data, 0, zk.WorldACL(zk.PermAll))
		if err == zk.ErrNodeExists {
			return nil
		}
		return err
	})
	if err != nil {
		t.Fatalf("create %q: %v", path, err)
	}
}

// retry calls f until it succeeds, fails otherwise than by a lost
// connection, or 20 s pass.
func retry(f func() error) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := f()
		if err == nil || (err != zk.ErrConnectionClosed && err != zk.ErrNoServer && err != zk.ErrSessionMoved) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
