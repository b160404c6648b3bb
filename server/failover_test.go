package server

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/clock"
	"github.com/hutchzk/hutch/internal/faultnet"
	"github.com/hutchzk/hutch/wire"
)

// orderedHosts is a go-zookeeper HostProvider that tries servers in the
// order given, so a test decides which node a client starts on.
type orderedHosts struct {
	servers []string
	next    int
}

func (h *orderedHosts) Init(servers []string) error { h.servers = servers; return nil }
func (h *orderedHosts) Len() int                    { return len(h.servers) }
func (h *orderedHosts) Connected()                  {}
func (h *orderedHosts) Next() (string, bool) {
	s := h.servers[h.next%len(h.servers)]
	h.next++
	return s, h.next%len(h.servers) == 0
}

// TestClusterFailoverKeepsLiveSessions is the mass-expiry regression: 20
// sessions on the leader, each holding an ephemeral, lose their leader
// while other clients keep opening sessions on the followers. The next
// leader must not expire any of them before a full timeout has passed
// since it took over (ZooKeeper's rule), and they move to the followers in
// time. Before the fix the new leader expired every one within
// milliseconds of winning: its timers had never heard of their activity.
func TestClusterFailoverKeepsLiveSessions(t *testing.T) {
	const (
		tick     = 200 * time.Millisecond
		timeout  = 2 * time.Second
		sessions = 20
	)
	nodes := startCluster(t, 3, tick)
	leader := leaderOf(nodes)
	order := []string{leader.Addr().String()}
	var followers []*Server
	for _, s := range nodes {
		if s != leader {
			followers = append(followers, s)
			order = append(order, s.Addr().String())
		}
	}

	var expired atomic.Int32
	clients := make([]*zk.Conn, sessions)
	ids := make([]int64, sessions)
	for i := range clients {
		c, events, err := zk.Connect(order, timeout, zk.WithLogger(discardLogger{}), zk.WithHostProvider(&orderedHosts{}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		waitFor(t, 10*time.Second, "a session on the leader", func() bool { return c.State() == zk.StateHasSession })
		go func() {
			for ev := range events {
				if ev.State == zk.StateExpired {
					expired.Add(1)
				}
			}
		}()
		if _, err := c.Create(fmt.Sprintf("/live-%d", i), nil, zk.FlagEphemeral, openACL); err != nil {
			t.Fatal(err)
		}
		clients[i], ids[i] = c, c.SessionID()
	}

	// The sessions live on, pinging the leader only, for longer than a
	// timeout: the followers never hear from them directly.
	for end := time.Now().Add(2 * timeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if n := expired.Load(); n > 0 {
			t.Fatalf("%d sessions expired before any fault", n)
		}
	}

	// Churn: sessions opened and closed on the followers throughout.
	stop := make(chan struct{})
	var churned atomic.Int32
	var wg sync.WaitGroup
	for w := range 4 {
		addr := followers[w%2].Addr().String()
		wg.Go(func() {
			for n := 0; n < 500; n++ {
				select {
				case <-stop:
					return
				default:
				}
				c, _, err := zk.Connect([]string{addr}, timeout, zk.WithLogger(discardLogger{}))
				if err != nil {
					continue
				}
				for deadline := time.Now().Add(3 * time.Second); c.State() != zk.StateHasSession && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond)
				}
				churned.Add(1)
				c.Close()
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	waitFor(t, 10*time.Second, "session churn on the followers", func() bool { return churned.Load() >= 8 })

	killed := time.Now()
	_ = leader.Close()
	waitFor(t, 10*time.Second, "a new leader", func() bool { return leaderOf(followers) != nil })
	t.Logf("new leader %v after the kill", time.Since(killed).Round(time.Millisecond))

	// Every client re-attaches to a follower; hold on for three timeouts,
	// long past any wrongful expiry.
	waitFor(t, 15*time.Second, "every client back on a follower", func() bool {
		for _, c := range clients {
			if c.State() != zk.StateHasSession {
				return false
			}
		}
		return true
	})
	for end := time.Now().Add(3 * timeout); time.Now().Before(end) && expired.Load() == 0; {
		time.Sleep(20 * time.Millisecond)
	}
	if n := expired.Load(); n > 0 {
		t.Fatalf("%d of %d live sessions expired on failover", n, sessions)
	}
	check, _ := dial(t, leaderOf(followers).Addr().String(), 10*time.Second)
	if _, err := check.Sync("/"); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		_, st, err := check.Get(fmt.Sprintf("/live-%d", i))
		if err != nil || st.EphemeralOwner != id || clients[i].SessionID() != id {
			t.Fatalf("/live-%d: %v owner %#x, client session %#x, want %#x", i, err, st.EphemeralOwner, clients[i].SessionID(), id)
		}
	}
	t.Logf("%d sessions survived; %d churned sessions", sessions, churned.Load())
}

// TestClusterMovedSessionStaleWrite is the stale-write regression: a
// setData sent through node A is held up (A's links are silently dropped,
// so its forward hangs in the network), the client gives up on A,
// re-attaches its session on node B and writes again there, acknowledged;
// then A's links heal and the first write reaches the leader. ZooKeeper refuses it (SESSIONMOVED): the
// session belongs to B's connection now. Before the fix it committed after
// the newer write and won.
func TestClusterMovedSessionStaleWrite(t *testing.T) {
	network := faultnet.New()
	nodes := startClusterOn(t, network, 3, 200*time.Millisecond)
	leader := leaderOf(nodes)
	var a, b *Server
	for _, s := range nodes {
		if s != leader {
			if a == nil {
				a = s
			} else {
				b = s
			}
		}
	}
	acl := []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
	first := dialRaw(t, a.Addr().String())
	session := first.handshake(10000, 0, nil)
	first.send(1, wire.OpCreate, &wire.CreateRequest{Path: "/x", Data: []byte("init"), ACL: acl})
	if h, _ := first.reply(); h.Err != wire.CodeOK {
		t.Fatalf("create: %v", h.Err)
	}

	network.Drop(a.cfg.Raft.RaftAddr, leader.cfg.Raft.RaftAddr, b.cfg.Raft.RaftAddr)
	first.send(2, wire.OpSetData, &wire.SetDataRequest{Path: "/x", Data: []byte("first"), Version: -1})
	_ = first.nc.Close() // the client gives up on A

	second := dialRaw(t, b.Addr().String())
	resp := second.handshake(10000, session.SessionID, session.Passwd)
	if resp.SessionID != session.SessionID || resp.Timeout == 0 {
		t.Fatalf("re-attach on B: %+v", resp)
	}
	second.send(3, wire.OpSetData, &wire.SetDataRequest{Path: "/x", Data: []byte("second"), Version: -1})
	h, _ := second.reply()
	if h.Err != wire.CodeOK {
		t.Fatalf("second setData: %v", h.Err)
	}
	network.Heal()

	// The held-up write reaches the leader once A can forward it; every
	// outcome (applied or refused) takes a zxid.
	waitFor(t, 10*time.Second, "the held-up write to reach the leader", func() bool {
		_, z := leader.Digest()
		return z > h.Zxid
	})
	second.send(4, wire.OpGetData, &wire.PathWatchRequest{Path: "/x"})
	h, d := second.reply()
	var got wire.GetDataResponse
	got.Decode(d)
	if h.Err != wire.CodeOK || string(got.Data) != "second" {
		t.Fatalf("/x = %q (version %d, err %v) after the held-up write arrived, want %q: a stale write committed after a newer one",
			got.Data, got.Stat.Version, h.Err, "second")
	}
}

// TestClusterCleanupByOneClock: TTL and container cleanup is the leader's
// alone, every transaction is stamped with the leader's clock, and a
// delete re-checks the TTL by the log's time. A follower whose clock runs
// an hour ahead neither deletes a 10-minute TTL node early nor stamps the
// nodes created through it; an expired node is deleted by exactly one
// transaction. Before the fix every node ran cleanup by its own clock.
func TestClusterCleanupByOneClock(t *testing.T) {
	clocks := map[uint64]*clock.Offset{}
	nodes := startClusterOn(t, nil, 3, 200*time.Millisecond, func(id uint64, cfg *Config) {
		cfg.ContainerCheckInterval = 50 * time.Millisecond
		clocks[id] = clock.NewOffset(clock.System, 0)
		cfg.Clock = clocks[id]
	})
	leader := leaderOf(nodes)
	var fast *Server
	for i, s := range nodes {
		if s != leader {
			fast = s
			clocks[uint64(i+1)].Set(time.Hour)
			break
		}
	}

	c, _ := dial(t, fast.Addr().String(), 10*time.Second)
	before := time.Now()
	if _, err := c.CreateTTL("/ttl10m", nil, zk.FlagTTL, openACL, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	_, st, err := c.Get("/ttl10m")
	if err != nil {
		t.Fatal(err)
	}
	if ctime := time.UnixMilli(st.Ctime); ctime.Sub(before) > 30*time.Minute {
		t.Fatalf("ctime %v stamped by the fast follower's clock (real time %v)", ctime, before)
	}
	// Many cleanup rounds later it is still there.
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if ok, _, err := c.Exists("/ttl10m"); err != nil || !ok {
			t.Fatalf("a 10-minute TTL node vanished after %v (%v)", time.Since(before).Round(time.Millisecond), err)
		}
	}

	// A node that does expire is deleted once, by one transaction.
	if _, err := c.CreateTTL("/ttl-short", nil, zk.FlagTTL, openACL, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the short TTL node to go", func() bool {
		ok, _, err := c.Exists("/ttl-short")
		return err == nil && !ok
	})
	_, gone := leader.Digest()
	// Give every node's cleanup time for a few more rounds.
	for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
	}
	if _, z := leader.Digest(); z != gone {
		t.Fatalf("%d more transactions after the TTL node was deleted: cleanup ran more than once", z-gone)
	}
}

// TestServerIDRange: server ids go into the top byte of session ids, so
// 0, 255 and anything wider are refused at start.
func TestServerIDRange(t *testing.T) {
	for _, id := range []int64{255, 256, -1, 1 << 40} {
		s := New(Config{ListenAddr: "127.0.0.1:0", ServerID: id, Logger: testLogger()})
		if err := s.Start(); err == nil {
			s.Close()
			t.Errorf("server id %d: started", id)
		}
	}
	s := startServer(t, Config{ServerID: 254})
	c, _ := dial(t, s.Addr().String(), 10*time.Second)
	if top := uint64(c.SessionID()) >> 56; top != 254 {
		t.Fatalf("session id %#x, want server id 254 in its top byte", c.SessionID())
	}
}

// TestClusterSnapshotInstallResyncsWatches: a follower that falls so far
// behind that the leader sends it a snapshot replaces its state without
// firing the watches its clients set on the old state. It must drop them
// so they reconnect and set their watches again (setWatches fires what
// they missed), as a ZooKeeper follower does after a snapshot sync.
// Before the fix a lock waiter watching a deleted node waited for ever.
func TestClusterSnapshotInstallResyncsWatches(t *testing.T) {
	network := faultnet.New()
	nodes := startClusterOn(t, network, 3, 200*time.Millisecond, func(_ uint64, cfg *Config) {
		cfg.Raft.SnapshotThreshold = 32
		cfg.Raft.TrailingLogs = 8
		cfg.Raft.SnapshotInterval = 20 * time.Millisecond
	})
	leader := leaderOf(nodes)
	var behind *Server
	var others []string
	for _, s := range nodes {
		if s != leader && behind == nil {
			behind = s
		} else {
			others = append(others, s.cfg.Raft.RaftAddr)
		}
	}
	writer, _ := dial(t, leader.Addr().String(), 10*time.Second)
	if _, err := writer.Create("/w", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	watcher, _ := dial(t, behind.Addr().String(), 10*time.Second)
	if _, err := watcher.Sync("/w"); err != nil {
		t.Fatal(err)
	}
	_, _, events, err := watcher.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}

	// Cut the follower off briefly (well inside the two election timeouts
	// after which it would drop its clients anyway), delete the watched
	// node and write far past the trailing log, so the leader compacts
	// its log and must send a snapshot.
	network.Isolate(behind.cfg.Raft.RaftAddr, others...)
	if err := writer.Delete("/w", -1); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if _, err := writer.Create(fmt.Sprintf("/fill%d", i), nil, 0, openACL); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "the leader to compact its log", func() bool {
		return leader.Replication().Raft["last_snapshot_index"] != "0"
	})
	network.Heal()

	select {
	case ev := <-events:
		if ev.Type != zk.EventNodeDeleted || ev.Path != "/w" {
			t.Fatalf("watch fired with %+v, want NodeDeleted /w", ev)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the watch on the lagging follower never fired after it installed a snapshot")
	}
	if d1, d2 := digestOf(leader), digestOf(behind); d1 != d2 {
		waitFor(t, 10*time.Second, "the digests to agree", func() bool { return digestOf(leader) == digestOf(behind) })
	}
}
