package server

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/monitor"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

var _ monitor.Source = (*Server)(nil)

var worldACL = []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}

// TestSnapshot: a snapshot reads the parts asked for, and only those,
// from the server's own state: its connections, its sessions with the
// connection each is attached through and the timer this node runs for
// it, its watches with their kind, and the tree's digests.
func TestSnapshot(t *testing.T) {
	s := startServer(t, Config{})
	nodes := s.Stats().Nodes
	r := dialRaw(t, s.Addr().String())
	resp := r.handshake(20000, 0, nil)
	sid := resp.SessionID
	open := []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
	r.send(1, wire.OpCreate, &wire.CreateRequest{Path: "/e", ACL: open, Flags: wire.ModeEphemeral})
	r.send(2, wire.OpGetData, &wire.PathWatchRequest{Path: "/e", Watch: true})
	r.send(3, wire.OpGetChildren, &wire.PathWatchRequest{Path: "/", Watch: true})
	r.send(4, wire.OpAddWatch, &wire.AddWatchRequest{Path: "/p", Mode: wire.AddWatchModePersistentRecursive})
	for range 4 {
		if h, _ := r.reply(); h.Err != wire.CodeOK {
			t.Fatalf("reply %+v", h)
		}
	}

	header := s.Snapshot(0)
	if !header.Serving || header.Mode != membership.Standalone || header.Server.ClientAddr != s.Addr().String() ||
		header.Server.MaxSessionTimeout != s.cfg.MaxSessionTimeout || header.Taken.Before(header.Server.Started) {
		t.Errorf("header: %+v", header)
	}
	if header.Stats.Nodes != 0 || header.Connections != nil || header.Sessions != nil || header.Watches != nil || header.Digests.Zxid != 0 {
		t.Errorf("parts not asked for were read: %+v", header)
	}

	snap := s.Snapshot(monitor.PartStats | monitor.PartConnections | monitor.PartSessions | monitor.PartWatches | monitor.PartDigests)
	if snap.Stats.Nodes != nodes+1 || snap.Stats.Ephemerals != 1 || snap.Stats.Sessions != 1 || snap.Stats.Watches != 4 {
		t.Errorf("stats: %+v", snap.Stats)
	}
	if len(snap.Connections) != 1 || snap.Connections[0].Session != sid || snap.Connections[0].Remote != r.nc.LocalAddr().String() {
		t.Fatalf("connections: %+v", snap.Connections)
	}
	want := monitor.Session{ID: sid, Timeout: 20 * time.Second, Remote: r.nc.LocalAddr().String(), Ephemerals: []string{"/e"}}
	if len(snap.Sessions) != 1 {
		t.Fatalf("sessions: %+v", snap.Sessions)
	}
	got := snap.Sessions[0]
	if exp := got.Expires; exp.Before(snap.Taken) || exp.After(snap.Taken.Add(20*time.Second+s.cfg.TickTime)) {
		t.Errorf("session timer fires at %v, %v after the snapshot", exp, exp.Sub(snap.Taken))
	}
	if heard := got.Expires.Sub(got.LastHeard); heard < got.Timeout || heard > got.Timeout+s.cfg.TickTime ||
		got.LastHeard.After(snap.Taken) || got.Node != s.nodeID || got.WatchCount != 4 || !slices.Equal(got.Auth, []string{"ip:127.0.0.1"}) {
		t.Errorf("session %+v: want last heard within a tick of a timeout before expiry, node %d, 4 watches, ip identity", got, s.nodeID)
	}
	got.Expires = time.Time{}
	if !equalSession(got, want) {
		t.Errorf("session %+v, want %+v", got, want)
	}
	watches := map[monitor.Watch]bool{}
	for _, w := range snap.Watches {
		if w.Session != sid || w.Watcher != snap.Connections[0].ID {
			t.Errorf("watch %+v not of session %#x", w, sid)
		}
		w.Session, w.Watcher = 0, 0
		watches[w] = true
	}
	for _, w := range []monitor.Watch{
		{Path: "/e", Mode: "standard"}, {Path: "/", Child: true, Mode: "standard"},
		{Path: "/p", Mode: "persistentRecursive"}, {Path: "/p", Child: true, Mode: "persistentRecursive"},
	} {
		if !watches[w] {
			t.Errorf("no watch %+v in %+v", w, snap.Watches)
		}
	}
	if d, z := s.Digest(); snap.Digests.Tree != d || snap.Digests.Zxid != z || z != snap.Stats.LastZxid {
		t.Errorf("digests %+v, server %x at %#x", snap.Digests, d, z)
	}
}

// TestSnapshotSessionsInTimerOrder: sessions come in the order their
// timers fire, whatever order their ids have, each with its own details;
// a closed one is gone.
func TestSnapshotSessionsInTimerOrder(t *testing.T) {
	s := startServer(t, Config{MaxSessionTimeout: time.Minute})
	var ids []int64
	for _, ms := range []int32{40000, 10000, 30000, 20000, 50000} {
		r := dialRaw(t, s.Addr().String())
		ids = append(ids, r.handshake(ms, 0, nil).SessionID)
		if ms == 50000 {
			r.nc.Close()
		}
	}
	if err := s.ExpireSession(ids[4]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the fifth session closed", func() bool { return s.Stats().Sessions == 4 })
	snap := s.Snapshot(monitor.PartSessions)
	var got []int64
	for i, se := range snap.Sessions {
		got = append(got, se.ID)
		if i > 0 && se.Expires.Before(snap.Sessions[i-1].Expires) {
			t.Errorf("session %d expires at %v, before the one before it (%v)", i, se.Expires, snap.Sessions[i-1].Expires)
		}
		if se.Remote == "" || se.Expires.Sub(se.LastHeard) < se.Timeout {
			t.Errorf("session %+v: no client, or last heard less than a timeout before expiry", se)
		}
	}
	if want := []int64{ids[1], ids[3], ids[2], ids[0]}; !slices.Equal(got, want) {
		t.Errorf("sessions %#x, want %#x (by timeout)", got, want)
	}
}

// TestSnapshotAuthFollowsAddAuth: a session's identities in a snapshot
// are those of its connection when the snapshot is taken, a digest's user
// without its password, also after a snapshot has shown them.
func TestSnapshotAuthFollowsAddAuth(t *testing.T) {
	s := startServer(t, Config{})
	cl, _ := dial(t, s.Addr().String(), 10*time.Second)
	auth := func() []string {
		for _, se := range s.Snapshot(monitor.PartSessions).Sessions {
			if se.ID == cl.SessionID() {
				return se.Auth
			}
		}
		t.Fatalf("no session %#x in the snapshot", cl.SessionID())
		return nil
	}
	if got := auth(); !slices.Equal(got, []string{"ip:127.0.0.1"}) {
		t.Errorf("identities %q before addAuth", got)
	}
	if err := cl.AddAuth("digest", []byte("alice:secret")); err != nil {
		t.Fatal(err)
	}
	if got := auth(); len(got) != 2 || !slices.Contains(got, "ip:127.0.0.1") || !slices.Contains(got, "digest:alice") {
		t.Errorf("identities %q after addAuth, want ip:127.0.0.1 and digest:alice", got)
	}
}

func equalSession(a, b monitor.Session) bool {
	return a.ID == b.ID && a.Timeout == b.Timeout && a.Remote == b.Remote && slices.Equal(a.Ephemerals, b.Ephemerals) && a.Expires.Equal(b.Expires)
}

// TestSnapshotFollower: a follower runs no session timers, and knows a
// session attached through another node by id and timeout only.
func TestSnapshotFollower(t *testing.T) {
	nodes := startCluster(t, 3, 200*time.Millisecond)
	leader := leaderOf(nodes)
	follower := followerOf(nodes, leader)
	here, _ := dial(t, follower.Addr().String(), 10*time.Second)
	there, _ := dial(t, leader.Addr().String(), 10*time.Second)
	waitFor(t, 10*time.Second, "both sessions on the follower", func() bool {
		return len(follower.Snapshot(monitor.PartSessions).Sessions) == 2
	})
	snap := follower.Snapshot(monitor.PartSessions | monitor.PartReplication)
	if snap.Mode != membership.Following || snap.Replication.LeaderID != leader.nodeID || len(snap.Replication.Members) != 3 {
		t.Errorf("follower's replication: %s %+v", snap.Mode, snap.Replication)
	}
	for _, se := range snap.Sessions {
		if !se.Expires.IsZero() {
			t.Errorf("follower runs a timer for %#x", se.ID)
		}
		switch se.ID {
		case here.SessionID():
			if se.Remote == "" || se.Node != follower.nodeID || se.LastHeard.IsZero() || len(se.Auth) == 0 {
				t.Errorf("session %#x attached here: %+v", se.ID, se)
			}
		case there.SessionID():
			if se.Remote != "" || se.Timeout == 0 || se.Node != leader.nodeID || !se.LastHeard.IsZero() || se.Auth != nil {
				t.Errorf("session %#x attached elsewhere: %+v", se.ID, se)
			}
		default:
			t.Errorf("unknown session %+v", se)
		}
	}
	if timers := leader.Snapshot(monitor.PartSessions).Sessions; len(timers) != 2 || timers[0].Expires.IsZero() || timers[1].Expires.IsZero() {
		t.Errorf("leader's session timers: %+v", timers)
	}
}

// TestNodeAndChildren: the tree reads an operator's view makes are an
// anonymous client's: data and ACL only where the world may read, child
// listings in pages.
func TestNodeAndChildren(t *testing.T) {
	s := startServer(t, Config{})
	c, _ := dial(t, s.Addr().String(), 10*time.Second)
	if err := c.AddAuth("digest", []byte("bob:secret")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/p", "/p/a", "/p/b", "/p/c", "/p/d", "/p/e"} {
		if _, err := c.Create(p, []byte("data of "+p), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Create("/secret", []byte("hidden"), 0, zk.AuthACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	n, err := s.Node("/p/a")
	if err != nil || !n.Readable || string(n.Data) != "data of /p/a" || len(n.ACL) != 1 || n.ACL[0].ID.Scheme != "world" || n.Stat.DataLength != 12 {
		t.Errorf("Node(/p/a) = %+v, %v", n, err)
	}
	n, err = s.Node("/secret")
	if err != nil || n.Readable || n.Data != nil || n.ACL != nil || n.Stat.DataLength != 6 {
		t.Errorf("Node(/secret) = %+v, %v: the world may not read it", n, err)
	}
	if _, err := s.Node("/missing"); !errors.Is(err, tree.ErrNoNode) {
		t.Errorf("Node(/missing): %v", err)
	}

	var pages [][]string
	for after := ""; ; {
		page, err := s.Children("/p", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		pages = append(pages, page)
		after = page[len(page)-1]
	}
	if want := [][]string{{"a", "b"}, {"c", "d"}, {"e"}}; !slices.EqualFunc(pages, want, slices.Equal[[]string]) {
		t.Errorf("pages of /p: %v, want %v", pages, want)
	}
	if page, err := s.Children("/p", "bb", 10); err != nil || !slices.Equal(page, []string{"c", "d", "e"}) {
		t.Errorf("children of /p after bb: %v, %v", page, err)
	}
	if _, err := s.Children("/secret", "", 10); !errors.Is(err, tree.ErrNoAuth) {
		t.Errorf("children of /secret: %v", err)
	}
	if err := s.CreateNode("/ttl", nil, worldACL, wire.ModePersistentWithTTL, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateNode("/box", nil, worldACL, wire.ModeContainer, 0); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Node("/ttl"); err != nil || n.TTL != time.Minute || n.Container {
		t.Errorf("Node(/ttl) = %+v, %v", n, err)
	}
	if n, err := s.Node("/box"); err != nil || n.TTL != 0 || !n.Container {
		t.Errorf("Node(/box) = %+v, %v", n, err)
	}
}

// TestChildrenOfALargeNode: a node with more children than a page is
// worth keeping sorted pages through them as a small one does, and the
// kept names follow a child created or deleted and an ACL that closes
// the node.
func TestChildrenOfALargeNode(t *testing.T) {
	s := startServer(t, Config{})
	world := worldACL
	if err := s.CreateNode("/big", nil, world, wire.ModePersistent, 0); err != nil {
		t.Fatal(err)
	}
	var want []string
	var wg sync.WaitGroup
	errs := make(chan error, manyChildren+10)
	for i := range manyChildren + 10 {
		name := fmt.Sprintf("c%05d", (i*7919)%(manyChildren+10))
		want = append(want, name)
		wg.Go(func() { errs <- s.CreateNode("/big/"+name, nil, world, wire.ModePersistent, 0) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	all := func() []string {
		var got []string
		for after := ""; ; {
			page, err := s.Children("/big", after, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				return got
			}
			got = append(got, page...)
			after = page[len(page)-1]
		}
	}
	if got := all(); !slices.Equal(got, want) {
		t.Fatalf("paged %d names, want %d in order", len(got), len(want))
	}
	if err := s.CreateNode("/big/a-first", nil, world, wire.ModePersistent, 0); err != nil {
		t.Fatal(err)
	}
	if page, err := s.Children("/big", "", 2); err != nil || !slices.Equal(page, []string{"a-first", want[0]}) {
		t.Fatalf("after a create: %v, %v", page, err)
	}
	c, _ := dial(t, s.Addr().String(), 10*time.Second)
	if err := c.Delete("/big/a-first", -1); err != nil {
		t.Fatal(err)
	}
	if page, err := s.Children("/big", "", 1); err != nil || !slices.Equal(page, want[:1]) {
		t.Fatalf("after a delete: %v, %v", page, err)
	}
	if _, err := c.SetACL("/big", zk.DigestACL(zk.PermAll, "bob", "secret"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Children("/big", "", 1); !errors.Is(err, tree.ErrNoAuth) {
		t.Fatalf("after the ACL closed it: %v", err)
	}
}
