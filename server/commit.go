package server

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/hutchzk/hutch/clock"
	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// replication orders the server's writes into the one sequence every
// replica applies to its zkdb.DB. A single node's applies them itself
// (localReplication); an ensemble member's is a raftstore.Node, which
// commits them through Raft. The server numbers each proposal and waits
// for it (pendingTable); it hears that a command applied from the DB, and
// that one never will through raftstore.Events.
type replication interface {
	// Propose queues a command, numbered by the server, with the size of
	// its client request; false once replication has stopped.
	Propose(cmd zkdb.Command, size int) bool
	// State is this node's part now: standalone, leader, follower or
	// observer.
	State() membership.State
	// Leading reports whether this node owns session expiry and cleanup
	// now, and in which leadership term: it leads, has applied what the
	// previous leader committed, and has started every session's timer
	// afresh.
	Leading() (term uint64, ok bool)
	// CatchUp returns once this node's state includes every write
	// committed before the call (sync).
	CatchUp(ctx context.Context) error
	// Touched records client activity on a session seen by this node.
	Touched(session int64)
	// Info describes the node's place in its ensemble.
	Info() raftstore.Info
	// Reconfig hands a reconfig (cmd names who asked, body is the
	// request's encoding; operator for the operator's own) to be decided
	// and its outcome logged; the outcome applies as a KindReconfig
	// command, or the proposal fails. False once replication has stopped.
	Reconfig(cmd zkdb.Command, body []byte, operator bool) bool
	// Close stops it; proposals not yet applied never will be.
	Close() error
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

// maxLocalBatch bounds the commands a single node applies at once.
const maxLocalBatch = 256

// localReplication serves a single in-memory node: it applies batches of
// commands to the DB itself, stamped with its clock.
type localReplication struct {
	db              *zkdb.DB
	clock           clock.Clock
	id              uint64
	reconfigEnabled bool
	in              chan zkdb.Command
	// stopped is closed when run returns, so late proposers never block.
	stopped chan struct{}
	cancel  context.CancelFunc
	done    sync.WaitGroup
}

func startLocalReplication(db *zkdb.DB, clk clock.Clock, id uint64, reconfigEnabled bool) *localReplication {
	ctx, cancel := context.WithCancel(context.Background())
	r := &localReplication{db: db, clock: clk, id: id, reconfigEnabled: reconfigEnabled, in: make(chan zkdb.Command, 4*maxLocalBatch),
		stopped: make(chan struct{}), cancel: cancel}
	r.done.Go(func() { r.run(ctx) })
	return r
}

func (r *localReplication) Propose(cmd zkdb.Command, _ int) bool {
	select {
	case r.in <- cmd:
		return true
	case <-r.stopped:
		return false
	}
}

func (r *localReplication) State() membership.State       { return membership.Standalone }
func (r *localReplication) Leading() (uint64, bool)       { return localTerm, true }
func (r *localReplication) CatchUp(context.Context) error { return nil }
func (r *localReplication) Touched(int64)                 {}

// Reconfig answers as a standalone ZooKeeper (standaloneReconfig).
func (r *localReplication) Reconfig(cmd zkdb.Command, _ []byte, _ bool) bool {
	return r.Propose(standaloneReconfig(cmd, r.reconfigEnabled), 0)
}

// standaloneReconfig is a single node's answer to a reconfig, as a
// standalone ZooKeeper's: RECONFIGDISABLED, or with reconfig enabled
// UNIMPLEMENTED (it has no ensemble to change). Either takes a zxid.
func standaloneReconfig(cmd zkdb.Command, enabled bool) zkdb.Command {
	code := wire.CodeUnimplemented
	if !enabled {
		code = wire.CodeReconfigDisabled
	}
	cmd.Kind, cmd.Txn.Op, cmd.Txn.Req = zkdb.KindReconfig, wire.OpReconfig, &zkdb.Outcome{Code: code}
	return cmd
}
func (r *localReplication) Info() raftstore.Info {
	return raftstore.Info{State: membership.Standalone, NodeID: r.id}
}

func (r *localReplication) Close() error {
	r.cancel()
	r.done.Wait()
	return nil
}

// run applies whatever commands are waiting, up to maxLocalBatch, as one
// batch, until ctx ends.
func (r *localReplication) run(ctx context.Context) {
	defer close(r.stopped)
	cmds := make([]zkdb.Command, 0, maxLocalBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-r.in:
			cmds = append(cmds[:0], c)
		}
	more:
		for len(cmds) < maxLocalBatch {
			select {
			case c := <-r.in:
				cmds = append(cmds, c)
			default:
				break more
			}
		}
		r.db.Apply(zkdb.Batch{Time: r.clock.Now().UnixMilli(), Commands: cmds, Term: localTerm}, r.db.Applied()+1)
		clear(cmds)
	}
}

// waitWrites blocks until this connection's earlier writes have applied.
func (c *conn) waitWrites() {
	if c.lastWrite != nil {
		c.srv.await(c.lastWrite)
		c.lastWrite = nil
	}
	c.pendingReconfig = nil
}

// submit proposes a write and returns once it has been queued; p.done closes
// after it applied. It reports false when the server is shutting down.
func (s *Server) submit(p *proposal) bool {
	p.done = make(chan struct{})
	s.pending.add(p, s.clock.Now())
	if s.repl.Propose(p.cmd, p.size) {
		return true
	}
	s.pending.take(p.cmd.Seq)
	return false
}

// await waits until p applied or was given up on, or the server is
// closing (a proposal still queued then is never taken); it reports
// whether p applied.
func (s *Server) await(p *proposal) bool {
	select {
	case <-p.done:
		return p.committed
	case <-s.ctx.Done():
		return false
	}
}

// ErrNotReplicated is returned by membership calls on a node without Raft.
var ErrNotReplicated = errors.New("server: not a replicated node")
