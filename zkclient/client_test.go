package zkclient_test

import (
	"slices"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/faultnet"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkclient"
)

// TestRequests runs every request once, successful and failing, and checks
// results and error codes.
func TestRequests(t *testing.T) {
	forEachServer(t, func(t *testing.T, addr string) {
		c, _ := dial(t, zkclient.Config{Servers: []string{addr}})

		p, err := c.Create("/r", []byte("data"), open, wire.ModePersistent, 0)
		if err != nil || p != "/r" {
			t.Fatalf("create /r = %q, %v", p, err)
		}
		_, err = c.Create("/r", nil, open, wire.ModePersistent, 0)
		wantCode(t, "create again", err, wire.CodeNodeExists, "/r")
		_, err = c.Create("/r/bad", nil, nil, wire.ModePersistent, 0)
		wantCode(t, "create with no ACL", err, wire.CodeInvalidACL, "")
		seq, err := c.Create("/r/s-", nil, open, wire.ModeEphemeralSequential, 0)
		if err != nil || seq != "/r/s-0000000000" {
			t.Errorf("ephemeral sequential = %q, %v", seq, err)
		}
		if _, err := c.Create("/r/box", nil, open, wire.ModeContainer, 0); err != nil {
			t.Errorf("container: %v", err)
		}
		if _, err := c.Create("/r/ttl", nil, open, wire.ModePersistentWithTTL, 60000); err != nil {
			t.Errorf("ttl: %v", err)
		}
		var te *zkclient.TTLError
		if _, err := c.Create("/r/ttl0", nil, open, wire.ModePersistentWithTTL, 0); !asTTL(err, &te) {
			t.Errorf("ttl 0: %v, want a TTLError", err)
		}

		data, st, err := c.Get("/r", false)
		if err != nil || string(data) != "data" || st.DataLength != 4 || st.NumChildren != 3 {
			t.Errorf("get /r = %q %+v %v", data, st, err)
		}
		_, _, err = c.Get("/nope", false)
		wantCode(t, "get missing", err, wire.CodeNoNode, "/nope")
		st, err = c.Set("/r", []byte("new"), st.Version)
		if err != nil || st.Version != 1 {
			t.Errorf("set /r = %+v, %v", st, err)
		}
		_, err = c.Set("/r", nil, 7)
		wantCode(t, "set bad version", err, wire.CodeBadVersion, "/r")
		if _, err := c.Exists("/r", false); err != nil {
			t.Errorf("exists /r: %v", err)
		}
		_, err = c.Exists("/nope", false)
		wantCode(t, "exists missing", err, wire.CodeNoNode, "/nope")

		kids, err := c.Children("/r", false)
		slices.Sort(kids)
		if err != nil || !slices.Equal(kids, []string{"box", "s-0000000000", "ttl"}) {
			t.Errorf("children /r = %v, %v", kids, err)
		}
		kids, st, err = c.ChildrenStat("/r", false)
		if err != nil || len(kids) != 3 || st.NumChildren != 3 {
			t.Errorf("children2 /r = %v %+v %v", kids, st, err)
		}
		if n, err := c.AllChildrenNumber("/r"); err != nil || n != 3 {
			t.Errorf("all children of /r = %d, %v", n, err)
		}
		if eph, err := c.Ephemerals("/r"); err != nil || !slices.Equal(eph, []string{"/r/s-0000000000"}) {
			t.Errorf("ephemerals under /r = %v, %v", eph, err)
		}
		wantCode(t, "delete non-empty", c.Delete("/r", -1), wire.CodeNotEmpty, "/r")

		readOnly := []wire.ACL{{Perms: wire.PermRead, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
		if st, err := c.SetACL("/r/box", readOnly, 0); err != nil || st.Aversion != 1 {
			t.Errorf("setACL = %+v, %v", st, err)
		}
		acl, _, err := c.GetACL("/r/box")
		if err != nil || !slices.Equal(acl, readOnly) {
			t.Errorf("getACL = %v, %v", acl, err)
		}
		_, err = c.Create("/r/box/x", nil, open, wire.ModePersistent, 0)
		wantCode(t, "create under read-only", err, wire.CodeNoAuth, "/r/box/x")
		if err := c.Sync("/r"); err != nil {
			t.Errorf("sync: %v", err)
		}
		if who, err := c.WhoAmI(); err != nil || !slices.Equal(who, []wire.ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}}) {
			t.Errorf("whoami = %v, %v", who, err)
		}

		// A failed multi changes nothing and names the failing op.
		res, err := c.Multi(zkclient.DeleteOp("/r/ttl", -1), zkclient.DeleteOp("/r/nope", -1))
		wantCode(t, "multi with a missing node", err, wire.CodeNoNode, "")
		if len(res) != 2 || res[1].Err != wire.CodeNoNode {
			t.Errorf("failed multi results = %+v", res)
		}
		if _, err := c.Exists("/r/ttl", false); err != nil {
			t.Errorf("/r/ttl after failed multi: %v", err)
		}
		res, err = c.Multi(zkclient.CheckOp("/r", 1), zkclient.SetOp("/r", []byte("m"), 1), zkclient.DeleteOp("/r/ttl", -1),
			zkclient.CreateOp("/r/m", nil, open, wire.ModePersistent))
		if err != nil || len(res) != 4 || res[1].Stat.Version != 2 || res[3].Path != "/r/m" {
			t.Errorf("multi = %+v, %v", res, err)
		}

		// The client refuses bad paths before sending, with Java's words.
		_, _, err = c.Get("/r/", false)
		if pe, ok := err.(*zkclient.PathError); !ok || pe.Reason != "Path must not end with / character" {
			t.Errorf("get /r/: %v", err)
		}
	})
}

func asTTL(err error, target **zkclient.TTLError) bool {
	e, ok := err.(*zkclient.TTLError)
	*target = e
	return ok
}

// TestWatches checks each kind of watch: one-shot ones fire once, the
// Watcher sees an event before the reply that followed it returns, and
// persistent ones keep firing until removed.
func TestWatches(t *testing.T) {
	forEachServer(t, func(t *testing.T, addr string) {
		a, ev := dial(t, zkclient.Config{Servers: []string{addr}})
		b, _ := dial(t, zkclient.Config{Servers: []string{addr}})
		mustCreate(t, a, "/w", "")

		// A's own change: the event is handled before Set returns.
		if _, _, err := a.Get("/w", true); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Set("/w", []byte("1"), -1); err != nil {
			t.Fatal(err)
		}
		if got := ev.all(); !slices.Contains(got, nodeEvent(wire.EventNodeDataChanged, "/w")) {
			t.Fatalf("events when set returned: %v, want NodeDataChanged /w already handled", got)
		}
		// Consumed: another change fires nothing on /w, as the child
		// watch set now shows by firing alone.
		if _, err := a.Set("/w", []byte("2"), -1); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Children("/w", true); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, b, "/w/c", "")
		ev.waitFor(t, nodeEvent(wire.EventNodeChildrenChanged, "/w"))
		_, err := a.Exists("/w/later", true)
		wantCode(t, "exists /w/later", err, wire.CodeNoNode, "/w/later")
		mustCreate(t, b, "/w/later", "")
		ev.waitFor(t, nodeEvent(wire.EventNodeCreated, "/w/later"))
		if n := count(ev.all(), nodeEvent(wire.EventNodeDataChanged, "/w")); n != 1 {
			t.Errorf("NodeDataChanged /w seen %d times, want 1: %v", n, ev.all())
		}

		// Persistent recursive: every change below, every time.
		if err := a.AddWatch("/w", true); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if _, err := b.Set("/w/c", []byte{byte(i)}, -1); err != nil {
				t.Fatal(err)
			}
		}
		mustCreate(t, b, "/w/c/d", "")
		ev.waitFor(t, nodeEvent(wire.EventNodeCreated, "/w/c/d"))
		if n := count(ev.all(), nodeEvent(wire.EventNodeDataChanged, "/w/c")); n != 2 {
			t.Errorf("NodeDataChanged /w/c seen %d times, want 2", n)
		}
		if err := a.RemoveWatches("/w", wire.WatcherTypeAny); err != nil {
			t.Fatalf("removeWatches: %v", err)
		}
		wantCode(t, "removeWatches again", a.RemoveWatches("/w", wire.WatcherTypeAny), wire.CodeNoWatcher, "/w")
		// Removed: B's next change fires nothing for A, while a plain
		// persistent watch set afterwards on /w does fire.
		if _, err := b.Set("/w/c", []byte("x"), -1); err != nil {
			t.Fatal(err)
		}
		if err := a.AddWatch("/w", false); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Set("/w", []byte("x"), -1); err != nil {
			t.Fatal(err)
		}
		ev.waitFor(t, nodeEvent(wire.EventNodeDataChanged, "/w"))
		if n := count(ev.all(), nodeEvent(wire.EventNodeDataChanged, "/w/c")); n != 2 {
			t.Errorf("NodeDataChanged /w/c seen %d times after the watch was removed, want still 2", n)
		}
	})
}

func count(evs []zkclient.Event, want zkclient.Event) int {
	n := 0
	for _, e := range evs {
		if e == want {
			n++
		}
	}
	return n
}

// TestAuth checks that an identity added is the server's, and that a
// refused one ends the session as the Java client's does.
func TestAuth(t *testing.T) {
	forEachServer(t, func(t *testing.T, addr string) {
		c, ev := dial(t, zkclient.Config{Servers: []string{addr}})
		if err := c.AddAuth("digest", []byte("u:p")); err != nil {
			t.Fatalf("addauth digest: %v", err)
		}
		who, err := c.WhoAmI()
		if err != nil || len(who) != 2 || who[1].AuthScheme != "digest" {
			t.Errorf("whoami after addauth = %v, %v", who, err)
		}
		err = c.AddAuth("nosuchscheme", []byte("x"))
		wantCode(t, "addauth with an unknown scheme", err, wire.CodeAuthFailed, "")
		// The event was handled before AddAuth returned.
		if got := ev.all(); !slices.Contains(got, stateEvent(wire.StateAuthFailed)) {
			t.Errorf("events after a refused addauth: %v", got)
		}
		if s := c.State(); s != zkclient.StateAuthFailed || s.Alive() {
			t.Errorf("state after a refused addauth: %v", s)
		}
		_, _, err = c.Get("/", false)
		wantCode(t, "get after auth failed", err, wire.CodeAuthFailed, "/")
	})
}

// TestReconnect severs the connection: requests fail with CONNECTIONLOSS
// while it is down, then the client re-attaches the same session, sends
// its identities again and re-arms its watches; a data watch fires for
// the change made meanwhile.
func TestReconnect(t *testing.T) {
	forEachServer(t, func(t *testing.T, addr string) {
		proxy := faultnet.StartProxy(t, addr)
		a, ev := dial(t, zkclient.Config{Servers: []string{proxy.Addr()}, SessionTimeout: 2 * time.Second})
		b, _ := dial(t, zkclient.Config{Servers: []string{addr}})
		mustCreate(t, b, "/x", "")
		mustCreate(t, b, "/p", "")
		if err := a.AddAuth("digest", []byte("u:p")); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Create("/eph", nil, open, wire.ModeEphemeral, 0); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Get("/x", true); err != nil {
			t.Fatal(err)
		}
		if err := a.AddWatch("/p", true); err != nil {
			t.Fatal(err)
		}
		id := a.SessionID()

		proxy.Sever()
		ev.waitFor(t, stateEvent(wire.StateDisconnected))
		_, _, err := a.Get("/x", false)
		wantCode(t, "get while severed", err, wire.CodeConnectionLoss, "/x")
		if _, err := b.Set("/x", []byte("changed"), -1); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, b, "/p/new", "")
		proxy.Heal()

		reconnected := ev.waitFor(t, stateEvent(wire.StateSyncConnected))
		if i := ev.waitFor(t, nodeEvent(wire.EventNodeDataChanged, "/x")); i < reconnected {
			t.Errorf("NodeDataChanged /x before the reconnection: %v", ev.all())
		}
		if got := a.SessionID(); got != id {
			t.Errorf("session after reconnect 0x%x, want the same 0x%x", got, id)
		}
		if !a.WaitConnected(waitLong) {
			t.Fatalf("not connected after heal: %v", a.State())
		}
		who, err := a.WhoAmI()
		if err != nil || !slices.ContainsFunc(who, func(i wire.ClientInfo) bool { return i.AuthScheme == "digest" }) {
			t.Errorf("whoami after reconnect = %v, %v; want the digest identity again", who, err)
		}
		if _, err := b.Exists("/eph", false); err != nil {
			t.Errorf("A's ephemeral after reconnect: %v", err)
		}
		// The persistent watch is armed again; as in ZooKeeper, it says
		// nothing of what changed below /p while the client was away.
		if _, err := b.Set("/p/new", []byte("x"), -1); err != nil {
			t.Fatal(err)
		}
		ev.waitFor(t, nodeEvent(wire.EventNodeDataChanged, "/p/new"))
	})
}

// TestExpiry keeps the client away past its session timeout: the server
// expires the session, and on reconnecting the client learns it, reports
// Expired and fails every request with SESSIONEXPIRED.
func TestExpiry(t *testing.T) {
	forEachServer(t, func(t *testing.T, addr string) {
		proxy := faultnet.StartProxy(t, addr)
		a, ev := dial(t, zkclient.Config{Servers: []string{proxy.Addr()}})
		b, _ := dial(t, zkclient.Config{Servers: []string{addr}})
		if _, err := a.Create("/eph", nil, open, wire.ModeEphemeral, 0); err != nil {
			t.Fatal(err)
		}
		proxy.Sever()
		deadline := time.Now().Add(waitLong)
		for {
			_, err := b.Exists("/eph", false)
			if zkclient.IsCode(err, wire.CodeNoNode) {
				break // the session has expired
			}
			if time.Now().After(deadline) {
				t.Fatalf("A's ephemeral still there %v after severing: %v", waitLong, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		proxy.Heal()
		ev.waitFor(t, stateEvent(wire.StateExpired))
		select {
		case <-a.Ended():
		case <-time.After(waitLong):
			t.Fatal("client still running after expiry")
		}
		if s := a.State(); s != zkclient.StateClosed {
			t.Errorf("state after expiry: %v", s)
		}
		_, _, err := a.Get("/", false)
		wantCode(t, "get after expiry", err, wire.CodeSessionExpired, "/")
	})
}

// TestPings leaves a session idle for three session timeouts: pings keep
// it, and its connection, alive.
func TestPings(t *testing.T) {
	forEachServer(t, func(t *testing.T, addr string) {
		a, ev := dial(t, zkclient.Config{Servers: []string{addr}})
		b, _ := dial(t, zkclient.Config{Servers: []string{addr}})
		if _, err := a.Create("/eph", nil, open, wire.ModeEphemeral, 0); err != nil {
			t.Fatal(err)
		}
		idle := 3 * a.SessionTimeout()
		time.Sleep(idle) // the point is to let time pass with no request
		if _, err := b.Exists("/eph", false); err != nil {
			t.Errorf("A's ephemeral after %v idle: %v", idle, err)
		}
		if got := ev.all(); len(got) != 1 {
			t.Errorf("events while idle: %v, want only the first SyncConnected", got)
		}
	})
}

// TestClose closes the session at once (its ephemerals go with it) and
// reports Closed.
func TestClose(t *testing.T) {
	forEachServer(t, func(t *testing.T, addr string) {
		a, ev := dial(t, zkclient.Config{Servers: []string{addr}})
		b, _ := dial(t, zkclient.Config{Servers: []string{addr}})
		if _, err := a.Create("/eph", nil, open, wire.ModeEphemeral, 0); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		_, err := b.Exists("/eph", false)
		wantCode(t, "A's ephemeral after close", err, wire.CodeNoNode, "/eph")
		if got := ev.all(); !slices.Equal(got, []zkclient.Event{stateEvent(wire.StateSyncConnected), stateEvent(wire.StateClosed)}) {
			t.Errorf("events = %v, want SyncConnected then Closed", got)
		}
		_, _, err = a.Get("/", false)
		wantCode(t, "get after close", err, wire.CodeSessionExpired, "/")
	})
}

// TestServers connects through a connect string whose first reachable
// server is not the first listed.
func TestServers(t *testing.T) {
	forEachServer(t, func(t *testing.T, addr string) {
		dead := faultnet.StartProxy(t, addr)
		dead.Sever()
		servers, err := zkclient.ParseServers(dead.Addr() + "," + addr)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := dial(t, zkclient.Config{Servers: servers})
		if _, _, err := c.Get("/", false); err != nil {
			t.Errorf("get / through %v: %v", servers, err)
		}
	})
}

func TestParseServers(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"127.0.0.1:2181", []string{"127.0.0.1:2181"}, true},
		{"a:1, b:2,,c", []string{"a:1", "b:2", "c:2181"}, true},
		{"a:1/chroot", nil, false},
		{" , ", nil, false},
	} {
		got, err := zkclient.ParseServers(c.in)
		if (err == nil) != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("ParseServers(%q) = %v, %v; want %v (ok %v)", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestEventString(t *testing.T) {
	for _, c := range []struct {
		ev   zkclient.Event
		want string
	}{
		{nodeEvent(wire.EventNodeDataChanged, "/a"), "WatchedEvent state:SyncConnected type:NodeDataChanged path:/a"},
		{stateEvent(wire.StateExpired), "WatchedEvent state:Expired type:None path:null"},
		{stateEvent(wire.StateDisconnected), "WatchedEvent state:Disconnected type:None path:null"},
		{nodeEvent(wire.EventPersistentWatchRemoved, "/b"), "WatchedEvent state:SyncConnected type:PersistentWatchRemoved path:/b"},
	} {
		if got := c.ev.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.ev, got, c.want)
		}
	}
}
