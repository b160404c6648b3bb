package raftstore

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/hutchzk/hutch/seglog"
	"github.com/hutchzk/hutch/zkdb"
)

// TestLeaderCountsItsCopyOnlyOnceDurable holds back the sync of the
// leader's own appends (parallel.go) while a write goes through: Raft
// commits it on the followers' answers, yet no member may apply it, for
// the leader alone could lose it; once the sync goes on, every member
// applies it. Without the state machine's wait for a durable entry the
// leader applies it at once; without the clamp of the commit index the
// leader sends, the followers apply it when Raft's next append (every
// CommitTimeout) tells them it committed.
func TestLeaderCountsItsCopyOnlyOnceDurable(t *testing.T) {
	var hold atomic.Pointer[chan struct{}]
	nodes := startCluster(t, 3, func(c *Config) {
		c.DataDir = t.TempDir()
		c.beforeSync = func() {
			if ch := hold.Load(); ch != nil {
				<-*ch
			}
		}
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
		// Raft's appends that carry only its commit index, often.
		c.CommitTimeout = 20 * time.Millisecond
	})
	leader := waitLeader(t, 10*time.Second, nodes...)
	if leader.logStore.parallel == nil {
		t.Fatalf("the default store on disk is %s: no parallel appends", leader.logStore.kind)
	}
	write := func(path string) uint64 {
		t.Helper()
		before := leader.raft.LastIndex()
		leader.append(encode(t, []zkdb.Command{createCommand(leader.cfg.NodeID, path)}))
		waitFor(t, 10*time.Second, "the write in the leader's log", func() bool { return leader.raft.LastIndex() > before })
		index := leader.raft.LastIndex()
		waitFor(t, 10*time.Second, fmt.Sprintf("Raft committing entry %d", index), func() bool { return leader.raft.CommitIndex() >= index })
		return index
	}
	applied := func(index uint64) []uint64 {
		var on []uint64
		for _, n := range nodes {
			if n.app.db.Applied() >= index {
				on = append(on, n.cfg.NodeID)
			}
		}
		return on
	}
	warm := write("/warm")
	waitFor(t, 10*time.Second, "the first write applied everywhere", func() bool { return len(applied(warm)) == 3 })

	gate := make(chan struct{})
	var release sync.Once
	open := func() { release.Do(func() { hold.Store(nil); close(gate) }) }
	t.Cleanup(open) // before the nodes close: a held sync would keep Close waiting
	hold.Store(&gate)
	first := write("/first")
	for _, f := range followers(nodes, leader) {
		waitFor(t, 10*time.Second, "the write on each follower", func() bool { return f.raft.LastIndex() >= first })
	}
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if on := applied(first); len(on) > 0 {
			t.Fatalf("entry %d applied on nodes %v (leader %d) while the leader's copy was not synced", first, on, leader.cfg.NodeID)
		}
	}
	if d := leader.logStore.parallel.Durable(); d >= first {
		t.Fatalf("the leader's log says entry %d is durable (%d) while its sync is held", first, d)
	}
	open()
	waitFor(t, 10*time.Second, "the write applied everywhere once synced", func() bool { return len(applied(first)) == 3 })
}

// TestParallelLogSyncsOneBatchAtATime: a leader's batch returns before
// its sync; the next one waits for that sync (not its own); after the
// tail the last batch ended in is cut away (a deposed leader's
// overwritten entries), a batch at the cut does not wait for indexes the
// log no longer holds.
func TestParallelLogSyncsOneBatchAtATime(t *testing.T) {
	l, err := seglog.Open(t.TempDir(), seglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := newParallelLog(l)
	stop := make(chan struct{})
	defer close(stop)
	p.stop = stop
	lead := func() bool { return true }
	p.leading.Store(&lead)
	gate := make(chan struct{}, 16)
	p.beforeSync = func() { <-gate }
	go p.syncLoop(stop, func(err error) { t.Errorf("sync: %v", err) })
	batch := func(from, to, term uint64) []*raft.Log {
		var b []*raft.Log
		for i := from; i <= to; i++ {
			b = append(b, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: []byte("x")})
		}
		return b
	}
	if err := p.StoreLogs(batch(1, 3, 1)); err != nil {
		t.Fatal(err)
	}
	if d := l.Durable(); d != 0 {
		t.Fatalf("Durable = %d right after a leader's batch, want 0 (its sync held)", d)
	}
	second := make(chan error, 1)
	go func() { second <- p.StoreLogs(batch(4, 5, 1)) }()
	select {
	case err := <-second:
		t.Fatalf("the second batch returned (%v) while the first one's sync was held", err)
	case <-time.After(100 * time.Millisecond):
	}
	gate <- struct{}{} // the first batch's sync
	select {
	case err := <-second:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second batch still waits after the first one synced")
	}
	if d := l.Durable(); d != 3 {
		t.Fatalf("Durable = %d, want 3", d)
	}
	gate <- struct{}{} // the second batch's sync
	waitFor(t, 10*time.Second, "the second batch synced", func() bool { return l.Durable() == 5 })

	if err := p.StoreLogs(batch(6, 8, 1)); err != nil { // left unsynced
		t.Fatal(err)
	}
	if err := l.DeleteRange(6, 8); err != nil {
		t.Fatal(err)
	}
	third := make(chan error, 1)
	go func() { third <- p.StoreLogs(batch(6, 6, 2)) }()
	select {
	case err := <-third:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a batch after a cut tail waits for indexes the log no longer holds")
	}
	gate <- struct{}{}
	gate <- struct{}{}
	waitFor(t, 10*time.Second, "the batch after the cut synced", func() bool { return l.Durable() == 6 })
}

// syncHold holds one node's own syncs: a follower's append waits between
// its write and its sync (Config.beforeStoreSync) while held.
type syncHold struct {
	gate atomic.Pointer[chan struct{}]
	node atomic.Uint64
}

// before is node id's Config.beforeStoreSync.
func (h *syncHold) before(id uint64) func() {
	return func() {
		if ch := h.gate.Load(); ch != nil && h.node.Load() == id {
			<-*ch
		}
	}
}

// hold holds node id's syncs until the returned release is called, or
// the test ends: released before the nodes close, as a held sync would
// keep Close waiting.
func (h *syncHold) hold(t *testing.T, id uint64) (release func()) {
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { h.gate.Store(nil); close(gate) }) }
	t.Cleanup(release)
	h.node.Store(id)
	h.gate.Store(&gate)
	return release
}

// TestFollowerAppliesBeforeItsOwnSync: a follower applies an entry that a
// commit notice names once the entry is written in its log, without
// waiting for its own sync: the leader applied it, so a durable majority
// (the leader and the other follower) holds it. With one follower's syncs
// held, a write forwarded through it is applied there while its log still
// says the entry is not durable. Before, that follower's own sync was on
// the path of every write its clients made, and the test timed out.
func TestFollowerAppliesBeforeItsOwnSync(t *testing.T) {
	var syncs syncHold
	nodes := startCluster(t, 3, func(c *Config) {
		c.DataDir = t.TempDir()
		id := c.NodeID
		c.beforeStoreSync = syncs.before(id)
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
		// Raft's own word of the commit would come only with a later
		// append: the follower hears it from the notices alone.
		c.CommitTimeout = time.Hour
	})
	leader := waitLeader(t, 10*time.Second, nodes...)
	f := followers(nodes, leader)[0]
	if f.logStore.parallel == nil {
		t.Fatalf("the default store on disk is %s: no parallel appends", f.logStore.kind)
	}
	forward(t, f, createCommand(f.cfg.NodeID, "/warm"))
	waitAllApplied(t, nodes...)

	open := syncs.hold(t, f.cfg.NodeID)
	forward(t, f, createCommand(f.cfg.NodeID, "/held"))
	waitFor(t, 5*time.Second, fmt.Sprintf("node %d to apply a write while its own sync is held", f.cfg.NodeID), func() bool {
		return f.app.exists("/held")
	})
	// Its Raft waits in the held sync, so it stores nothing past the
	// write's batch, and what it applied ends there; a sync that began
	// before the hold (an election's no-op, under load) may still end,
	// but covers nothing after.
	if applied, d := f.app.db.Applied(), f.logStore.parallel.Durable(); d >= applied {
		t.Fatalf("node %d's log says index %d is durable, the write applied (index %d) with it, while its sync was held", f.cfg.NodeID, d, applied)
	}
	open()
	waitAllApplied(t, nodes...)
}

// TestHeldFollowerTakesItsBacklogInOneAppend: the leader sends a
// follower one append request at a time (no pipelining), so what it
// stores while the follower is busy goes out together once the follower
// answers, and the follower stores and syncs it as one append. A
// follower's sync is held while the leader commits ten writes one after
// another through the other follower; released, the held follower catches
// up in at most two appends (with pipelined requests it stored each
// write's request on its own, and the test fails).
func TestHeldFollowerTakesItsBacklogInOneAppend(t *testing.T) {
	var syncs syncHold
	var mu sync.Mutex
	stored := map[uint64][]uint64{} // node id: the last index of each append
	nodes := startCluster(t, 3, func(c *Config) {
		c.DataDir = t.TempDir()
		id := c.NodeID
		c.beforeStoreSync = syncs.before(id)
		c.onStored = func(last uint64) {
			mu.Lock()
			stored[id] = append(stored[id], last)
			mu.Unlock()
		}
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
	})
	leader := waitLeader(t, 10*time.Second, nodes...)
	fs := followers(nodes, leader)
	held, other := fs[0], fs[1]
	forward(t, other, createCommand(other.cfg.NodeID, "/warm"))
	waitAllApplied(t, nodes...)

	open := syncs.hold(t, held.cfg.NodeID)
	for i := range 10 {
		path := fmt.Sprintf("/backlog%d", i)
		forward(t, other, createCommand(other.cfg.NodeID, path))
		waitFor(t, 5*time.Second, "node "+fmt.Sprint(other.cfg.NodeID)+" to apply "+path, func() bool { return other.app.exists(path) })
	}
	last := other.app.db.Applied()
	mu.Lock()
	before := len(stored[held.cfg.NodeID])
	mu.Unlock()
	open()
	waitFor(t, 10*time.Second, fmt.Sprintf("node %d to store index %d", held.cfg.NodeID, last), func() bool {
		mu.Lock()
		defer mu.Unlock()
		s := stored[held.cfg.NodeID]
		return len(s) > 0 && s[len(s)-1] >= last
	})
	mu.Lock()
	after := stored[held.cfg.NodeID][before:]
	mu.Unlock()
	t.Logf("node %d's appends from the held one on end at indexes %v", held.cfg.NodeID, after)
	// The held append itself returns first; then the backlog.
	if len(after) > 2 {
		t.Fatalf("node %d caught up with ten writes in %d appends (last indexes %v): want the backlog in one", held.cfg.NodeID, len(after), after)
	}
	waitAllApplied(t, nodes...)
}
