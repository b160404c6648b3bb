package raftstore

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// testApp applies entries to a real tree the way the server does: zxids are
// assigned in commit order, OpSync is a no-op.
type testApp struct {
	mu       sync.RWMutex // guards everything below
	t        *tree.Tree
	applied  []Entry
	restores int
}

func newTestApp() *testApp { return &testApp{t: tree.New()} }

func (a *testApp) ApplyEntries(entries []Entry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range entries {
		a.applied = append(a.applied, e)
		if e.Txn.Op == wire.OpSync {
			continue
		}
		txn := e.Txn
		txn.Zxid = a.t.LastZxid() + 1
		a.t.Apply(&txn)
	}
}

func (a *testApp) WriteSnapshot(w io.Writer) error {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.t.WriteSnapshot(w)
}

func (a *testApp) RestoreSnapshot(r io.Reader) error {
	t, err := tree.Restore(r)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.t = t
	a.restores++
	return nil
}

// state returns the tree's digest and last zxid.
func (a *testApp) state() (uint64, int64) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.t.Digest(), a.t.LastZxid()
}

func (a *testApp) exists(path string) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	_, err := a.t.Exists(path)
	return err == nil
}

func (a *testApp) restoreCount() int {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.restores
}

// testLogger discards Raft's chatter unless HUTCH_RAFT_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("HUTCH_RAFT_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func testConfig(id uint64) Config {
	return Config{
		NodeID:             id,
		RaftAddr:           "127.0.0.1:0",
		Logger:             testLogger(),
		HeartbeatTimeout:   300 * time.Millisecond,
		ElectionTimeout:    300 * time.Millisecond,
		LeaderLeaseTimeout: 150 * time.Millisecond,
	}
}

// node is a Store with its application.
type node struct {
	*Store
	app *testApp
	cfg Config
}

func openNode(tb testing.TB, cfg Config, app *testApp) *node {
	tb.Helper()
	s, err := Open(cfg, app)
	if err != nil {
		tb.Fatalf("open node %d: %v", cfg.NodeID, err)
	}
	tb.Cleanup(func() { s.Close() })
	return &node{Store: s, app: app, cfg: cfg}
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitLeader waits until exactly one of nodes leads and all of them agree
// on it.
func waitLeader(tb testing.TB, timeout time.Duration, nodes ...*node) *node {
	tb.Helper()
	var leader *node
	waitFor(tb, timeout, "a leader every node agrees on", func() bool {
		leader = nil
		for _, n := range nodes {
			if n.IsLeader() {
				if leader != nil {
					return false
				}
				leader = n
			}
		}
		if leader == nil {
			return false
		}
		for _, n := range nodes {
			if id, _ := n.Leader(); id != leader.cfg.NodeID {
				return false
			}
		}
		return true
	})
	return leader
}

// startCluster starts n nodes on free ports: node 1 bootstraps alone and
// adds the others, which start in join mode.
func startCluster(tb testing.TB, n int, mod func(*Config)) []*node {
	tb.Helper()
	nodes := make([]*node, n)
	for i := range nodes {
		cfg := testConfig(uint64(i + 1))
		if i > 0 {
			cfg.Peers = map[uint64]string{1: nodes[0].Addr()}
		}
		if mod != nil {
			mod(&cfg)
		}
		nodes[i] = openNode(tb, cfg, newTestApp())
		if i == 0 {
			waitLeader(tb, 5*time.Second, nodes[0])
		}
	}
	for _, nd := range nodes[1:] {
		if err := nodes[0].AddVoter(nd.cfg.NodeID, nd.Addr()); err != nil {
			tb.Fatalf("add voter %d: %v", nd.cfg.NodeID, err)
		}
	}
	waitLeader(tb, 5*time.Second, nodes...)
	return nodes
}

func createEntry(origin uint64, path string) Entry {
	return Entry{Origin: origin, Txn: tree.Txn{
		Time: 1700000000000,
		Op:   wire.OpCreate,
		Req:  &wire.CreateRequest{Path: path, Data: []byte(path), ACL: openACL, Flags: wire.ModePersistent},
	}}
}

var openACL = []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}

func createBatch(origin uint64, prefix string, n int) []Entry {
	es := make([]Entry, n)
	for i := range es {
		es[i] = createEntry(origin, fmt.Sprintf("%s%d", prefix, i))
		es[i].Seq = uint64(i)
	}
	return es
}
