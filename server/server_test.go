package server

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

var openACL = zk.WorldACL(zk.PermAll)

func waitEvent(tb testing.TB, ch <-chan zk.Event) zk.Event {
	tb.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(10 * time.Second):
		tb.Fatal("no watch event within 10s")
		return zk.Event{}
	}
}

func TestFourLetterRuok(t *testing.T) {
	s := startServer(t, Config{})
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte("ruok")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(nc); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "imok" {
		t.Fatalf("ruok answered %q", buf.String())
	}
}

// TestWatchBeforeRead: a session that set a watch and then reads the changed
// node gets the notification before the read's reply.
func TestWatchBeforeRead(t *testing.T) {
	s := startServer(t, Config{})
	writer, _ := dial(t, s.Addr().String(), 10*time.Second)
	if _, err := writer.Create("/w", []byte("0"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	r := dialRaw(t, s.Addr().String())
	r.handshake(10000, 0, nil)
	r.send(1, wire.OpGetData, &wire.PathWatchRequest{Path: "/w", Watch: true})
	if h, _ := r.reply(); h.Err != wire.CodeOK {
		t.Fatalf("getData: %v", h.Err)
	}
	if _, err := writer.Set("/w", []byte("1"), -1); err != nil {
		t.Fatal(err)
	}
	r.send(2, wire.OpGetData, &wire.PathWatchRequest{Path: "/w"})
	h, d := r.reply()
	if h.Xid != wire.XidNotification {
		t.Fatalf("first frame after the change has xid %d, want the notification", h.Xid)
	}
	var ev wire.WatcherEvent
	ev.Decode(d)
	if ev.Type != wire.EventNodeDataChanged || ev.Path != "/w" {
		t.Fatalf("event %+v", ev)
	}
	h, d = r.reply()
	var resp wire.GetDataResponse
	resp.Decode(d)
	if h.Xid != 2 || string(resp.Data) != "1" {
		t.Fatalf("reply %+v data %q", h, resp.Data)
	}
}

// TestPipelinedFIFO: many requests written at once are answered in order and
// each read sees the session's earlier writes.
func TestPipelinedFIFO(t *testing.T) {
	s := startServer(t, Config{})
	r := dialRaw(t, s.Addr().String())
	r.handshake(10000, 0, nil)
	acl := []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
	var batch []byte
	const n = 200
	for i := int32(0); i < n; i++ {
		batch = append(batch, frame(func(e *wire.Encoder) {
			if i%2 == 0 {
				(&wire.RequestHeader{Xid: i, Type: wire.OpCreate}).Encode(e)
				(&wire.CreateRequest{Path: "/p-", Data: []byte{byte(i)}, ACL: acl, Flags: wire.ModePersistentSequential}).Encode(e)
			} else {
				(&wire.RequestHeader{Xid: i, Type: wire.OpGetChildren}).Encode(e)
				(&wire.PathWatchRequest{Path: "/"}).Encode(e)
			}
		})...)
	}
	r.writeRaw(batch)
	for i := int32(0); i < n; i++ {
		h, d := r.reply()
		if h.Xid != i || h.Err != wire.CodeOK {
			t.Fatalf("reply %d: %+v", i, h)
		}
		if i%2 == 1 {
			var resp wire.GetChildrenResponse
			resp.Decode(d)
			// "/zookeeper" plus the (i+1)/2 nodes created so far.
			if want := int(i+1)/2 + 1; len(resp.Children) != want {
				t.Fatalf("read %d saw %d children, want %d", i, len(resp.Children), want)
			}
		}
	}
}

// TestSessionLifecycle: ephemerals survive a re-attach, go on closeSession,
// and their deletion fires watches.
func TestSessionLifecycle(t *testing.T) {
	s := startServer(t, Config{})
	addr := s.Addr().String()
	owner, _ := dial(t, addr, 10*time.Second)
	watcher, _ := dial(t, addr, 10*time.Second)
	if _, err := owner.Create("/e", nil, zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	_, st, err := watcher.Get("/e")
	if err != nil || st.EphemeralOwner != owner.SessionID() {
		t.Fatalf("stat %+v err %v, want owner %d", st, err, owner.SessionID())
	}
	if _, err := owner.Create("/e/child", nil, 0, openACL); !errors.Is(err, zk.ErrNoChildrenForEphemerals) {
		t.Fatalf("child of ephemeral: %v", err)
	}
	_, _, ch, err := watcher.ExistsW("/e")
	if err != nil {
		t.Fatal(err)
	}
	owner.Close()
	if ev := waitEvent(t, ch); ev.Type != zk.EventNodeDeleted || ev.Path != "/e" {
		t.Fatalf("event %+v", ev)
	}
}

// TestReattachKeepsEphemerals re-attaches a session on a new connection by id
// and password; the old connection is closed and the ephemeral stays.
func TestReattachKeepsEphemerals(t *testing.T) {
	s := startServer(t, Config{})
	addr := s.Addr().String()
	first := dialRaw(t, addr)
	resp := first.handshake(10000, 0, nil)
	first.send(1, wire.OpCreate, &wire.CreateRequest{Path: "/mine", Flags: wire.ModeEphemeral,
		ACL: []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}})
	if h, _ := first.reply(); h.Err != wire.CodeOK {
		t.Fatalf("create: %v", h.Err)
	}
	second := dialRaw(t, addr)
	again := second.handshake(10000, resp.SessionID, resp.Passwd)
	if again.SessionID != resp.SessionID || again.Timeout == 0 {
		t.Fatalf("re-attach answered %+v", again)
	}
	first.expectClosed()
	second.send(2, wire.OpExists, &wire.PathWatchRequest{Path: "/mine"})
	h, d := second.reply()
	var st wire.StatResponse
	st.Decode(d)
	if h.Err != wire.CodeOK || st.Stat.EphemeralOwner != resp.SessionID {
		t.Fatalf("exists after re-attach: %+v %+v", h, st.Stat)
	}
}

func TestContainerAndTTLCleanup(t *testing.T) {
	s := startServer(t, Config{ContainerCheckInterval: 20 * time.Millisecond})
	c, _ := dial(t, s.Addr().String(), 10*time.Second)
	if _, err := c.CreateContainer("/box", nil, zk.FlagContainer, openACL); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/box/item", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTTL("/ttl", nil, zk.FlagTTL, openACL, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("/box/item", -1); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/box", "/ttl"} {
		waitFor(t, 10*time.Second, p+" to be removed", func() bool {
			ok, _, err := c.Exists(p)
			return err == nil && !ok
		})
	}
}

func TestMultiAllOrNothing(t *testing.T) {
	s := startServer(t, Config{})
	c, _ := dial(t, s.Addr().String(), 10*time.Second)
	res, err := c.Multi(
		&zk.CreateRequest{Path: "/m1", Data: []byte("a"), Acl: openACL},
		&zk.CreateRequest{Path: "/m1/x", Acl: openACL},
		&zk.SetDataRequest{Path: "/missing", Data: []byte("b"), Version: -1},
	)
	// ZooKeeper answers a failed multi with header code OK; the results say
	// which op failed, with OK before it and RuntimeInconsistency after it,
	// and go-zookeeper returns the first failing op's error.
	if !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("multi: %v, want the failing op's NoNode", err)
	}
	if len(res) != 3 || res[0].Error != nil || res[1].Error != nil || !errors.Is(res[2].Error, zk.ErrNoNode) {
		t.Fatalf("results %+v", res)
	}
	if ok, _, _ := c.Exists("/m1"); ok {
		t.Fatal("failed multi left /m1 behind")
	}
	res, err = c.Multi(
		&zk.CreateRequest{Path: "/m1", Data: []byte("a"), Acl: openACL},
		&zk.SetDataRequest{Path: "/m1", Data: []byte("b"), Version: 0},
		&zk.CheckVersionRequest{Path: "/m1", Version: 1},
	)
	if err != nil {
		t.Fatalf("multi: %v %+v", err, res)
	}
	if res[0].String != "/m1" || res[1].Stat == nil || res[1].Stat.Version != 1 {
		t.Fatalf("results %+v", res)
	}
}

func TestDigestACL(t *testing.T) {
	s := startServer(t, Config{SuperDigest: tree.DigestID("admin:secret")})
	addr := s.Addr().String()
	alice, _ := dial(t, addr, 10*time.Second)
	if err := alice.AddAuth("digest", []byte("alice:pw")); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Create("/private", []byte("x"), 0, zk.DigestACL(zk.PermAll, "alice", "pw")); err != nil {
		t.Fatal(err)
	}
	bob, _ := dial(t, addr, 10*time.Second)
	if _, _, err := bob.Get("/private"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("bob read: %v, want NoAuth", err)
	}
	if _, _, err := alice.Get("/private"); err != nil {
		t.Fatalf("alice read: %v", err)
	}
	root, _ := dial(t, addr, 10*time.Second)
	if err := root.AddAuth("digest", []byte("admin:secret")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := root.Get("/private"); err != nil {
		t.Fatalf("super read: %v", err)
	}
	if _, _, err := bob.GetACL("/private"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("bob getACL without READ or ADMIN: %v, want NoAuth", err)
	}
	mixed := append(zk.WorldACL(zk.PermRead), zk.DigestACL(zk.PermAll, "alice", "pw")...)
	if _, err := alice.Create("/shared", nil, 0, mixed); err != nil {
		t.Fatal(err)
	}
	acl, _, err := bob.GetACL("/shared")
	if err != nil || len(acl) != 2 || acl[1].ID != "alice:x" {
		t.Fatalf("bob getACL %+v %v: want alice's digest redacted to alice:x", acl, err)
	}
	if acl, _, err = alice.GetACL("/shared"); err != nil || acl[1].ID == "alice:x" {
		t.Fatalf("alice (ADMIN) getACL %+v %v: want the digest itself", acl, err)
	}
}

func TestMaxConnectionsPerIP(t *testing.T) {
	s := startServer(t, Config{MaxClientConnsPerIP: 2})
	a, b := dialRaw(t, s.Addr().String()), dialRaw(t, s.Addr().String())
	a.handshake(10000, 0, nil)
	b.handshake(10000, 0, nil)
	dialRaw(t, s.Addr().String()).expectClosed()
}

func TestLargeData(t *testing.T) {
	s := startServer(t, Config{})
	c, _ := dial(t, s.Addr().String(), 10*time.Second)
	big := bytes.Repeat([]byte{'z'}, DefaultMaxFrameSize-200)
	if _, err := c.Create("/big", big, 0, openACL); err != nil {
		t.Fatalf("create with %d bytes: %v", len(big), err)
	}
	data, _, err := c.Get("/big")
	if err != nil || !bytes.Equal(data, big) {
		t.Fatalf("get: %d bytes, %v", len(data), err)
	}
}
