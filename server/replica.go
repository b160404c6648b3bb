package server

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/zkdb"
)

// raftCommitter replicates writes through a Raft group: proposals are
// encoded in batches and forwarded, in order, to the leader; every node
// applies the committed log to its DB, and the node that took a request
// from its client finds the waiting proposal by (origin, seq) and replies.
//
// Its goroutines each own one job, so none waits for another: run batches
// proposals, forwardLoop hands batches to the leader one after another,
// watchLeadership follows elections, reportTouches tells the leader about
// this node's clients, and sweep gives up on proposals that never
// applied.
type raftCommitter struct {
	proposalQueue
	pendingTable
	s     *Server
	cfg   raftstore.Config
	store *raftstore.Store

	// outbox carries encoded batches from run to forwardLoop, in order.
	outbox chan forwardBatch

	// ready is the term in which this node leads with every session's
	// timer started afresh; 0 while it does not lead.
	ready atomic.Uint64

	touchMu  sync.Mutex         // guards touchSet
	touchSet map[int64]struct{} // sessions active here since the last report that reached the leader

	// vouchedAt (unix nanos, real time) is when the newest activity
	// report that reached the leader was sent: every touch recorded
	// before it has been heard there. On the leader it is refreshed every
	// poll, its own clients touching its timers directly. A follower
	// answers a client only while this is recent (see dropUnvouched).
	vouchedAt atomic.Int64
	// reportsFailing is set while reports to the leader fail, so the
	// failure is logged as a warning once, not at every attempt.
	reportsFailing atomic.Bool
}

// forwardBatch is one batch of encoded commands and the sequence numbers
// of its proposals.
type forwardBatch struct {
	commands    []byte
	first, last uint64
}

// proposalTimeout bounds how long a write may wait for its commit before its
// connection is dropped, as a ZooKeeper client sees connection loss when a
// leader dies with its request in flight.
const proposalTimeout = 10 * time.Second

// leaderPoll is how often the committer looks at Raft's state, and how
// often a forward waiting for a leader tries again. Raft runs on real
// time, so this does too.
const leaderPoll = 20 * time.Millisecond

func newRaftCommitter(s *Server, cfg raftstore.Config) *raftCommitter {
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	if cfg.Clock == nil {
		cfg.Clock = s.clock
	}
	// A forwarded batch holds whole requests, each up to MaxFrameSize.
	if need := 2 * int64(s.cfg.MaxFrameSize); cfg.MaxForwardFrame < need {
		cfg.MaxForwardFrame = max(need, raftstore.DefaultMaxForwardFrame)
	}
	return &raftCommitter{
		proposalQueue: newProposalQueue(),
		pendingTable:  newPendingTable(cfg.NodeID),
		s:             s,
		cfg:           cfg,
		outbox:        make(chan forwardBatch, 64),
		touchSet:      make(map[int64]struct{}),
	}
}

// vouched returns when this node last showed that the leader hears its
// clients (zero if never).
func (c *raftCommitter) vouched() time.Time {
	if ns := c.vouchedAt.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// open starts the Raft node; Start calls it before serving clients.
func (c *raftCommitter) open() error {
	store, err := raftstore.Open(c.cfg, c.s.db)
	if err != nil {
		return err
	}
	c.store = store
	c.cfg = store.Config() // with defaults: election and forward timeouts
	return nil
}

func (c *raftCommitter) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer func() {
		close(c.stopped)
		wg.Wait()
		c.failAll()
		c.store.Close()
	}()
	wg.Go(func() { c.forwardLoop(ctx) })
	wg.Go(func() { c.watchLeadership(ctx) })
	wg.Go(func() { c.reportTouches(ctx) })
	wg.Go(func() { c.sweep(ctx) })

	batch := make([]*proposal, 0, maxBatch)
	cmds := make([]zkdb.Command, 0, maxBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-c.in:
			batch = c.batch(p, batch)
		}
		now := c.s.clock.Now()
		for rest := batch; len(rest) > 0; {
			// Cut at maxBatchBytes of requests: the leader bounds a frame.
			cmds = cmds[:0]
			size := 0
			for len(rest) > 0 && (len(cmds) == 0 || size+rest[0].size <= maxBatchBytes) {
				p := rest[0]
				rest = rest[1:]
				c.add(p, now)
				cmds = append(cmds, p.cmd)
				size += p.size
			}
			enc, err := zkdb.AppendCommands(nil, cmds)
			if err != nil {
				// A request that does not encode is a bug; its writers lose
				// their connections rather than the node its loop.
				c.s.log.Error("cannot encode writes", "err", err)
				for i := range cmds {
					c.fail(cmds[i].Seq)
				}
				continue
			}
			select {
			case c.outbox <- forwardBatch{commands: enc, first: cmds[0].Seq, last: cmds[len(cmds)-1].Seq}:
			case <-ctx.Done():
				return
			}
		}
		clear(batch)
		clear(cmds)
	}
}

// forwardLoop hands batches to the leader one after another, so this
// node's writes enter the log in the order they were proposed.
func (c *raftCommitter) forwardLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case fb := <-c.outbox:
			c.forward(ctx, fb)
		}
	}
}

// forward hands one batch to the leader. While an election is under way
// (no leader known, the node asked has just stepped down, or it cannot be
// dialled because it died) nothing was taken, so it waits for the next
// leader and tries again, up to the leaderless limit, rather than fail
// the writes and send their clients to another node that waits for the
// same election. Any other failure leaves the outcome unknown: the
// writers' connections are dropped, as ZooKeeper's are when their leader
// dies, and a later write of theirs can never commit ahead of these (the
// DB refuses writes out of their connection's order).
func (c *raftCommitter) forward(ctx context.Context, fb forwardBatch) {
	deadline := time.Now().Add(c.leaderlessLimit())
	for {
		// Forward appends locally on the leader; only writes sent to
		// another node count as forwarded (a leadership change between
		// the two calls may miscount one batch).
		remote := !c.store.IsLeader()
		callCtx, cancel := context.WithTimeout(ctx, c.cfg.ForwardTimeout)
		err := c.store.Forward(callCtx, fb.commands)
		cancel()
		if err == nil {
			if remote {
				c.s.stats.forwarded.Add(int64(fb.last - fb.first + 1))
			}
			return
		}
		retry := errors.Is(err, raftstore.ErrNoLeader) || errors.Is(err, raftstore.ErrNotLeader) ||
			errors.Is(err, raftstore.ErrUnreachable)
		if !retry || time.Now().After(deadline) || ctx.Err() != nil {
			c.s.log.Warn("forwarding writes failed", "err", err, "writes", fb.last-fb.first+1)
			for seq := fb.first; seq <= fb.last; seq++ {
				c.fail(seq)
			}
			return
		}
		t := time.NewTimer(leaderPoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// leaderlessLimit is how long a node goes without a known leader before it
// stops serving clients: two election timeouts, time enough for an
// ordinary election.
func (c *raftCommitter) leaderlessLimit() time.Duration {
	return 2 * c.cfg.ElectionTimeout
}

// watchLeadership follows Raft's view of the leader. It drops and refuses
// clients while no leader is known (like a ZooKeeper follower that lost
// its leader, so clients move to the majority), drops writes that died
// with an old leader, and takes over session expiry when this node wins
// an election: only after a barrier (so the state holds everything the
// old leader committed) and after starting every session's timer afresh.
func (c *raftCommitter) watchLeadership(ctx context.Context) {
	var stranded sync.WaitGroup
	defer stranded.Wait()
	poll := time.NewTicker(leaderPoll)
	defer poll.Stop()
	leaderSeen := time.Now()
	var lastLeader uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		}
		now := time.Now()
		if id, _ := c.store.Leader(); id != 0 {
			leaderSeen = now
			c.s.setServing(true)
			if lastLeader != 0 && id != lastLeader {
				upTo := c.lastSeq()
				stranded.Go(func() { c.failStranded(ctx, upTo) })
			}
			lastLeader = id
		} else if now.Sub(leaderSeen) > c.leaderlessLimit() {
			c.s.setServing(false)
		}

		if !c.store.IsLeader() {
			c.s.dropUnvouched(now, c.vouched(), c.leaderlessLimit())
			if c.ready.Swap(0) != 0 {
				// Forget the sessions this node was closing: whether
				// those closes hold is the next leader's business.
				c.s.db.ResetTimers(c.s.clock.Now())
				c.s.log.Info("raft leadership lost", "node", c.cfg.NodeID)
			}
			continue
		}
		c.vouchedAt.Store(now.UnixNano())
		term := c.store.Term()
		if c.ready.Load() == term {
			continue
		}
		c.ready.Store(0)
		if err := c.store.Barrier(c.cfg.ElectionTimeout); err != nil || !c.store.IsLeader() || c.store.Term() != term {
			continue // lost it again, or not yet: try on the next poll
		}
		c.s.db.ResetTimers(c.s.clock.Now())
		c.ready.Store(term)
		c.s.log.Info("raft leadership gained", "node", c.cfg.NodeID, "term", term)
	}
}

// leading reports whether this node owns expiry: it leads, in the term
// whose takeover watchLeadership completed.
func (c *raftCommitter) leading() (uint64, bool) {
	term := c.ready.Load()
	return term, term != 0 && c.store.IsLeader() && c.store.Term() == term
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
		return // sweep still bounds them
	}
	stranded := c.selectSeqs(func(seq uint64, _ *proposal) bool { return seq <= upTo })
	if len(stranded) > 0 {
		c.s.log.Info("dropping writes lost with the old leader", "writes", len(stranded))
	}
	for _, seq := range stranded {
		c.fail(seq)
	}
}

// touched records client activity for the next report to the leader.
func (c *raftCommitter) touched(id int64) {
	c.touchMu.Lock()
	c.touchSet[id] = struct{}{}
	c.touchMu.Unlock()
}

// reportTouches tells the leader, which owns session expiry, which
// sessions this node's clients were active on, and so vouches for them.
// While this node has clients it reports every reportInterval, sessions
// or none: a report that comes back proves the leader hears this node,
// and only that (not Raft's last contact, which the leader's own appends
// keep fresh even when nothing of ours reaches it) lets it keep answering
// its clients. A failed report's sessions are carried into the next. It
// runs on real time, like the network it measures.
func (c *raftCommitter) reportTouches(ctx context.Context) {
	every := c.reportInterval()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.report(ctx, every)
	}
}

// reportInterval is how often a follower reports: twice a tick, and often
// enough that a few reports fit in a third of the shortest session
// timeout, the time a follower may go on answering a client without a
// report reaching the leader.
func (c *raftCommitter) reportInterval() time.Duration {
	return max(min(c.s.cfg.TickTime/2, c.s.cfg.MinSessionTimeout/9), 10*time.Millisecond)
}

func (c *raftCommitter) report(ctx context.Context, every time.Duration) {
	sent := time.Now()
	c.touchMu.Lock()
	ids := make([]int64, 0, len(c.touchSet))
	for id := range c.touchSet {
		ids = append(ids, id)
	}
	clear(c.touchSet)
	c.touchMu.Unlock()
	if c.store.IsLeader() {
		return // its clients touched its timers directly
	}
	if len(ids) == 0 && !c.s.hasSessions() {
		return // nobody to vouch for
	}
	callCtx, cancel := context.WithTimeout(ctx, max(2*every, 100*time.Millisecond))
	err := c.store.ReportTouches(callCtx, ids)
	cancel()
	if err != nil {
		c.touchMu.Lock()
		for _, id := range ids {
			c.touchSet[id] = struct{}{}
		}
		c.touchMu.Unlock()
		if ctx.Err() == nil && !c.reportsFailing.Swap(true) {
			c.s.log.Warn("reporting session activity to the leader failed: this node's clients will be dropped unless a report gets through",
				"err", err, "sessions", len(ids), "last_reached", c.vouched())
		}
		return
	}
	c.vouchedAt.Store(sent.UnixNano())
	if c.reportsFailing.Swap(false) {
		c.s.log.Info("session activity reaches the leader again")
	}
}

// sweep gives up on proposals that have waited proposalTimeout.
func (c *raftCommitter) sweep(ctx context.Context) {
	c.s.repeat(ctx, time.Second, func() {
		cutoff := c.s.clock.Now().Add(-proposalTimeout)
		for _, seq := range c.selectSeqs(func(_ uint64, p *proposal) bool { return p.since.Before(cutoff) }) {
			c.fail(seq)
		}
	})
}

// catchUp waits until this node has applied every write the leader had
// committed when it was called.
func (c *raftCommitter) catchUp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, proposalTimeout)
	defer cancel()
	err := c.store.WaitApplied(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return tree.ErrSystemError
	}
	return err
}

func (c *raftCommitter) mode() string {
	if c.store.IsLeader() {
		return "leader"
	}
	return "follower"
}

func (c *raftCommitter) addMember(id uint64, addr string) error { return c.store.AddVoter(id, addr) }
func (c *raftCommitter) removeMember(id uint64) error           { return c.store.RemoveServer(id) }
