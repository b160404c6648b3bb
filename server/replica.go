package server

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/session"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// raftCommitter replicates writes through a Raft group: proposals are
// forwarded to the leader in batches, and every node applies the committed
// log through applyCommittedLocked. The node that took a request from its
// client finds the waiting proposal by (origin, seq) and sends the reply.
type raftCommitter struct {
	proposalQueue
	s     *Server
	cfg   raftstore.Config
	store *raftstore.Store

	mu      sync.Mutex // guards pending and nextSeq
	pending map[uint64]*pendingProposal
	nextSeq uint64

	touchMu sync.Mutex         // guards touched
	touched map[int64]struct{} // sessions active here since the last report to the leader
}

type pendingProposal struct {
	p     *proposal
	since time.Time
}

// proposalTimeout bounds how long a write may wait for its commit before its
// connection is dropped, as a ZooKeeper client sees connection loss when a
// leader dies with its request in flight.
const proposalTimeout = 10 * time.Second

func newRaftCommitter(s *Server, cfg raftstore.Config) *raftCommitter {
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	return &raftCommitter{
		proposalQueue: newProposalQueue(),
		s:             s,
		cfg:           cfg,
		pending:       make(map[uint64]*pendingProposal),
		nextSeq:       firstSeq(),
		touched:       make(map[int64]struct{}),
	}
}

// firstSeq picks where this process numbers its proposals. A restarted
// node replays entries it proposed in earlier runs; starting at a random
// point of a 63-bit space keeps their sequence numbers from matching the
// proposals of this run.
func firstSeq() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:]) >> 1
}

// noteTouch records client activity on a session for the next report to
// the leader.
func (c *raftCommitter) noteTouch(id int64) {
	c.touchMu.Lock()
	c.touched[id] = struct{}{}
	c.touchMu.Unlock()
}

// reportTouches tells the leader, through the log, which sessions were
// active here; every node then touches them in its tracker.
func (c *raftCommitter) reportTouches() {
	if c.store.IsLeader() {
		c.touchMu.Lock()
		clear(c.touched)
		c.touchMu.Unlock()
		return
	}
	c.touchMu.Lock()
	ids := make([]int64, 0, len(c.touched))
	for id := range c.touched {
		ids = append(ids, id)
	}
	clear(c.touched)
	c.touchMu.Unlock()
	if len(ids) == 0 {
		return
	}
	touch := raftstore.Entry{Origin: c.cfg.NodeID, Txn: tree.Txn{Op: wire.OpPing, Req: &raftstore.Touch{Sessions: ids}}}
	if err := c.store.Forward([]raftstore.Entry{touch}); err != nil {
		c.s.log.Debug("reporting session activity to the leader failed", "err", err, "sessions", len(ids))
	}
}

// open starts the Raft node; Start calls it before serving clients.
func (c *raftCommitter) open() error {
	store, err := raftstore.Open(c.cfg, replicaState{c})
	if err != nil {
		return err
	}
	c.store = store
	return nil
}

func (c *raftCommitter) run(ctx context.Context) {
	defer close(c.stopped)
	defer c.store.Close()
	batch := make([]*proposal, 0, maxBatch)
	entries := make([]raftstore.Entry, 0, maxBatch)
	sweep := time.NewTicker(time.Second)
	defer sweep.Stop()
	// Touches reach the leader twice a tick, well inside any session timeout.
	touches := time.NewTicker(c.s.cfg.TickTime / 2)
	defer touches.Stop()
	leader := c.store.LeaderCh()
	quorum := time.NewTicker(100 * time.Millisecond)
	defer quorum.Stop()
	leaderSeen := c.s.cfg.Clock.Now()
	var lastLeader uint64
	for {
		select {
		case <-ctx.Done():
			c.failAll()
			return
		case <-sweep.C:
			c.expireStale()
			continue
		case <-touches.C:
			c.reportTouches()
			continue
		case <-quorum.C:
			now := c.s.cfg.Clock.Now()
			if id, _ := c.store.Leader(); id != 0 {
				leaderSeen = now
				c.s.setServing(true)
				if lastLeader != 0 && id != lastLeader {
					c.mu.Lock()
					upTo := c.nextSeq
					c.mu.Unlock()
					go c.failStranded(ctx, upTo)
				}
				lastLeader = id
			} else if now.Sub(leaderSeen) > c.leaderlessLimit() {
				c.s.setServing(false)
			}
			continue
		case isLeader := <-leader:
			if isLeader {
				// A new leader gives every session a fresh timeout, as
				// ZooKeeper does after an election.
				c.s.sessMu.Lock()
				c.s.tracker.ResetAll(c.s.cfg.Clock.Now())
				c.s.sessMu.Unlock()
				c.s.log.Info("raft leadership gained", "node", c.cfg.NodeID)
			}
			continue
		case p := <-c.in:
			batch = c.batch(p, batch)
		}
		now := c.s.cfg.Clock.Now()
		entries = entries[:0]
		c.mu.Lock()
		for _, p := range batch {
			c.nextSeq++
			p.txn.Time = now.UnixMilli()
			c.pending[c.nextSeq] = &pendingProposal{p: p, since: now}
			entries = append(entries, raftstore.Entry{Origin: c.cfg.NodeID, Seq: c.nextSeq, Txn: p.txn})
		}
		first := c.nextSeq - uint64(len(batch)) + 1
		c.mu.Unlock()
		if err := c.forward(ctx, entries); err != nil {
			c.s.log.Warn("forwarding writes failed", "err", err, "writes", len(entries))
			for seq := first; seq < first+uint64(len(batch)); seq++ {
				c.fail(seq)
			}
		}
		clear(batch)
	}
}

// forward hands entries to the leader. While an election is under way (no
// leader known, the node asked has just stepped down, or it cannot be
// dialled because it died) nothing was taken, so it waits for the next
// leader and tries again, up to the leaderless limit, rather than fail the
// writes and send their clients to another node that waits for the same
// election.
func (c *raftCommitter) forward(ctx context.Context, entries []raftstore.Entry) error {
	deadline := time.Now().Add(c.leaderlessLimit())
	for {
		err := c.store.Forward(entries)
		if err == nil || !(errors.Is(err, raftstore.ErrNoLeader) || errors.Is(err, raftstore.ErrNotLeader) ||
			errors.Is(err, raftstore.ErrUnreachable)) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(leaderPoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}

// leaderPoll is how often forward looks for a new leader.
const leaderPoll = 20 * time.Millisecond

// leaderlessLimit is how long a node goes without a known leader before it
// stops serving clients: two election timeouts, time enough for an
// ordinary election.
func (c *raftCommitter) leaderlessLimit() time.Duration {
	if c.cfg.ElectionTimeout > 0 {
		return 2 * c.cfg.ElectionTimeout
	}
	return 2 * raftstore.DefaultElectionTimeout
}

// take removes and returns the proposal this node made under seq.
func (c *raftCommitter) take(seq uint64) *proposal {
	c.mu.Lock()
	defer c.mu.Unlock()
	pp := c.pending[seq]
	if pp == nil {
		return nil
	}
	delete(c.pending, seq)
	return pp.p
}

// fail gives up on a proposal: its connection is dropped, so the client
// reconnects and learns the outcome by reading, as after connection loss.
func (c *raftCommitter) fail(seq uint64) {
	p := c.take(seq)
	if p == nil {
		return
	}
	if p.conn != nil {
		p.conn.out.abort()
	}
	close(p.done)
}

// failStranded drops the connections of writes up to seq that the old
// leader took but that died with it: once this node has applied all the
// new leader has, any of them not yet applied never will be. Without this
// they would hold their sessions (and any lock they were releasing) for
// the whole proposalTimeout.
func (c *raftCommitter) failStranded(ctx context.Context, upTo uint64) {
	ctx, cancel := context.WithTimeout(ctx, proposalTimeout)
	defer cancel()
	if err := c.store.WaitApplied(ctx); err != nil {
		return // expireStale still bounds them
	}
	var stranded []uint64
	c.mu.Lock()
	for seq := range c.pending {
		if seq <= upTo {
			stranded = append(stranded, seq)
		}
	}
	c.mu.Unlock()
	if len(stranded) > 0 {
		c.s.log.Info("dropping writes lost with the old leader", "writes", len(stranded))
	}
	for _, seq := range stranded {
		c.fail(seq)
	}
}

func (c *raftCommitter) expireStale() {
	cutoff := c.s.cfg.Clock.Now().Add(-proposalTimeout)
	var stale []uint64
	c.mu.Lock()
	for seq, pp := range c.pending {
		if pp.since.Before(cutoff) {
			stale = append(stale, seq)
		}
	}
	c.mu.Unlock()
	for _, seq := range stale {
		c.fail(seq)
	}
}

func (c *raftCommitter) failAll() {
	c.mu.Lock()
	seqs := make([]uint64, 0, len(c.pending))
	for seq := range c.pending {
		seqs = append(seqs, seq)
	}
	c.mu.Unlock()
	for _, seq := range seqs {
		c.fail(seq)
	}
}

// replicaState is the Raft state machine: the server's tree and what hangs
// off it (watches, replies, session expiry).
type replicaState struct{ c *raftCommitter }

// ApplyEntries applies one committed batch, in log order, under one
// acquisition of the tree lock.
func (r replicaState) ApplyEntries(entries []raftstore.Entry) {
	s := r.c.s
	var done []*proposal
	s.treeMu.Lock()
	for i := range entries {
		e := &entries[i]
		var p *proposal
		if e.Origin == r.c.cfg.NodeID {
			p = r.c.take(e.Seq)
		}
		if p == nil {
			p = &proposal{}
		} else {
			done = append(done, p)
		}
		p.txn = e.Txn
		if touch, ok := p.txn.Req.(*raftstore.Touch); ok && p.txn.Op == wire.OpPing {
			now := s.cfg.Clock.Now()
			s.sessMu.Lock()
			for _, id := range touch.Sessions {
				s.tracker.Touch(id, now)
			}
			s.sessMu.Unlock()
			continue
		}
		if p.txn.Op == wire.OpSync {
			// A sync marker changes nothing; it only orders the reply.
			if p.applied != nil {
				p.applied(p, &tree.Result{})
			}
			continue
		}
		p.txn.Zxid = s.tree.LastZxid() + 1
		s.applyCommittedLocked(p)
	}
	s.treeMu.Unlock()
	for _, p := range done {
		close(p.done)
	}
}

// WriteSnapshot streams the tree under the read lock: writes wait while it
// runs, but no second copy of the tree is made.
func (r replicaState) WriteSnapshot(w io.Writer) error {
	s := r.c.s
	s.treeMu.RLock()
	defer s.treeMu.RUnlock()
	return s.tree.WriteSnapshot(w)
}

// RestoreSnapshot replaces the tree, and the session tracker with the
// restored sessions on fresh timeouts.
func (r replicaState) RestoreSnapshot(rd io.Reader) error {
	t, err := tree.Restore(rd)
	if err != nil {
		return err
	}
	s := r.c.s
	s.treeMu.Lock()
	s.tree = t
	now := s.cfg.Clock.Now()
	s.sessMu.Lock()
	// Sessions closed in the snapshot's history must not linger here.
	s.tracker = session.NewTracker(s.cfg.TickTime)
	for _, id := range t.Sessions() {
		if timeout, _, ok := t.Session(id); ok {
			s.tracker.Add(id, time.Duration(timeout)*time.Millisecond, now)
		}
	}
	s.sessMu.Unlock()
	s.treeMu.Unlock()
	return nil
}

// syncReplica makes this node catch up with the leader's commit, for sync.
func (s *Server) syncReplica() error {
	rc, ok := s.commit.(*raftCommitter)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, proposalTimeout)
	defer cancel()
	err := rc.store.WaitApplied(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return tree.ErrSystemError
	}
	return err
}

// isLeader reports whether this node may expire sessions: the single node
// always, a Raft node only while it leads.
func (s *Server) isLeader() bool {
	rc, ok := s.commit.(*raftCommitter)
	return !ok || rc.store.IsLeader()
}
