package monitor_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/hutchtest"
	"github.com/hutchzk/hutch/monitor"
	"github.com/hutchzk/hutch/trace"
)

// TestReplay: after a lock's holder went, the view replayed at the
// holder's close shows the waiter holding; a step back shows the moment
// before: the holder's node with its data, both sessions, and the
// waiter's watch on the holder, which the close fired and the live view
// no longer has; a step forward comes back. Writes after the point (the
// next holder's release, another session) change nothing of it.
func TestReplay(t *testing.T) {
	srv := hutchtest.Start(t)
	view := httptest.NewServer(monitor.New(srv.Server(), monitor.Config{}).UIHandler("127.0.0.1:0"))
	t.Cleanup(view.Close)
	admin, _ := srv.Connect(10 * time.Second)
	if _, err := admin.Create("/l", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	holder, _ := srv.Connect(10 * time.Second)
	waiter, _ := srv.Connect(10 * time.Second)
	first, err := holder.Create("/l/n-", []byte("worker-1"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	second, err := waiter.Create("/l/n-", []byte("worker-2"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := waiter.ExistsW(first); err != nil {
		t.Fatal(err)
	}
	holderID := holder.SessionID()
	srv.ExpireSession(holderID)
	closed := srv.WaitFor("the holder's expiry", hutchtest.Expired(holderID))
	srv.WaitFor("the waiter woken", hutchtest.Delivered("NodeDeleted", first))
	// Later writes: the waiter releases, another session comes.
	if err := waiter.Delete(second, -1); err != nil {
		t.Fatal(err)
	}
	other, _ := srv.Connect(10 * time.Second)
	if _, err := other.Create("/l/n-", []byte("worker-3"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	srv.WaitFor("worker-3's node", hutchtest.Applied("create", "/l/n-0000000002"))

	// The close's transaction is the step: SessionClosed follows it.
	h := srv.Server().Trace().History()
	events, _ := h.Since(0, &trace.Filter{Session: holderID, Kinds: []trace.Kind{trace.TxnApplied}}, 0)
	var closeSeq uint64
	for _, e := range events {
		if e.Op == "closeSession" {
			closeSeq = e.Seq
		}
	}
	if closeSeq == 0 || closed.Seq <= closeSeq {
		t.Fatalf("no closeSession before the close event: %v", events)
	}

	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(view.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	queue := func(body string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`data-session="(0x[0-9a-f]+)" data-wait="([a-z]+)"`).FindAllStringSubmatch(body, -1) {
			out = append(out, m[1]+" "+m[2])
		}
		return out
	}
	hex := func(id int64) string { return "0x" + strconv.FormatInt(id, 16) }
	link := func(body, id string) string {
		m := regexp.MustCompile(`id="` + id + `"|href="([^"]+)" id="` + id + `"`).FindStringSubmatch(body)
		if len(m) < 2 || m[1] == "" {
			t.Fatalf("no %s link in\n%s", id, body)
		}
		return strings.ReplaceAll(m[1], "&amp;", "&")
	}

	after := get("/ui/locks?fragment=1&rpath=/l/&at=" + strconv.FormatUint(closeSeq, 10))
	if got := queue(after); !slices.Equal(got, []string{hex(waiter.SessionID()) + " none"}) {
		t.Fatalf("just after the close: %v\n%s", got, after)
	}
	before := get(link(after, "replay-prev"))
	if got := queue(before); !slices.Equal(got, []string{hex(holderID) + " none", hex(waiter.SessionID()) + " predecessor"}) {
		t.Fatalf("just before the close: %v\n%s", got, before)
	}
	if !strings.Contains(before, "worker-1") || !strings.Contains(before, "worker-2") {
		t.Errorf("the contenders' names from their data are not shown before the close")
	}
	if again := get(link(before, "replay-next")); !slices.Equal(queue(again), queue(after)) {
		t.Errorf("a step forward from before the close: %v, want %v", queue(again), queue(after))
	}
	prev := regexp.MustCompile(`at=(\d+)`).FindStringSubmatch(link(after, "replay-prev"))[1]
	tree := get("/ui/tree?fragment=1&path=/l&rpath=/l/&at=" + prev)
	for _, want := range []string{"n-0000000000", "n-0000000001", "Replayed"} {
		if !strings.Contains(tree, want) {
			t.Errorf("the replayed tree lacks %q:\n%s", want, tree)
		}
	}
	if strings.Contains(tree, "n-0000000002") {
		t.Errorf("the replayed tree shows a node created after the point")
	}
	watches := get("/ui/watches?fragment=1&rpath=/l/&at=" + prev)
	if !strings.Contains(watches, first) {
		t.Errorf("the replayed watches lack the waiter's watch on %s:\n%s", first, watches)
	}
	if live := get("/ui/watches?fragment=1"); strings.Contains(live, first) {
		t.Errorf("the live view still shows the fired watch")
	}
	sessions := get("/ui/sessions?fragment=1&at=" + prev)
	if !strings.Contains(sessions, hex(holderID)) {
		t.Errorf("the replayed sessions lack the holder's")
	}
}
