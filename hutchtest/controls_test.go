package hutchtest

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/trace"
)

// TestExpireSession: the server expires a chosen session as its timeout
// would: its ephemeral goes, another session's watch on it fires, the
// client is told its session expired, and a second client is untouched.
func TestExpireSession(t *testing.T) {
	srv := Start(t)
	victim, events := srv.Connect(10 * time.Second)
	other, _ := srv.Connect(10 * time.Second)
	_, err := victim.Create("/lock", []byte("held"), zk.FlagEphemeral, open)
	must(t, err)
	_, err = other.Create("/mine", nil, zk.FlagEphemeral, open)
	must(t, err)
	ok, _, watch, err := other.ExistsW("/lock")
	must(t, err)
	if !ok {
		t.Fatal("/lock missing")
	}
	id := victim.SessionID()

	srv.ExpireSession(id)

	// Applied when ExpireSession returns: no waiting needed.
	if _, ok := srv.Session(id); ok {
		t.Fatal("session still live after ExpireSession returned")
	}
	if _, ok := srv.Tree()["/lock"]; ok {
		t.Fatal("the expired session's ephemeral is still there")
	}
	waitWatch(t, watch, zk.EventNodeDeleted)
	waitState(t, events, zk.StateExpired)
	if _, ok := srv.Session(other.SessionID()); !ok {
		t.Fatal("the other session went too")
	}
	if _, ok := srv.Tree()["/mine"]; !ok {
		t.Fatal("the other session's ephemeral went too")
	}
	e := srv.WaitFor("the expiry in the trace", Expired(id))
	if e.Session != id || !e.Expired {
		t.Fatalf("trace: %v", e)
	}
	// go-zookeeper starts a new session after an expiry.
	waitState(t, events, zk.StateHasSession)
	if victim.SessionID() == id {
		t.Fatal("client kept its expired session id")
	}
}

// TestDropConnection: a dropped connection is a disconnect, not an
// expiry: the client re-attaches the same session, its ephemeral stays,
// and its watch, set again on reconnect, still fires.
func TestDropConnection(t *testing.T) {
	srv := Start(t)
	c, events := srv.Connect(10 * time.Second)
	writer, _ := srv.Connect(10 * time.Second)
	_, err := c.Create("/eph", nil, zk.FlagEphemeral, open)
	must(t, err)
	_, err = writer.Create("/data", []byte("1"), 0, open)
	must(t, err)
	_, _, watch, err := c.GetW("/data")
	must(t, err)
	id := c.SessionID()
	mark := srv.Mark()

	srv.DropConnection(id)

	waitState(t, events, zk.StateDisconnected)
	waitState(t, events, zk.StateHasSession)
	if c.SessionID() != id {
		t.Fatalf("session changed from %#x to %#x", id, c.SessionID())
	}
	srv.WaitForAfter(mark, "the session re-attached", func(e trace.Event) bool {
		return e.Kind == trace.SessionAttached && e.Session == id
	})
	if _, ok := srv.Tree()["/eph"]; !ok {
		t.Fatal("ephemeral lost with the connection")
	}
	_, err = writer.Set("/data", []byte("2"), -1)
	must(t, err)
	waitWatch(t, watch, zk.EventNodeDataChanged)

	other, _ := srv.Connect(10 * time.Second)
	if n := srv.DropAll(); n != 3 {
		t.Fatalf("DropAll closed %d connections, want 3", n)
	}
	waitState(t, events, zk.StateDisconnected)
	for _, cl := range []*zk.Conn{c, writer, other} {
		waitUntil(t, "a read after DropAll", func() bool {
			_, _, err := cl.Get("/data")
			return err == nil // a request in flight when dropped fails; the client reconnects
		})
	}
	if c.SessionID() != id {
		t.Fatal("DropAll changed a session")
	}
}

// TestPauseResume: a paused server answers nothing and closes nothing,
// so the client's own timeout disconnects it; after Resume it
// re-attaches the same session, which the pause did not expire.
func TestPauseResume(t *testing.T) {
	srv := Start(t, TickTime(100*time.Millisecond))
	c, events := srv.Connect(time.Second)
	_, err := c.Create("/eph", nil, zk.FlagEphemeral, open)
	must(t, err)
	id := c.SessionID()

	srv.Pause()
	done := make(chan error, 1)
	go func() { _, _, err := c.Get("/eph"); done <- err }()
	waitState(t, events, zk.StateDisconnected) // go-zookeeper's read timeout: 2/3 of 1s
	if err := <-done; err == nil {
		t.Fatal("a request to the paused server was answered")
	}
	// Let real time run past the session's deadline (and a tick): a
	// server that was not paused would have expired it by then.
	s, ok := srv.Session(id)
	if !ok {
		t.Fatal("session gone during the pause")
	}
	waitUntil(t, "the session's deadline to pass", func() bool { return time.Now().After(s.Expires.Add(100 * time.Millisecond)) })
	if _, ok := srv.Session(id); !ok {
		t.Fatal("a paused server expired the session")
	}
	srv.Resume()

	waitState(t, events, zk.StateHasSession)
	if c.SessionID() != id {
		t.Fatalf("session %#x replaced by %#x: the pause expired it", id, c.SessionID())
	}
	if _, _, err := c.Get("/eph"); err != nil {
		t.Fatal(err)
	}
}

// TestAdvanceExpiresWithoutSleep: on the fake clock a session expires,
// a TTL node and an emptied container go, exactly when the test moves
// time past them, and not a moment before, with no sleep: a connected
// client's pings run on real time and do not count in fake time.
func TestAdvanceExpiresWithoutSleep(t *testing.T) {
	srv := Start(t, FakeClock())
	c, events := srv.Connect(10 * time.Second) // 10s: within 2s ticks' [4s, 40s]
	_, err := c.Create("/eph", nil, zk.FlagEphemeral, open)
	must(t, err)
	_, err = c.CreateTTL("/ttl", nil, zk.FlagTTL, open, time.Hour)
	must(t, err)
	_, err = c.CreateContainer("/box", nil, zk.FlagContainer, open)
	must(t, err)
	_, err = c.Create("/box/item", nil, 0, open)
	must(t, err)
	must(t, c.Delete("/box/item", -1))
	id := c.SessionID()
	s, _ := srv.Session(id)
	if s.Timeout != 10*time.Second {
		t.Fatalf("negotiated %v", s.Timeout)
	}

	srv.Advance(9 * time.Second)
	if _, ok := srv.Session(id); !ok {
		t.Fatal("session expired before its timeout")
	}
	if _, ok := srv.Tree()["/box"]; ok {
		t.Fatal("empty container kept after cleanup ran")
	}

	srv.Advance(3 * time.Second) // past timeout + one tick
	if _, ok := srv.Session(id); ok {
		t.Fatal("session alive past its timeout in fake time")
	}
	if _, ok := srv.Tree()["/eph"]; ok {
		t.Fatal("ephemeral outlived its session")
	}
	waitState(t, events, zk.StateExpired)
	waitState(t, events, zk.StateHasSession) // go-zookeeper's new session

	if _, ok := srv.Tree()["/ttl"]; !ok {
		t.Fatal("TTL node gone before its hour")
	}
	srv.Advance(time.Hour)
	if _, ok := srv.Tree()["/ttl"]; ok {
		t.Fatal("TTL node kept past its TTL")
	}
	srv.WaitFor("the TTL node's deletion", Applied("deleteContainer", "/ttl"))
	if d := srv.Now().Sub(time.Now()); d < time.Hour {
		t.Fatalf("fake clock only %v ahead of the real one", d)
	}
}

// TestAdvanceNeedsFakeClock: Advance on the real clock fails the test
// with the reason.
func TestAdvanceNeedsFakeClock(t *testing.T) {
	srv := Start(t)
	ft := runFatal(t, func(tb *fatalTB) {
		srv.tb = tb
		srv.Advance(time.Second)
	})
	if ft == "" {
		t.Fatal("Advance on the real clock did not fail")
	}
}

// TestViews: sessions with their timeouts, ephemerals and watches;
// watches by path; a node's data and Stat; the tree as a map.
func TestViews(t *testing.T) {
	srv := Start(t)
	a, _ := srv.Connect(4 * time.Second)
	b, _ := srv.Connect(8 * time.Second)
	_, err := a.Create("/app", []byte("cfg"), 0, open)
	must(t, err)
	_, err = a.Create("/app/a", nil, zk.FlagEphemeral, open)
	must(t, err)
	_, _, _, err = b.GetW("/app")
	must(t, err)
	_, _, _, err = b.ChildrenW("/app")
	must(t, err)
	_, _, _, err = a.ExistsW("/app/b")
	must(t, err)

	sa, ok := srv.Session(a.SessionID())
	if !ok || sa.Timeout != 4*time.Second || !sa.Connected() || len(sa.Ephemerals) != 1 || sa.Ephemerals[0] != "/app/a" {
		t.Fatalf("session a: %+v", sa)
	}
	if sa.Expires.IsZero() {
		t.Fatal("session a has no expiry time")
	}
	sb, _ := srv.Session(b.SessionID())
	// getData and getChildren: one-shot entries in the data and the
	// child table.
	if sb.Timeout != 8*time.Second || len(sb.Ephemerals) != 0 || len(sb.Watches) != 2 {
		t.Fatalf("session b: %+v", sb)
	}
	if d, c := sb.Watches[0], sb.Watches[1]; d.Path != "/app" || d.Child || d.Mode != "standard" || c.Path != "/app" || !c.Child {
		t.Fatalf("b's watches: %+v", sb.Watches)
	}
	on := srv.Watches("/app/b")
	if len(on) != 1 || on[0].Session != a.SessionID() || on[0].Child {
		t.Fatalf("watches on /app/b: %+v", on)
	}
	if all := srv.Watches(); len(all) != 3 {
		t.Fatalf("all watches: %+v", all)
	}

	_, st, err := a.Get("/app")
	must(t, err)
	n, ok := srv.Node("/app")
	if !ok || string(n.Data) != "cfg" || n.Stat.Mzxid != st.Mzxid || n.Stat.Version != st.Version ||
		n.Stat.NumChildren != 1 || len(n.Children) != 1 || n.Children[0] != "a" {
		t.Fatalf("node /app: %+v, client's stat %+v", n, st)
	}
	if _, ok := srv.Node("/nope"); ok {
		t.Fatal("a missing node found")
	}
	tree := srv.Tree()
	if len(tree) != 2 || tree["/app"] != "cfg" || tree["/app/a"] != "" {
		t.Fatalf("tree %v", tree)
	}
	if got := len(srv.Sessions()); got != 2 {
		t.Fatalf("%d sessions", got)
	}
}

// TestTraceOrder: each transaction comes with its zxid, session and path,
// followed by the watch notifications it delivered; a multi lists its
// ops; a subscription filtered by path and session sees only its own.
func TestTraceOrder(t *testing.T) {
	srv := Start(t)
	a, _ := srv.Connect(10 * time.Second)
	b, _ := srv.Connect(10 * time.Second)
	sub := srv.Subscribe(trace.Filter{PathPrefix: "/q/", Session: a.SessionID()})
	_, _, watch, err := b.ExistsW("/q")
	must(t, err)
	_, err = a.Create("/q", nil, 0, open)
	must(t, err)
	waitWatch(t, watch, zk.EventNodeCreated)
	_, err = a.Multi(&zk.CreateRequest{Path: "/q/x-", Flags: zk.FlagSequence, Acl: open},
		&zk.SetDataRequest{Path: "/q", Data: []byte("v"), Version: -1})
	must(t, err)
	_, err = b.Create("/q/by-b", nil, 0, open)
	must(t, err)

	create := srv.WaitFor("create /q", Applied("create", "/q"))
	if create.Session != a.SessionID() || create.Zxid == 0 || create.Err != "" {
		t.Fatalf("create event %v", create)
	}
	delivered := srv.WaitFor("NodeCreated /q", Delivered("NodeCreated", "/q"))
	if delivered.Zxid != create.Zxid || delivered.Session != b.SessionID() || delivered.Seq != create.Seq+1 {
		t.Fatalf("watch event %v does not follow %v", delivered, create)
	}
	multi := srv.WaitFor("the multi", Applied("multi", ""))
	if len(multi.Ops) != 2 || multi.Ops[0].Path != "/q/x-0000000000" || multi.Ops[1].Op != "setData" || multi.Zxid != create.Zxid+1 {
		t.Fatalf("multi event %v", multi)
	}
	failed := false
	_, err = a.Create("/q", nil, 0, open)
	failed = errors.Is(err, zk.ErrNodeExists)
	if !failed {
		t.Fatalf("second create: %v", err)
	}
	dup := srv.WaitForAfter(srv.Mark()-1, "the failed create", Applied("create", "/q"))
	if dup.Err != "NODEEXISTS" {
		t.Fatalf("failed create traced as %v", dup)
	}

	// The subscription: a's events under /q/ only (the multi), not b's.
	select {
	case e := <-sub.Events():
		if e.Op != "multi" || e.Session != a.SessionID() {
			t.Fatalf("subscription got %v", e)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("subscription got nothing")
	}
	select {
	case e := <-sub.Events():
		t.Fatalf("subscription got %v, which its filter leaves out", e)
	default:
	}
	if sub.Dropped() != 0 {
		t.Fatalf("%d dropped", sub.Dropped())
	}
}
