package raftstore

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/hutchzk/hutch/seglog"
)

// A leader's own append beside replication. hashicorp/raft's leader
// stores a batch in its log, fsync included, before it sends the batch to
// anyone (dispatchLogs), so a lone write waits for two fsyncs in series:
// the leader's, then a follower's. ZooKeeper's leader logs a proposal
// while it travels, and the Raft thesis (§10.2.1) allows the same: a
// leader may write its log in parallel with replication, provided it
// counts its own copy only once that is durable.
//
// With seglog, a leader's batch of commands is therefore written without
// its sync and handed back to Raft at once (parallelLog.StoreLogs), and a
// syncer makes it durable while Raft sends it. Raft counts the leader's
// copy from then on, so its commit index may pass what the leader holds
// durably; nothing that index says reaches a client or another member
// until the leader's copy has caught up:
//
//   - an entry is applied to the state (so the leader answers its writer,
//     a commit notice names it, a read or sync sees it) only once this
//     member's log holds it durably (fsm.durable);
//   - a follower, whose own appends are synced before Raft hears of them,
//     applies an entry a commit notice names once it is written here,
//     without waiting for that sync: the leader applied it, so a durable
//     majority holds it (the leader's copy and a follower's that answered),
//     and this member's copy is the same entry by Raft's log matching. So
//     the follower's sync is off the path of its client's write, as
//     ZooKeeper's follower applies a commit while its own log syncs;
//   - the commit index the leader sends a follower is lowered to the
//     leader's durable index (clampedTransport), so no follower's Raft
//     applies an entry the leader could still lose.
//
// One batch syncs at a time: a leader's next batch waits for the sync of
// the one before it (not its own), so under load Raft gathers writes into
// batches as large as when it waited for its own sync, and followers,
// which sync each append they are sent, get few large appends.
//
// An acknowledged write is thus durable on the leader and on a follower,
// as before. Followers sync before they answer, and configurations,
// no-ops and barriers are synced on the leader before Raft counts them,
// so every membership change still needs a durable majority.
// TestLeaderCountsItsCopyOnlyOnceDurable shows both rules holding while
// the leader's sync is held back.

// parallelLog is seglog's log with a leader's command batches synced
// beside replication.
type parallelLog struct {
	*seglog.Log
	// leading reports whether this member leads; nil until Raft exists.
	leading atomic.Pointer[func() bool]
	kick    chan struct{} // capacity 1: a batch waits for its sync
	// stop ends waits when the store closes; set before leading.
	stop <-chan struct{}
	// unsynced is the last index a leader batch left to the syncer;
	// only StoreLogs, on Raft's goroutine, touches it.
	unsynced uint64
	// beforeSync and afterSync, for tests, run around each of
	// syncLoop's syncs.
	beforeSync, afterSync func()
	// written, when set, is told that StoreLogs has written a batch it
	// syncs itself (a follower's), before the sync: notices.go applies a
	// committed entry from then on. beforeStoreSync, for tests, runs
	// between the two.
	written, beforeStoreSync func()

	mu     sync.Mutex    // guards synced
	synced chan struct{} // closed when a sync ends; nil if nobody waits
}

func newParallelLog(l *seglog.Log) *parallelLog {
	return &parallelLog{Log: l, kick: make(chan struct{}, 1)}
}

func (p *parallelLog) StoreLog(l *raft.Log) error { return p.StoreLogs([]*raft.Log{l}) }

// StoreLogs writes and syncs, except a leader's batch of commands, which
// it writes and leaves to the syncer.
func (p *parallelLog) StoreLogs(logs []*raft.Log) error {
	lead := p.leading.Load()
	if lead == nil || !(*lead)() || !onlyCommands(logs) {
		if err := p.Log.Append(logs); err != nil {
			return err
		}
		// Written, and readable: a commit notice naming one of these
		// entries may be applied from here on, while the sync runs.
		if p.written != nil {
			p.written()
		}
		if p.beforeStoreSync != nil {
			p.beforeStoreSync()
		}
		err := p.Log.Sync()
		if err == nil {
			p.wake()
		}
		return err
	}
	// One batch syncs at a time: a batch that comes while the one before
	// it syncs waits for that sync, not its own, so Raft gathers what
	// arrives meanwhile into the next batch, as it did while its own
	// append synced, and followers get few large appends, not many small
	// ones, each of which they sync alone.
	// (A tail cut since may have taken the last batch's end away.)
	if before := min(p.unsynced, logs[0].Index-1); before > 0 && !p.waitDurable(before, p.stop) {
		return p.Log.StoreLogs(logs)
	}
	if err := p.Log.Append(logs); err != nil {
		return err
	}
	p.unsynced = logs[len(logs)-1].Index
	select {
	case p.kick <- struct{}{}:
	default:
	}
	return nil
}

func onlyCommands(logs []*raft.Log) bool {
	for _, l := range logs {
		if l.Type != raft.LogCommand {
			return false
		}
	}
	return true
}

// syncLoop syncs what leader batches left unsynced until stop is closed
// or a sync fails, which it hands to failed.
func (p *parallelLog) syncLoop(stop <-chan struct{}, failed func(error)) {
	for {
		select {
		case <-p.kick:
		case <-stop:
			return
		}
		if p.beforeSync != nil {
			p.beforeSync()
		}
		if err := p.Log.Sync(); err != nil {
			failed(err)
			return
		}
		if p.afterSync != nil {
			p.afterSync()
		}
		p.wake()
	}
}

// wake tells waitDurable's callers that the durable index moved.
func (p *parallelLog) wake() {
	p.mu.Lock()
	if p.synced != nil {
		close(p.synced)
		p.synced = nil
	}
	p.mu.Unlock()
}

// waitDurable waits until the log holds index durably; false if stop is
// closed first.
func (p *parallelLog) waitDurable(index uint64, stop <-chan struct{}) bool {
	for {
		p.mu.Lock()
		if p.Log.Durable() >= index {
			p.mu.Unlock()
			return true
		}
		if p.synced == nil {
			p.synced = make(chan struct{})
		}
		ch := p.synced
		p.mu.Unlock()
		select {
		case <-ch:
		case <-stop:
			return false
		}
	}
}

var _ raft.MonotonicLogStore = (*parallelLog)(nil)
