package server

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/faultnet"
	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/raftstore"
)

// startCluster runs n in-process hutch nodes forming one Raft group.
func startCluster(tb testing.TB, n int, tick time.Duration) []*Server {
	tb.Helper()
	return startClusterOn(tb, nil, n, tick)
}

// startClusterOn is startCluster with the nodes' links to each other
// dialled through network (named by Raft address); nil dials plain TCP.
// mods, if any, adjust each node's configuration before it starts.
func startClusterOn(tb testing.TB, network *faultnet.Network, n int, tick time.Duration, mods ...func(id uint64, cfg *Config)) []*Server {
	tb.Helper()
	peers := make(map[uint64]string, n)
	for id := uint64(1); id <= uint64(n); id++ {
		peers[id] = fmt.Sprintf("127.0.0.1:%d", realzk.FreePort(tb))
	}
	nodes := make([]*Server, n)
	secret := []byte("in-process test ensemble secret")
	for i := range nodes {
		id := uint64(i + 1)
		// Volatile: these nodes never restart into their group.
		rc := &raftstore.Config{NodeID: id, RaftAddr: peers[id], Peers: peers, Volatile: true, Secret: secret}
		if network != nil {
			rc.Dial = network.Dialer(peers[id])
		}
		cfg := Config{
			ListenAddr:          "127.0.0.1:0",
			AdminAddr:           "127.0.0.1:0",
			TickTime:            tick,
			MaxClientConnsPerIP: -1,
			Logger:              testLogger(),
			Raft:                rc,
		}
		for _, mod := range mods {
			mod(id, &cfg)
		}
		s := New(cfg)
		if err := s.Start(); err != nil {
			tb.Fatalf("start node %d: %v", id, err)
		}
		tb.Cleanup(func() { _ = s.Close() })
		nodes[i] = s
	}
	waitFor(tb, 20*time.Second, "a leader", func() bool { return leaderOf(nodes) != nil })
	return nodes
}

func leaderOf(nodes []*Server) *Server {
	for _, s := range nodes {
		if !s.closed.Load() && isLeader(s) {
			return s
		}
	}
	return nil
}

// followerOf returns a running node other than leader.
func followerOf(nodes []*Server, leader *Server) *Server {
	for _, s := range nodes {
		if s != leader && !s.closed.Load() {
			return s
		}
	}
	return nil
}

// isLeader reports whether s's srvr would say "Mode: leader".
func isLeader(s *Server) bool { return s.State().Leads() }

func digestOf(s *Server) uint64 {
	d, _ := s.Digest()
	return d
}

// TestClusterReplicates: writes through any node are seen on every node
// after sync, and the trees end byte-identical.
func TestClusterReplicates(t *testing.T) {
	nodes := startCluster(t, 3, 200*time.Millisecond)
	clients := make([]*zk.Conn, len(nodes))
	for i, s := range nodes {
		clients[i], _ = dial(t, s.Addr().String(), 10*time.Second)
	}
	for i, c := range clients {
		if _, err := c.Create(fmt.Sprintf("/n%d", i), []byte{byte(i)}, 0, openACL); err != nil {
			t.Fatalf("create through node %d: %v", i+1, err)
		}
		if _, err := c.Create(fmt.Sprintf("/e%d", i), nil, zk.FlagEphemeral, openACL); err != nil {
			t.Fatalf("ephemeral through node %d: %v", i+1, err)
		}
	}
	for i, c := range clients {
		if _, err := c.Sync("/"); err != nil {
			t.Fatalf("sync on node %d: %v", i+1, err)
		}
		children, _, err := c.Children("/")
		if err != nil || len(children) != 7 {
			t.Fatalf("node %d sees %v (%v), want /zookeeper plus 6 nodes", i+1, children, err)
		}
		_, st, err := c.Get("/e2")
		if err != nil || st.EphemeralOwner != clients[2].SessionID() {
			t.Fatalf("node %d: /e2 %+v %v", i+1, st, err)
		}
	}
	want := digestOf(nodes[0])
	for i, s := range nodes[1:] {
		if d := digestOf(s); d != want {
			t.Fatalf("node %d digest %x, node 1 %x", i+2, d, want)
		}
	}
	modes := map[string]int{}
	for _, s := range nodes {
		modes[s.State().String()]++
	}
	if modes["leader"] != 1 || modes["follower"] != 2 {
		t.Fatalf("srvr modes %v, want one leader and two followers", modes)
	}
}

// TestClusterFollowerSessionStaysAlive: a session whose client talks only
// to a follower is kept alive by the touches the follower reports, past
// several timeouts, and expires on the leader once the client goes away.
func TestClusterFollowerSessionStaysAlive(t *testing.T) {
	nodes := startCluster(t, 3, 100*time.Millisecond)
	var follower *Server
	for _, s := range nodes {
		if !isLeader(s) {
			follower = s
			break
		}
	}
	c, _ := dial(t, follower.Addr().String(), time.Second) // negotiated to 1s
	if _, err := c.Create("/alive", nil, zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	leader := leaderOf(nodes)
	watcher, _ := dial(t, leader.Addr().String(), 2*time.Second)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		ok, _, err := watcher.Exists("/alive")
		if err != nil || !ok {
			t.Fatalf("ephemeral of a live follower session vanished: %v %v", ok, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.Close()
	waitFor(t, 10*time.Second, "the closed session's ephemeral to go", func() bool {
		ok, _, err := watcher.Exists("/alive")
		return err == nil && !ok
	})
}

// TestClusterLeaderFailover: with the leader gone, a new one is elected and
// a client naming every node carries on writing.
func TestClusterLeaderFailover(t *testing.T) {
	nodes := startCluster(t, 3, 200*time.Millisecond)
	addrs := make([]string, len(nodes))
	for i, s := range nodes {
		addrs[i] = s.Addr().String()
	}
	c, _, err := zk.Connect(addrs, 4*time.Second, zk.WithLogger(discardLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/before", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	old := leaderOf(nodes)
	killed := time.Now()
	_ = old.Close()
	waitFor(t, 10*time.Second, "a new leader", func() bool { return leaderOf(nodes) != nil })
	t.Logf("new leader after %v", time.Since(killed).Round(time.Millisecond))
	waitFor(t, 30*time.Second, "a write after failover", func() bool {
		_, err := c.Create("/after", nil, 0, openACL)
		return err == nil || err == zk.ErrNodeExists
	})
	for _, s := range nodes {
		if s == old {
			continue
		}
		cl, _ := dial(t, s.Addr().String(), 10*time.Second)
		if _, err := cl.Sync("/"); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"/before", "/after"} {
			if ok, _, err := cl.Exists(p); err != nil || !ok {
				t.Fatalf("%s missing on %s: %v", p, s.Addr(), err)
			}
		}
	}
}

// TestDurableRestart: a node with a data directory comes back with every
// acknowledged write and the ephemerals of sessions that did not expire.
func TestDurableRestart(t *testing.T) {
	dir := t.TempDir()
	raftAddr := fmt.Sprintf("127.0.0.1:%d", realzk.FreePort(t))
	open := func() *Server {
		s := New(Config{
			ListenAddr: "127.0.0.1:0",
			Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
			Raft:       &raftstore.Config{NodeID: 1, RaftAddr: raftAddr, DataDir: dir},
		})
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "leadership", func() bool { return isLeader(s) })
		return s
	}
	s := open()
	c, _ := dial(t, s.Addr().String(), 20*time.Second)
	acked := 0
	for i := range 200 {
		if _, err := c.Create(fmt.Sprintf("/k%03d", i), []byte("v"), 0, openACL); err != nil {
			t.Fatal(err)
		}
		acked++
	}
	if _, err := c.Create("/mine", nil, zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	before := digestOf(s)
	_ = s.Close()

	s = open()
	defer s.Close()
	waitFor(t, 20*time.Second, "the log to replay", func() bool { return digestOf(s) == before })
	check, _ := dial(t, s.Addr().String(), 20*time.Second)
	children, _, err := check.Children("/")
	if err != nil {
		t.Fatal(err)
	}
	// /zookeeper, the acknowledged nodes and the live session's ephemeral.
	if len(children) != acked+2 {
		t.Fatalf("%d children after restart, want %d", len(children), acked+2)
	}
	t.Logf("%d acknowledged writes, all present after restart", acked)
}

func adminDigest(tb testing.TB, s *Server) string {
	tb.Helper()
	resp, err := http.Get("http://" + s.AdminAddr().String() + "/commands/digest")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Digest   string `json:"digest"`
		LastZxid int64  `json:"last_zxid"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprintf("%s@%d", out.Digest, out.LastZxid)
}

// TestClusterDigestAndQuorumLoss: the admin digest agrees on every node;
// a node left without a majority drops its clients and refuses new ones.
func TestClusterDigestAndQuorumLoss(t *testing.T) {
	nodes := startCluster(t, 3, 200*time.Millisecond)
	c, _ := dial(t, nodes[0].Addr().String(), 10*time.Second)
	for i := range 20 {
		if _, err := c.Create(fmt.Sprintf("/d%d", i), nil, 0, openACL); err != nil {
			t.Fatal(err)
		}
	}
	// Open a session on every node first (each takes a zxid), then sync
	// each, so no node's digest is read before the last session applied.
	var clients []*zk.Conn
	for _, s := range nodes {
		cl, _ := dial(t, s.Addr().String(), 10*time.Second)
		clients = append(clients, cl)
	}
	for _, cl := range clients {
		if _, err := cl.Sync("/"); err != nil {
			t.Fatal(err)
		}
	}
	want := adminDigest(t, nodes[0])
	for i, s := range nodes[1:] {
		if got := adminDigest(t, s); got != want {
			t.Fatalf("node %d digest %s, node 1 %s", i+2, got, want)
		}
	}

	survivor := nodes[2]
	held := dialRaw(t, survivor.Addr().String())
	held.handshake(10000, 0, nil)
	_ = nodes[0].Close()
	_ = nodes[1].Close()
	held.expectClosed()
	waitFor(t, 20*time.Second, "the minority node to refuse clients", func() bool { return refusesClients(t, survivor) })
}

// refusesClients reports whether s closes a new connection at once, as a
// node without a leader does.
func refusesClients(tb testing.TB, s *Server) bool {
	r := dialRaw(tb, s.Addr().String())
	defer r.nc.Close()
	_ = r.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := r.nc.Read(make([]byte, 1))
	return err == io.EOF
}

// testLogger discards logs unless HUTCH_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("HUTCH_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
