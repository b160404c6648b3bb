package server

import (
	"context"

	"github.com/hutchzk/hutch/tree"
)

// proposal is one write on its way to the tree: the transaction, and who is
// waiting for its outcome.
type proposal struct {
	txn  tree.Txn
	conn *conn // origin connection; nil for server-issued writes (expiry, cleanup)
	xid  int32
	// applied runs under the tree lock right after the transaction applied and
	// its watches fired, so a reply queued here follows those notifications.
	applied func(p *proposal, res *tree.Result)
	// committed is set, before done closes, when the write applied; a
	// proposal given up on (its leader lost) closes done without it.
	committed bool
	done      chan struct{} // closed after applied ran, or on giving up
}

// committer orders proposals and applies them, in one total order, through
// Server.applyCommitted. The single-node committer applies them directly; a
// replicated one commits them through Raft first and runs the same function on
// every node.
type committer interface {
	// open prepares the committer before the server serves clients.
	open() error
	// propose hands over a proposal; it reports false once the committer stopped.
	propose(p *proposal) bool
	run(ctx context.Context)
}

// maxBatch bounds how many proposals one tree-lock acquisition applies.
const maxBatch = 256

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

// localCommitter serves a single in-memory node: it stamps zxid and time onto
// each proposal and applies batches under one lock acquisition.
type localCommitter struct {
	proposalQueue
	s *Server
}

func newLocalCommitter(s *Server) *localCommitter {
	return &localCommitter{s: s, proposalQueue: newProposalQueue()}
}

func (c *localCommitter) open() error { return nil }

func (c *localCommitter) run(ctx context.Context) {
	defer close(c.stopped)
	batch := make([]*proposal, 0, maxBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-c.in:
			batch = c.batch(p, batch)
		}
		c.s.applyBatch(batch)
		clear(batch)
	}
}
