package raftstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// Events is what a Node tells the server it replicates for. The methods
// are called from the Node's goroutines and must not block for long.
type Events interface {
	// Failed says the commands this node proposed under seqs will never
	// apply, or may have and cannot be known to: their writers must be
	// told as ZooKeeper tells of connection loss.
	Failed(seqs []uint64)
	// Stranded says every command this node proposed up to seq upTo that
	// has not applied by now never will: it died with an old leader.
	Stranded(upTo uint64)
	// Serving says whether clients may be served: false once no leader
	// has been known for two election timeouts, true when one is again.
	Serving(ok bool)
	// ReadOnly says no leader has been known for Config.ReadOnlyAfter:
	// the server may serve read-only clients from this node's state
	// until Serving(true). It comes again at every look meanwhile.
	ReadOnly()
	// Vouch says, on a follower, when the newest report of its clients'
	// activity that reached the leader was sent; a client whose session
	// timeout's third has passed since (and since it attached) must be
	// dropped, before the leader could expire its session. limit bounds
	// how long a client is answered without a report reaching the leader,
	// whatever its timeout (the node's LeaderlessLimit); it travels with
	// the call so the server keeps no copy written after this loop starts.
	Vouch(reached time.Time, limit time.Duration)
	// Halted says this member stopped itself because it cannot go on
	// safely (its disk failed a write, its log or state is damaged or
	// differs from the others'): err says what and where. Raft is shut
	// down; the server must close every client and refuse new ones, as
	// ZooKeeper exits, so that they move to a member that can serve them.
	Halted(err error)
}

// Node is a server's replication wing: it puts the commands the server
// proposes into the Raft log (batched, and forwarded in order to the
// leader from a follower), follows elections, takes over session expiry
// when it wins, reports the server's client activity to the leader and
// says how recently the leader heard it, and answers how far to catch up
// for sync. The server keeps who waits for each command; it hears back
// through the DB (the command applies) or through Events.
type Node struct {
	store  *Store
	cfg    Config
	db     *zkdb.DB
	events Events

	// in carries proposals from Propose to run; outbox encoded batches
	// from run to forwardLoop, in order.
	in     chan proposed
	outbox chan forwardBatch
	// stopped is closed when run returns, so late proposers never block.
	stopped chan struct{}
	// ctx ends when the node closes.
	ctx    context.Context
	cancel context.CancelFunc
	// reconfigIn carries this node's clients' reconfigs to reconfigLoop.
	// On the leader, decideMu is held while one is decided and logged
	// (one at a time: another meanwhile is refused as in progress), and
	// raftMu while one is decided and Raft's configuration is changed
	// (reconcile.go), by a decision or by the leader's periodic look.
	reconfigIn chan reconfigCall
	decideMu   sync.Mutex
	raftMu     sync.Mutex
	// leaving is when the leader first saw each server in Raft's
	// configuration that the membership no longer names (reconcile.go);
	// raftMu guards it.
	leaving map[uint64]time.Time
	wg      sync.WaitGroup

	// ready is the term in which this node leads with every session's
	// timer started afresh; 0 while it does not lead.
	ready atomic.Uint64
	// lastSeq is the newest proposal handed to the leader: on a change of
	// leader, those up to it not applied once caught up are stranded.
	lastSeq atomic.Uint64
	// forwarded counts commands sent to another node to be logged.
	forwarded atomic.Int64

	touchMu  sync.Mutex         // guards touchSet
	touchSet map[int64]struct{} // sessions active here since the last report that reached the leader
	// vouchedAt (unix nanos, real time) is when the newest activity
	// report that reached the leader was sent: every touch recorded
	// before it has been heard there. On the leader it is refreshed every
	// poll, its own clients touching its timers directly.
	vouchedAt atomic.Int64
	// reportsFailing is set while reports fail, so the failure is logged
	// as a warning once, not at every attempt.
	reportsFailing atomic.Bool
	// owed are reports that reached the leader, not yet vouched for:
	// each vouches once this node has applied the index the leader had
	// applied when it heard (settleVouches). Only reportTouches uses it.
	owed []owedReport
	// lagging is set while the oldest report owed is older than the
	// leaderless limit, so the lag is logged once.
	lagging bool
}

// proposed is one command on its way into a batch, and the size of the
// client request it came from.
type proposed struct {
	cmd  zkdb.Command
	size int
}

// forwardBatch is one batch of encoded commands and the sequence numbers
// of its proposals.
type forwardBatch struct {
	commands []byte
	seqs     []uint64
}

// maxBatch and maxBatchBytes bound one batch of proposals; MaxBatchBytes
// is also what a forwarded frame must hold.
const (
	maxBatch      = 256
	MaxBatchBytes = 4 << 20
)

// leaderPoll is how often a forward waiting for a leader tries again,
// and how soon a node that won an election but could not yet take over
// looks again. Raft runs on real time, so this does too.
const leaderPoll = 20 * time.Millisecond

// StrandedTimeout bounds how long the node waits to catch up with a new
// leader before it gives up on writes the old one took.
const StrandedTimeout = 10 * time.Second

// OpenNode starts replicating into db: it opens the Raft store (see Open)
// and starts the node's loops, which run until Close.
func OpenNode(cfg Config, db *zkdb.DB, events Events) (*Node, error) {
	store, err := Open(cfg, db)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{
		store:      store,
		cfg:        store.Config(),
		db:         db,
		events:     events,
		in:         make(chan proposed, 4*maxBatch),
		outbox:     make(chan forwardBatch, 64),
		stopped:    make(chan struct{}),
		ctx:        ctx,
		cancel:     cancel,
		reconfigIn: make(chan reconfigCall, 16),
		leaving:    make(map[uint64]time.Time),
		touchSet:   make(map[int64]struct{}),
	}
	store.onHalt(events.Halted)
	serve := n.serveReconfig
	store.onReconfig.Store(&serve)
	n.wg.Go(func() { n.run(ctx) })
	n.wg.Go(func() { n.forwardLoop(ctx) })
	n.wg.Go(func() { n.watchLeadership(ctx) })
	n.wg.Go(func() { n.reportTouches(ctx) })
	n.wg.Go(func() { n.reconfigLoop(ctx) })
	n.wg.Go(func() { n.reconcileLoop(ctx) })
	return n, nil
}

// Close stops the node's loops and Raft. Proposals not yet applied never
// will be; the caller gives up on them.
func (n *Node) Close() error {
	n.cancel()
	n.wg.Wait()
	return n.store.Close()
}

// Store is the Raft store underneath, for statistics and tests.
func (n *Node) Store() *Store { return n.store }

// Halted returns why this member stopped itself, or nil while it runs.
func (n *Node) Halted() error { return n.store.Halted() }

// Propose queues a command (Origin and Seq set by the caller, who waits
// for it to apply) for the log, size being its client request's. It
// reports false once the node has stopped.
func (n *Node) Propose(cmd zkdb.Command, size int) bool {
	select {
	case n.in <- proposed{cmd: cmd, size: size}:
		return true
	case <-n.stopped:
		return false
	}
}

// run batches proposals, encodes each batch and hands it to forwardLoop.
func (n *Node) run(ctx context.Context) {
	defer close(n.stopped)
	batch := make([]proposed, 0, maxBatch)
	cmds := make([]zkdb.Command, 0, maxBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-n.in:
			batch = append(batch[:0], p)
		}
	more:
		for len(batch) < maxBatch {
			select {
			case p := <-n.in:
				batch = append(batch, p)
			default:
				break more
			}
		}
		for rest := batch; len(rest) > 0; {
			// Cut at MaxBatchBytes of requests: the leader bounds a frame.
			cmds = cmds[:0]
			var seqs []uint64
			size := 0
			for len(rest) > 0 && (len(cmds) == 0 || size+rest[0].size <= MaxBatchBytes) {
				cmds = append(cmds, rest[0].cmd)
				seqs = append(seqs, rest[0].cmd.Seq)
				size += rest[0].size
				rest = rest[1:]
			}
			enc, err := zkdb.AppendCommands(nil, cmds)
			if err != nil {
				// A request that does not encode is a bug; its writers lose
				// their connections rather than the node its loop.
				n.cfg.Logger.Error("cannot encode writes", "err", err)
				n.events.Failed(seqs)
				continue
			}
			select {
			case n.outbox <- forwardBatch{commands: enc, seqs: seqs}:
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
func (n *Node) forwardLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case fb := <-n.outbox:
			n.forward(ctx, fb)
		}
	}
}

// forward hands one batch to the leader. While an election is under way
// (no leader known, the node asked has just stepped down, or it cannot be
// dialled because it died) nothing was taken, so it waits for the next
// leader and tries again, up to the leaderless limit, rather than fail
// the writes and send their clients to another node that waits for the
// same election. Any other failure leaves the outcome unknown: the
// writers are failed, as ZooKeeper's are when their leader dies, and a
// later write of theirs can never commit ahead of these (the DB refuses
// writes out of their connection's order).
func (n *Node) forward(ctx context.Context, fb forwardBatch) {
	n.lastSeq.Store(max(n.lastSeq.Load(), fb.seqs[len(fb.seqs)-1]))
	deadline := time.Now().Add(n.LeaderlessLimit())
	for {
		// Forward appends locally on the leader; only writes sent to
		// another node count as forwarded (a leadership change between
		// the two calls may miscount one batch).
		remote := !n.store.IsLeader()
		callCtx, cancel := context.WithTimeout(ctx, n.cfg.ForwardTimeout)
		err := n.store.Forward(callCtx, fb.commands)
		cancel()
		if err == nil {
			if remote {
				n.forwarded.Add(int64(len(fb.seqs)))
			}
			return
		}
		retry := errors.Is(err, ErrNoLeader) || errors.Is(err, ErrNotLeader) || errors.Is(err, ErrUnreachable)
		if !retry || time.Now().After(deadline) || ctx.Err() != nil {
			n.cfg.Logger.Warn("forwarding writes failed", "err", err, "writes", len(fb.seqs))
			n.events.Failed(fb.seqs)
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

// LeaderlessLimit is how long a node goes without a known leader before
// it stops serving clients: two election timeouts, time enough for an
// ordinary election. It also bounds how long a follower vouches for a
// client without a report reaching the leader.
func (n *Node) LeaderlessLimit() time.Duration { return 2 * n.cfg.ElectionTimeout }

// watchLeadership follows Raft's view of the leader. It stops serving
// clients while no leader is known (like a ZooKeeper follower that lost
// its leader, so clients move to the majority), gives up on writes that
// died with an old leader, and takes over session expiry when this node
// wins an election: only after a barrier (so the state holds everything
// the old leader committed) and after starting every session's timer
// afresh. It looks whenever Raft's state or leader changes, and at
// least every changeFallback.
func (n *Node) watchLeadership(ctx context.Context) {
	var stranded sync.WaitGroup
	defer stranded.Wait()
	w := leadershipWatch{leaderSeen: time.Now()}
	for {
		changed := n.store.changes.next()
		wait := n.lookAtLeadership(ctx, &w, &stranded)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// leadershipWatch is what watchLeadership remembers between looks.
type leadershipWatch struct {
	leaderSeen time.Time // when a leader was last known
	// missedSince is when a look first found no leader (zero while one
	// is known): read-only mode's grace runs from the loss noticed, as
	// ZooKeeper's from the moment its peer starts looking.
	missedSince time.Time
	lastLeader  uint64
	quiet       quietState
}

// lookAtLeadership acts on Raft's state as it is now, and returns how
// soon it must look again even if nothing changes.
func (n *Node) lookAtLeadership(ctx context.Context, w *leadershipWatch, stranded *sync.WaitGroup) time.Duration {
	now := time.Now()
	wait := changeFallback
	n.tuneQuiet(&w.quiet, now)
	if id, _ := n.store.Leader(); id != 0 {
		w.leaderSeen, w.missedSince = now, time.Time{}
		n.events.Serving(true)
		if w.lastLeader != 0 && id != w.lastLeader {
			upTo := n.lastSeq.Load()
			stranded.Go(func() { n.strand(ctx, upTo) })
		}
		w.lastLeader = id
	} else {
		// Count from when Raft stopped knowing the leader, not from the
		// last look that found one: looks come on a change and every
		// changeFallback besides, so that look can be 2 s older than the
		// loss, and the node stopped serving during an ordinary election.
		// Had the loss's observation been dropped, the time kept is older
		// and the count errs towards stopping sooner, as before.
		if lost := n.store.changes.lastLeaderLost(); lost.After(w.leaderSeen) {
			w.leaderSeen = lost
		}
		leaderless := now.Sub(w.leaderSeen)
		if left := n.LeaderlessLimit() - leaderless; left <= 0 {
			n.events.Serving(false)
		} else {
			wait = min(wait, left) // stop serving on time if none comes
		}
		if w.missedSince.IsZero() {
			w.missedSince = now
		}
		if ro := n.cfg.ReadOnlyAfter; ro > 0 {
			if left := ro - now.Sub(w.missedSince); left <= 0 {
				n.events.ReadOnly()
			} else {
				wait = min(wait, left)
			}
		}
	}

	if !n.store.IsLeader() {
		if n.ready.Swap(0) != 0 {
			// Forget the sessions this node was closing: whether
			// those closes hold is the next leader's business.
			n.db.ResetTimers(n.cfg.Clock.Now())
			n.cfg.Logger.Info("raft leadership lost", "node", n.cfg.NodeID)
		}
		return wait
	}
	n.vouchedAt.Store(now.UnixNano())
	term := n.store.Term()
	if n.ready.Load() == term {
		return wait
	}
	n.ready.Store(0)
	if err := n.store.Barrier(n.cfg.ElectionTimeout); err != nil || !n.store.IsLeader() || n.store.Term() != term {
		return leaderPoll // lost it again, or not yet: look again soon
	}
	if err := n.writeFirstMembership(); err != nil {
		n.cfg.Logger.Warn("cannot write the ensemble's first membership", "err", err)
		return leaderPoll
	}
	n.db.ResetTimers(n.cfg.Clock.Now())
	n.ready.Store(term)
	n.cfg.Logger.Info("raft leadership gained", "node", n.cfg.NodeID, "term", term)
	return wait
}

// Leading reports whether this node owns expiry: it leads, in the term
// whose takeover watchLeadership completed.
func (n *Node) Leading() (uint64, bool) {
	term := n.ready.Load()
	return term, term != 0 && n.store.IsLeader() && n.store.Term() == term
}

// strand waits until this node has applied all the new leader has, then
// says that its writes up to upTo that the old leader took but that died
// with it never will apply. Without this they would hold their sessions
// (and any lock they were releasing) until the server gave up on them.
func (n *Node) strand(ctx context.Context, upTo uint64) {
	ctx, cancel := context.WithTimeout(ctx, StrandedTimeout)
	defer cancel()
	if err := n.store.WaitApplied(ctx); err != nil {
		return // the server's own proposal timeout still bounds them
	}
	n.events.Stranded(upTo)
}

// Touched records client activity on a session, for the next report.
func (n *Node) Touched(id int64) {
	n.touchMu.Lock()
	n.touchSet[id] = struct{}{}
	n.touchMu.Unlock()
}

// Vouched returns when this node last showed that the leader hears its
// clients (zero if never).
func (n *Node) Vouched() time.Time {
	if ns := n.vouchedAt.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// reportTouches tells the leader, which owns session expiry, which
// sessions this node's clients were active on, and so vouches for them;
// after each report a follower has the server drop the clients it can no
// longer vouch for.
// A follower reports every ReportInterval, sessions or none: a report
// that comes back proves the leader hears this node, and only that (not
// Raft's last contact, which the leader's own appends keep fresh even
// when nothing of ours reaches it) lets it keep answering its clients. A
// failed report's sessions are carried into the next. It runs on real
// time, like the network it measures.
func (n *Node) reportTouches(ctx context.Context) {
	t := time.NewTimer(n.cfg.ReportInterval)
	defer t.Stop()
	var digestSent time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n.report(ctx)
		if now := time.Now(); now.Sub(digestSent) >= digestEvery && !n.store.IsLeader() {
			digestSent = now
			n.sendDigest(ctx)
		}
		if n.store.IsLeader() {
			n.owed = n.owed[:0]
			n.vouchedAt.Store(time.Now().UnixNano())
		} else {
			n.settleVouches(time.Now())
			n.events.Vouch(n.Vouched(), n.LeaderlessLimit())
		}
		// With no session in the ensemble there is nobody to vouch for:
		// look less often. A session's creation vouches for it (its
		// connection's attach time) until the next report.
		next := n.cfg.ReportInterval
		if n.db.SessionCount() == 0 {
			next = max(next, idleReportInterval)
		}
		t.Reset(next)
	}
}

// owedReport is a report that reached the leader when it had applied
// index.
type owedReport struct {
	sent  time.Time
	index uint64
}

// maxOwed bounds the reports owed; past it the oldest are dropped, which
// only delays vouching.
const maxOwed = 256

// settleVouches vouches for the newest report owed whose index this node
// has applied: a report proves the leader hears this node, and only once
// this node holds everything the leader held then may its clients be
// answered as of then. A follower that cannot append or apply (a disk
// refusing writes, one far slower than the others) therefore stops
// vouching, however well its reports get through, and its clients move
// to a member that is current, as they would from a ZooKeeper follower
// that fell out of sync.
func (n *Node) settleVouches(now time.Time) {
	applied := n.db.Applied()
	last := -1
	for i, o := range n.owed {
		if o.index <= applied {
			last = i
		}
	}
	if last >= 0 {
		n.vouch(n.owed[last].sent)
		n.owed = append(n.owed[:0], n.owed[last+1:]...)
	}
	behind := len(n.owed) > 0 && now.Sub(n.owed[0].sent) > n.LeaderlessLimit()
	if behind && !n.lagging {
		n.cfg.Logger.Warn("this member has not applied what the leader had applied when it last heard from it: "+
			"its clients are dropped, to move to a member that is current, until it catches up",
			"applied", applied, "leader_applied", n.owed[0].index, "since", n.owed[0].sent)
	} else if !behind && n.lagging {
		n.cfg.Logger.Info("this member has caught up with the leader", "applied", applied)
	}
	n.lagging = behind
}

// vouch moves vouchedAt forward to t (never back).
func (n *Node) vouch(t time.Time) {
	for {
		old := n.vouchedAt.Load()
		if t.UnixNano() <= old || n.vouchedAt.CompareAndSwap(old, t.UnixNano()) {
			return
		}
	}
}

// idleReportInterval is how often reportTouches looks while the ensemble
// holds no session.
const idleReportInterval = time.Second

func (n *Node) report(ctx context.Context) {
	sent := time.Now()
	n.touchMu.Lock()
	ids := make([]int64, 0, len(n.touchSet))
	for id := range n.touchSet {
		ids = append(ids, id)
	}
	clear(n.touchSet)
	n.touchMu.Unlock()
	if n.store.IsLeader() {
		return // its clients touched its timers directly
	}
	if len(ids) == 0 && n.db.SessionCount() == 0 {
		n.vouch(sent) // nobody to vouch for
		return
	}
	// Bounded by the interval, so that a follower cut off from the leader
	// still checks its clients every interval or two (see Vouch).
	callCtx, cancel := context.WithTimeout(ctx, max(n.cfg.ReportInterval, 50*time.Millisecond))
	leaderApplied, err := n.store.ReportTouches(callCtx, ids)
	cancel()
	if err != nil {
		n.touchMu.Lock()
		for _, id := range ids {
			n.touchSet[id] = struct{}{}
		}
		n.touchMu.Unlock()
		if ctx.Err() == nil && !n.reportsFailing.Swap(true) {
			n.cfg.Logger.Warn("reporting session activity to the leader failed: this node's clients will be dropped unless a report gets through",
				"err", err, "sessions", len(ids), "last_reached", n.Vouched())
		}
		return
	}
	if len(n.owed) == maxOwed {
		n.owed = append(n.owed[:0], n.owed[1:]...)
	}
	n.owed = append(n.owed, owedReport{sent: sent, index: leaderApplied})
	if n.reportsFailing.Swap(false) {
		n.cfg.Logger.Info("session activity reaches the leader again")
	}
}

// CatchUp returns once this node has applied every write the leader had
// committed when it was called (sync), or fails after StrandedTimeout.
func (n *Node) CatchUp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, StrandedTimeout)
	defer cancel()
	return n.store.WaitApplied(ctx)
}

// State is this node's part now: the leader, or a follower or an
// observer as the membership names it.
func (n *Node) State() membership.State {
	if n.store.IsLeader() {
		return membership.Leading
	}
	if m, ok := n.db.Member(n.cfg.NodeID); ok && !m.Votes() {
		return membership.Observing
	}
	return membership.Following
}

// Info describes this node's place in its ensemble.
type Info struct {
	State      membership.State
	NodeID     uint64
	LeaderID   uint64 // 0 when no leader is known
	LeaderAddr string
	Term       uint64
	// Members is the membership as the replicated state holds it;
	// Replicas is Raft's configuration as last committed (who is sent
	// the log, who votes), in the same order of the log.
	Members  membership.Config
	Replicas []zkdb.Replica
	// LastContact is the leader's last contact with a follower (zero on
	// the leader); Vouched when the leader last heard of its clients.
	LastContact, Vouched time.Time
	// Raft holds hashicorp/raft's statistics (commit_index,
	// applied_index, last_log_index, ...) plus this node's own.
	Raft map[string]string
	// DataDir is where the log and snapshots live; "" in memory.
	DataDir string
	// Forwarded counts the writes sent to the leader from this node.
	Forwarded int64
}

// Info reports the node's place in its ensemble.
func (n *Node) Info() Info {
	st := n.store
	id, addr := st.Leader()
	in := Info{
		State:      n.State(),
		NodeID:     n.cfg.NodeID,
		LeaderID:   id,
		LeaderAddr: addr,
		Term:       st.Term(),
		Raft:       st.Stats(),
		DataDir:    n.cfg.DataDir,
		Forwarded:  n.Forwarded(),
		Vouched:    n.Vouched(),
	}
	if !in.State.Leads() {
		in.LastContact = st.LastContact()
	}
	in.Members, in.Replicas = n.db.Membership(), n.db.Replicas()
	return in
}

// Forwarded counts the writes this node has sent to another node, the
// leader, to be logged.
func (n *Node) Forwarded() int64 { return n.forwarded.Load() }

// writeFirstMembership puts the ensemble's first configuration (Members,
// from its server.N lines) into the log as the first leader takes over,
// and waits for it to apply: from then on the membership is the
// replicated state's. A later leader finds it there and does nothing;
// should two leaders both write it, the second finds another version and
// is refused.
func (n *Node) writeFirstMembership() error {
	if !n.db.Membership().IsZero() || !slices.ContainsFunc(n.cfg.Members, func(m membership.Member) bool { return m.ID == n.cfg.NodeID }) {
		return nil // written already, or this node joined later and knows only part of it
	}
	return n.writeMembership(n.cfg.Members)
}

// writeMembership logs members as the first membership and waits for it
// to apply.
func (n *Node) writeMembership(members []membership.Member) error {
	cmd := zkdb.Command{Origin: n.cfg.NodeID, Kind: zkdb.KindReconfig, Txn: tree.Txn{Op: wire.OpReconfig,
		Req: &zkdb.Outcome{Config: membership.FromMembers(0, members)}}}
	enc, err := zkdb.AppendCommands(nil, []zkdb.Command{cmd})
	if err != nil {
		return err
	}
	return n.store.wait(n.store.append(enc))
}
