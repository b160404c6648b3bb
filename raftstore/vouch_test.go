package raftstore

import (
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// vouchEvents records the newest time a follower vouched for.
type vouchEvents struct {
	quietEvents
	mu      sync.Mutex
	reached time.Time
}

func (e *vouchEvents) Vouch(reached time.Time, _ time.Duration) {
	e.mu.Lock()
	e.reached = reached
	e.mu.Unlock()
}

func (e *vouchEvents) last() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reached
}

// stallingLogs holds every append while stalled is set, as a disk that
// stops completing writes does.
type stallingLogs struct {
	raft.LogStore
	mu      sync.Mutex
	stalled bool
	release chan struct{}
}

func (s *stallingLogs) stall() {
	s.mu.Lock()
	s.stalled, s.release = true, make(chan struct{})
	s.mu.Unlock()
}

func (s *stallingLogs) resume() {
	s.mu.Lock()
	s.stalled = false
	close(s.release)
	s.mu.Unlock()
}

func (s *stallingLogs) StoreLogs(ls []*raft.Log) error {
	s.mu.Lock()
	stalled, release := s.stalled, s.release
	s.mu.Unlock()
	if stalled {
		<-release
	}
	return s.LogStore.StoreLogs(ls)
}

func (s *stallingLogs) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// TestFollowerBehindStopsVouching: a follower whose appends stall while
// its reports still reach the leader stops vouching for its clients, so
// the server drops them and they move to a member that is current; once
// it catches up it vouches again. Issue 26 saw a follower on a full disk
// answer the old value for 27-57s, its pings answered: vouching counted
// every report that came back, whatever the follower held.
func TestFollowerBehindStopsVouching(t *testing.T) {
	stalling := &stallingLogs{}
	events := &vouchEvents{}
	var nodes []*Node
	for i := range 3 {
		cfg := testConfig(uint64(i + 1))
		cfg.ElectionTimeout, cfg.HeartbeatTimeout = 2*time.Second, time.Second
		cfg.ReportInterval = 50 * time.Millisecond
		var ev Events = quietEvents{}
		if i == 2 {
			cfg.wrapLogs = func(l raft.LogStore) raft.LogStore { stalling.LogStore = l; return stalling }
			ev = events
		}
		if i > 0 {
			cfg.Peers = map[uint64]string{1: nodes[0].Store().Addr()}
		}
		app := newTestApp()
		n, err := OpenNode(cfg, app.db, ev)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
		if i == 0 {
			waitFor(t, 5*time.Second, "node 1 to lead", func() bool { return n.Store().IsLeader() })
		} else if err := addVoter(nodes[0], uint64(i+1), n.Store().Addr()); err != nil {
			t.Fatal(err)
		}
	}
	leader, follower := nodes[0], nodes[2]
	// A session, so the follower reports (and vouches) at all.
	id := int64(1)<<56 | 1
	leader.Propose(zkdb.Command{Origin: 1, Seq: 1, Conn: 7, Kind: zkdb.KindTxn,
		Txn: tree.Txn{Session: id, Op: wire.OpCreateSession, Req: &tree.CreateSession{ID: id, Timeout: 30000, Passwd: make([]byte, 16)}}}, 0)
	waitFor(t, 10*time.Second, "the follower to vouch", func() bool {
		return follower.db.SessionCount() == 1 && time.Since(events.last()) < time.Second
	})

	stalling.stall()
	resumed := false
	defer func() {
		if !resumed {
			stalling.resume() // or Close would wait on the stalled append
		}
	}()
	stalledAt := time.Now()
	leader.Propose(zkdb.Command{Origin: 1, Seq: 2, Kind: zkdb.KindTxn, Txn: tree.Txn{Op: wire.OpCreate,
		Req: &wire.CreateRequest{Path: "/after", ACL: openACL}}}, 0)
	waitFor(t, 5*time.Second, "the leader to apply the write", func() bool { return leader.db.LastZxid() >= 2 })
	time.Sleep(1500 * time.Millisecond) // reports keep reaching the leader meanwhile
	if got := events.last(); got.After(stalledAt.Add(200 * time.Millisecond)) {
		t.Fatalf("the stalled follower vouched for its clients as of %v after its appends stalled, holding an older state", got.Sub(stalledAt))
	}
	if follower.Store().Halted() != nil {
		t.Fatalf("a stall is not a failure: %v", follower.Store().Halted())
	}

	stalling.resume()
	resumed = true
	waitFor(t, 10*time.Second, "the follower to catch up and vouch again", func() bool {
		return follower.db.LastZxid() >= 2 && events.last().After(stalledAt.Add(time.Second))
	})
}
