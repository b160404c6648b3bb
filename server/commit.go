package server

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"

	"github.com/hutchzk/hutch/zkdb"
)

// proposal is one write on its way to the state: the command, and who is
// waiting for its outcome.
type proposal struct {
	cmd  zkdb.Command
	conn *conn // origin connection; nil for the server's own writes (expiry, cleanup)
	xid  int32
	req  request // what the reply records in the statistics
	// applied runs under the DB lock right after the command applied and
	// its watches fired, so a reply queued here follows those notifications.
	applied func(p *proposal, e *zkdb.Effects)
	// committed and err are set, before done closes, when the command
	// applied; a proposal given up on (its leader lost) closes done
	// without them.
	committed bool
	err       error
	since     time.Time     // when it was handed to the committer
	size      int           // bytes of the client's request, for batching
	done      chan struct{} // closed after applied ran, or on giving up
}

// committer orders proposals into the one sequence every replica applies
// to its zkdb.DB. The single-node committer applies them itself; the
// replicated one commits them through Raft, which applies them on every
// node. The server sees only this contract.
type committer interface {
	// open prepares the committer before the server serves clients.
	open() error
	// run orders proposals until ctx ends.
	run(ctx context.Context)
	// propose hands over a proposal; it reports false once the committer
	// stopped.
	propose(p *proposal) bool
	// take returns, once, the proposal this node made under seq.
	take(seq uint64) *proposal
	// failAll gives up on every waiting proposal.
	failAll()
	// catchUp returns once this node's state includes every write
	// committed before the call (sync).
	catchUp(ctx context.Context) error
	// leading reports whether this node owns session expiry and cleanup
	// now, and in which leadership term: it leads, has applied what the
	// previous leader committed, and has started every session's timer
	// afresh.
	leading() (term uint64, ok bool)
	// mode is srvr's Mode: standalone, leader or follower.
	mode() string
	// info describes the node's place in its ensemble.
	info() ReplicationInfo
	// touched records client activity on a session seen by this node.
	touched(session int64)
	addMember(id uint64, addr string) error
	removeMember(id uint64) error
}

// maxBatch and maxBatchBytes bound one batch of proposals.
const (
	maxBatch      = 256
	maxBatchBytes = 4 << 20
)

// proposalQueue is the intake both committers share: proposals wait here
// until the committer's loop takes them in batches.
type proposalQueue struct {
	in chan *proposal
	// stopped is closed when the committer's loop returns, so late
	// proposers never block.
	stopped chan struct{}
}

func newProposalQueue() proposalQueue {
	return proposalQueue{in: make(chan *proposal, 4*maxBatch), stopped: make(chan struct{})}
}

func (q *proposalQueue) propose(p *proposal) bool {
	select {
	case q.in <- p:
		return true
	case <-q.stopped:
		return false
	}
}

// batch starts a batch with first and adds whatever else is already
// waiting, up to maxBatch.
func (q *proposalQueue) batch(first *proposal, batch []*proposal) []*proposal {
	batch = append(batch[:0], first)
	for len(batch) < maxBatch {
		select {
		case p := <-q.in:
			batch = append(batch, p)
		default:
			return batch
		}
	}
	return batch
}

// pendingTable holds the proposals this node made that have not applied,
// by their sequence number (Command.Seq).
type pendingTable struct {
	mu     sync.Mutex // guards m and next
	m      map[uint64]*proposal
	next   uint64
	nodeID uint64
}

// newPendingTable numbers this process's proposals from a random point of
// a 63-bit space: a restarted node replays entries it proposed in earlier
// runs, whose numbers must not match this run's.
func newPendingTable(nodeID uint64) pendingTable {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return pendingTable{m: make(map[uint64]*proposal), next: binary.BigEndian.Uint64(b[:]) >> 1, nodeID: nodeID}
}

// add numbers p and records it as waiting.
func (t *pendingTable) add(p *proposal, now time.Time) {
	t.mu.Lock()
	t.next++
	p.cmd.Origin, p.cmd.Seq = t.nodeID, t.next
	p.since = now
	t.m[t.next] = p
	t.mu.Unlock()
}

func (t *pendingTable) take(seq uint64) *proposal {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.m[seq]
	delete(t.m, seq)
	return p
}

// lastSeq is the number of the newest proposal.
func (t *pendingTable) lastSeq() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.next
}

// selectSeqs returns the numbers of the waiting proposals keep picks.
func (t *pendingTable) selectSeqs(keep func(seq uint64, p *proposal) bool) []uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []uint64
	for seq, p := range t.m {
		if keep(seq, p) {
			out = append(out, seq)
		}
	}
	return out
}

// fail gives up on a proposal: its connection is dropped, so the client
// reconnects and learns the outcome by reading, as after connection loss.
func (t *pendingTable) fail(seq uint64) {
	p := t.take(seq)
	if p == nil {
		return
	}
	if p.conn != nil {
		p.conn.out.abort()
	}
	close(p.done)
}

func (t *pendingTable) failAll() {
	for _, seq := range t.selectSeqs(func(uint64, *proposal) bool { return true }) {
		t.fail(seq)
	}
}

// localTerm is the one leadership term of a single node.
const localTerm = 1

// localCommitter serves a single in-memory node: it applies batches of
// proposals to the DB itself, stamped with its clock.
type localCommitter struct {
	proposalQueue
	pendingTable
	s *Server
}

func newLocalCommitter(s *Server) *localCommitter {
	return &localCommitter{s: s, proposalQueue: newProposalQueue(), pendingTable: newPendingTable(uint64(s.cfg.ServerID))}
}

func (c *localCommitter) open() error                    { return nil }
func (c *localCommitter) catchUp(context.Context) error  { return nil }
func (c *localCommitter) leading() (uint64, bool)        { return 1, true }
func (c *localCommitter) mode() string                   { return "standalone" }
func (c *localCommitter) touched(int64)                  {}
func (c *localCommitter) addMember(uint64, string) error { return ErrNotReplicated }
func (c *localCommitter) removeMember(uint64) error      { return ErrNotReplicated }

func (c *localCommitter) run(ctx context.Context) {
	defer close(c.stopped)
	batch := make([]*proposal, 0, maxBatch)
	cmds := make([]zkdb.Command, 0, maxBatch)
	for {
		select {
		case <-ctx.Done():
			c.failAll()
			return
		case p := <-c.in:
			batch = c.batch(p, batch)
		}
		now := c.s.clock.Now()
		cmds = cmds[:0]
		for _, p := range batch {
			c.add(p, now)
			cmds = append(cmds, p.cmd)
		}
		c.s.db.Apply(zkdb.Batch{Time: now.UnixMilli(), Commands: cmds, Term: localTerm}, c.s.db.Applied()+1)
		clear(batch)
		clear(cmds)
	}
}
