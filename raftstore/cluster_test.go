package raftstore

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/hutchzk/hutch/zkdb"
)

// waitAllApplied runs WaitApplied on every node and checks that their trees
// are identical.
func waitAllApplied(tb testing.TB, nodes ...*node) (uint64, int64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range nodes {
		if err := n.WaitApplied(ctx); err != nil {
			tb.Fatalf("node %d wait applied: %v", n.cfg.NodeID, err)
		}
	}
	d0, z0 := nodes[0].app.state()
	for _, n := range nodes[1:] {
		if d, z := n.app.state(); d != d0 || z != z0 {
			tb.Fatalf("node %d digest %x zxid %d, node %d has %x %d",
				n.cfg.NodeID, d, z, nodes[0].cfg.NodeID, d0, z0)
		}
	}
	return d0, z0
}

func followers(nodes []*node, leader *node) []*node {
	var fs []*node
	for _, n := range nodes {
		if n != leader {
			fs = append(fs, n)
		}
	}
	return fs
}

func TestClusterForward(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, 5*time.Second, nodes...)
	f := followers(nodes, leader)[0]

	forward(t, f, createBatch(f.cfg.NodeID, "/f", 10)...)
	_, zxid := waitAllApplied(t, nodes...)
	if zxid != 10 {
		t.Fatalf("last zxid %d, want 10", zxid)
	}
	for _, n := range nodes {
		if !n.app.exists("/f9") {
			t.Fatalf("node %d lacks /f9", n.cfg.NodeID)
		}
		// The origin id survives the trip, so the server can route replies.
		last := n.app.lastApplied()
		if last.Origin != f.cfg.NodeID || last.Seq != 9 {
			t.Fatalf("node %d applied origin %d seq %d, want %d 9", n.cfg.NodeID, last.Origin, last.Seq, f.cfg.NodeID)
		}
	}

	// Concurrent forwards from both followers share pooled connections.
	errs := make(chan error, 40)
	for i := range 40 {
		from := nodes[i%3]
		cmds := encode(t, []zkdb.Command{createCommand(from.cfg.NodeID, fmt.Sprintf("/c%d", i))})
		go func() { errs <- from.Forward(context.Background(), cmds) }()
	}
	for range 40 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent forward: %v", err)
		}
	}
	if _, zxid := waitAllApplied(t, nodes...); zxid != 50 {
		t.Fatalf("last zxid %d, want 50", zxid)
	}

	// Appending on a follower fails; the caller must forward instead.
	if err := f.append(encode(t, []zkdb.Command{createCommand(1, "/x")})).Error(); err == nil {
		t.Fatal("append on a follower succeeded")
	}
}

func TestLeaderFailover(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, 5*time.Second, nodes...)
	forward(t, leader, createBatch(leader.cfg.NodeID, "/before", 5)...)
	waitAllApplied(t, nodes...)

	rest := followers(nodes, leader)
	start := time.Now()
	if err := leader.Close(); err != nil {
		t.Fatalf("close leader: %v", err)
	}
	cfg := leader.cfg
	// Followers notice a silent leader after a randomized heartbeat timeout
	// (HT..2HT), then elect within an election timeout; on loopback the vote
	// itself takes milliseconds.
	limit := 2*cfg.HeartbeatTimeout + 2*cfg.ElectionTimeout
	newLeader := waitLeader(t, limit, rest...)
	t.Logf("new leader %d after %v (election timeout %v)", newLeader.cfg.NodeID, time.Since(start), cfg.ElectionTimeout)

	for _, n := range rest {
		forward(t, n, createCommand(n.cfg.NodeID, fmt.Sprintf("/after%d", n.cfg.NodeID)))
	}
	if _, zxid := waitAllApplied(t, rest...); zxid != 7 {
		t.Fatalf("last zxid %d, want 7", zxid)
	}
}

func TestInstallSnapshotToLaggingNode(t *testing.T) {
	dir := t.TempDir()
	nodes := startCluster(t, 3, func(c *Config) {
		c.SnapshotThreshold = 16
		c.TrailingLogs = 4
		c.SnapshotInterval = 20 * time.Millisecond
		if c.NodeID == 3 {
			c.DataDir = dir
		}
	})
	leader := waitLeader(t, 5*time.Second, nodes...)
	forward(t, leader, createBatch(1, "/early", 3)...)
	waitAllApplied(t, nodes...)

	// Take node 3 down (electing a new leader if it led), write far past
	// the trailing logs, and compact the log.
	lagging := nodes[2]
	lagging.Close()
	live := nodes[:2]
	leader = waitLeader(t, 5*time.Second, live...)
	for i := range 50 {
		propose(t, leader, createCommand(1, fmt.Sprintf("/late%d", i)))
	}
	if err := leader.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if first, _ := leader.raft.Stats()["last_snapshot_index"]; first == "0" {
		t.Fatal("leader took no snapshot")
	}

	// Restart node 3 from its data directory on its old address; the
	// entries it misses are gone from the leader's log, so it must be sent
	// the snapshot.
	if snaps, err := raft.NewFileSnapshotStore(dir, 1, io.Discard); err != nil {
		t.Fatal(err)
	} else if list, _ := snaps.List(); len(list) != 0 {
		t.Fatalf("node 3 has %d local snapshots; the test needs it to have none", len(list))
	}
	cfg := lagging.cfg
	cfg.RaftAddr = lagging.Addr()
	back := openNode(t, cfg, newTestApp())
	all := []*node{nodes[0], nodes[1], back}
	waitLeader(t, 5*time.Second, all...)
	waitFor(t, 10*time.Second, "node 3 to install a snapshot", func() bool { return back.app.restoreCount() > 0 })
	if _, zxid := waitAllApplied(t, all...); zxid != 53 {
		t.Fatalf("last zxid %d, want 53", zxid)
	}
	if !back.app.exists("/late49") || !back.app.exists("/early0") {
		t.Fatal("restored node lacks nodes")
	}
}
