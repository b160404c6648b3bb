package server

import (
	"testing"
	"time"

	"github.com/hutchzk/hutch/wire"
)

func readEvent(tb testing.TB, r *rawClient) wire.WatcherEvent {
	tb.Helper()
	h, d := r.reply()
	if h.Xid != wire.XidNotification {
		tb.Fatalf("frame xid %d, want a notification", h.Xid)
	}
	var ev wire.WatcherEvent
	ev.Decode(d)
	return ev
}

// TestSetWatchesAfterReconnect: a client that was away re-arms its watches
// and gets, before the setWatches reply, the events it missed.
func TestSetWatchesAfterReconnect(t *testing.T) {
	s := startServer(t, Config{})
	addr := s.Addr().String()
	writer, _ := dial(t, addr, 10*time.Second)
	for _, p := range []string{"/changed", "/same", "/gone"} {
		if _, err := writer.Create(p, nil, 0, openACL); err != nil {
			t.Fatal(err)
		}
	}
	first := dialRaw(t, addr)
	sess := first.handshake(10000, 0, nil)
	first.send(1, wire.OpExists, &wire.PathWatchRequest{Path: "/"})
	h, _ := first.reply()
	seen := h.Zxid
	_ = first.nc.Close()

	if _, err := writer.Set("/changed", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	if err := writer.Delete("/gone", -1); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Create("/born", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}

	second := dialRaw(t, addr)
	if resp := second.handshake(10000, sess.SessionID, sess.Passwd); resp.Timeout == 0 {
		t.Fatal("re-attach refused")
	}
	second.send(wire.XidSetWatches, wire.OpSetWatches, &wire.SetWatchesRequest{
		RelativeZxid: seen,
		DataWatches:  []string{"/changed", "/same", "/gone"},
		ExistWatches: []string{"/born"},
		ChildWatches: []string{},
	})
	want := map[string]wire.EventType{"/changed": wire.EventNodeDataChanged, "/gone": wire.EventNodeDeleted, "/born": wire.EventNodeCreated}
	for range len(want) {
		ev := readEvent(t, second)
		if want[ev.Path] != ev.Type {
			t.Fatalf("event %+v not among %v", ev, want)
		}
		delete(want, ev.Path)
	}
	if h, _ := second.reply(); h.Xid != wire.XidSetWatches || h.Err != wire.CodeOK {
		t.Fatalf("setWatches reply %+v", h)
	}
	// /same was unchanged: its watch is armed again and fires on the next change.
	if _, err := writer.Set("/same", []byte("y"), -1); err != nil {
		t.Fatal(err)
	}
	if ev := readEvent(t, second); ev.Type != wire.EventNodeDataChanged || ev.Path != "/same" {
		t.Fatalf("re-armed watch fired %+v", ev)
	}
}

// TestPersistentRecursiveWatch: addWatch in recursive mode sees creates,
// changes and deletes below the path, keeps firing, and never reports
// NodeChildrenChanged.
func TestPersistentRecursiveWatch(t *testing.T) {
	s := startServer(t, Config{})
	addr := s.Addr().String()
	writer, _ := dial(t, addr, 10*time.Second)
	if _, err := writer.Create("/r", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	r := dialRaw(t, addr)
	r.handshake(10000, 0, nil)
	r.send(1, wire.OpAddWatch, &wire.AddWatchRequest{Path: "/r", Mode: wire.AddWatchModePersistentRecursive})
	if h, _ := r.reply(); h.Err != wire.CodeOK {
		t.Fatalf("addWatch: %v", h.Err)
	}
	ops := []func() error{
		func() error { _, err := writer.Create("/r/a", nil, 0, openACL); return err },
		func() error { _, err := writer.Create("/r/a/b", nil, 0, openACL); return err },
		func() error { _, err := writer.Set("/r/a/b", []byte("1"), -1); return err },
		func() error { return writer.Delete("/r/a/b", -1) },
	}
	want := []wire.WatcherEvent{
		{Type: wire.EventNodeCreated, Path: "/r/a"},
		{Type: wire.EventNodeCreated, Path: "/r/a/b"},
		{Type: wire.EventNodeDataChanged, Path: "/r/a/b"},
		{Type: wire.EventNodeDeleted, Path: "/r/a/b"},
	}
	for i, op := range ops {
		if err := op(); err != nil {
			t.Fatal(err)
		}
		ev := readEvent(t, r)
		if ev.Type != want[i].Type || ev.Path != want[i].Path || ev.State != wire.StateSyncConnected {
			t.Fatalf("event %d: %+v, want %+v", i, ev, want[i])
		}
	}
	r.send(2, wire.OpRemoveWatches, &wire.RemoveWatchesRequest{Path: "/r", Type: wire.WatcherTypeAny})
	if h, _ := r.reply(); h.Err != wire.CodeOK {
		t.Fatalf("removeWatches: %v", h.Err)
	}
	r.send(3, wire.OpCheckWatches, &wire.RemoveWatchesRequest{Path: "/r", Type: wire.WatcherTypeAny})
	if h, _ := r.reply(); h.Err != wire.CodeNoWatcher {
		t.Fatalf("checkWatches after removal: %v, want NoWatcher", h.Err)
	}
	if _, err := writer.Create("/r/c", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	r.send(4, wire.OpPing, nil)
	if h, _ := r.reply(); h.Xid != wire.XidPing {
		t.Fatalf("after removal got %+v, want only the ping reply", h)
	}
}

// TestWhoAmIAndEphemerals: whoAmI lists the connection's identities, and
// getEphemerals the session's own ephemerals under a prefix.
func TestWhoAmIAndEphemerals(t *testing.T) {
	s := startServer(t, Config{})
	r := dialRaw(t, s.Addr().String())
	r.handshake(10000, 0, nil)
	r.send(wire.XidAuth, wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte("alice:pw")})
	if h, _ := r.reply(); h.Err != wire.CodeOK {
		t.Fatalf("auth: %v", h.Err)
	}
	r.send(1, wire.OpWhoAmI, nil)
	h, d := r.reply()
	var who wire.WhoAmIResponse
	who.Decode(d)
	got := map[string]string{}
	for _, ci := range who.Infos {
		got[ci.AuthScheme] = ci.User
	}
	// The digest identity's user alone, as ZooKeeper 3.8 reports it.
	if h.Err != wire.CodeOK || got["ip"] != "127.0.0.1" || got["digest"] != "alice" || len(got) != 2 {
		t.Fatalf("whoAmI %+v %v", who, h.Err)
	}
	acl := []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
	for i, p := range []string{"/app", "/app/e1", "/other"} {
		flags := wire.ModeEphemeral
		if i == 0 {
			flags = wire.ModePersistent
		}
		r.send(int32(2+i), wire.OpCreate, &wire.CreateRequest{Path: p, ACL: acl, Flags: flags})
		if h, _ := r.reply(); h.Err != wire.CodeOK {
			t.Fatalf("create %s: %v", p, h.Err)
		}
	}
	for _, tt := range []struct {
		prefix string
		want   int
	}{{"/", 2}, {"/app", 1}, {"/nothing", 0}} {
		r.send(9, wire.OpGetEphemerals, &wire.PathRequest{Path: tt.prefix})
		h, d := r.reply()
		var eph wire.GetEphemeralsResponse
		eph.Decode(d)
		if h.Err != wire.CodeOK || len(eph.Paths) != tt.want {
			t.Fatalf("getEphemerals %q: %v %v, want %d paths", tt.prefix, eph.Paths, h.Err, tt.want)
		}
	}
}
