package bench

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/server"
)

// leaderTimeout bounds how long a hutch ensemble may take to elect.
const leaderTimeout = 30 * time.Second

// target is one ensemble under test: its client addresses and how to stop
// it early, so that the next target does not share the CPU with it.
type target struct {
	name  string
	addrs []string
	stop  func()
}

// targetStarter starts a target; the test's cleanups stop it too.
type targetStarter struct {
	name  string
	start func(tb testing.TB) target
}

// ensembleTargets are the two three-server ensembles compared, in the order
// they run.
var ensembleTargets = []targetStarter{
	{"zookeeper-3", startZooKeeper3},
	{"hutch-3", startHutch3},
}

// startZooKeeper3 runs a three-server ZooKeeper quorum as separate JVMs.
func startZooKeeper3(tb testing.TB) target {
	tb.Helper()
	servers := realzk.StartEnsemble(tb, 3)
	t := target{name: "zookeeper-3"}
	for _, s := range servers {
		t.addrs = append(t.addrs, s.Addr)
	}
	t.stop = func() {
		for _, s := range servers {
			_ = s.Stop() // also registered as a cleanup; Stop is idempotent
		}
	}
	return t
}

// startHutch3 runs three in-process hutch nodes forming one Raft group.
// Each node has a data directory, so writes go through raft-boltdb's
// fsync as ZooKeeper's go through its fsynced transaction log.
func startHutch3(tb testing.TB) target {
	tb.Helper()
	const n = 3
	peers := make(map[uint64]string, n)
	for id := uint64(1); id <= n; id++ {
		peers[id] = fmt.Sprintf("127.0.0.1:%d", realzk.FreePort(tb))
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	nodes := make([]*server.Server, 0, n)
	t := target{name: "hutch-3"}
	for id := uint64(1); id <= n; id++ {
		s := server.New(server.Config{
			ListenAddr:          "127.0.0.1:0",
			MaxClientConnsPerIP: -1,
			Logger:              quiet,
			Raft: &raftstore.Config{
				NodeID:   id,
				RaftAddr: peers[id],
				Peers:    peers,
				DataDir:  tb.TempDir(),
				Secret:   []byte("benchmark ensemble secret"),
			},
		})
		if err := s.Start(); err != nil {
			tb.Fatalf("start hutch node %d: %v", id, err)
		}
		tb.Cleanup(func() { _ = s.Close() })
		nodes = append(nodes, s)
		t.addrs = append(t.addrs, s.Addr().String())
	}
	t.stop = func() {
		for _, s := range nodes {
			_ = s.Close()
		}
	}
	deadline := time.Now().Add(leaderTimeout)
	for leaders(t.addrs) != 1 {
		if time.Now().After(deadline) {
			tb.Fatalf("hutch ensemble elected no leader within %v", leaderTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return t
}

// followerAddr returns the client address of a server whose srvr reports
// Mode: follower.
func followerAddr(tb testing.TB, t target) string {
	tb.Helper()
	deadline := time.Now().Add(leaderTimeout)
	for time.Now().Before(deadline) {
		for _, a := range t.addrs {
			if realzk.Mode(a, time.Second) == "follower" {
				return a
			}
		}
		time.Sleep(50 * time.Millisecond) // polling other processes
	}
	tb.Fatalf("%s: no follower within %v", t.name, leaderTimeout)
	return ""
}

// leaders counts the servers whose srvr reports Mode: leader.
func leaders(addrs []string) int {
	n := 0
	for _, a := range addrs {
		if realzk.Mode(a, time.Second) == "leader" {
			n++
		}
	}
	return n
}
