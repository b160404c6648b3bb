package raftstore

import (
	"sync"

	"github.com/hashicorp/raft"
)

// hashicorp/raft (v1.7.3, and v1.8.0) can wedge a leader's replication to
// one follower for good, and hang Shutdown with it: when a pipelined
// append comes back unsuccessful (a follower whose disk refused it, one
// that restarted with a shorter log), the decoder goroutine returns and
// nobody reads the pipeline's answers any more; the send loop may still
// take one more trigger and send, and NetworkTransport's pipeline then
// blocks that send until the answer before it is read, while its own
// decoder blocks handing that answer to the reader that left. The send
// loop never returns, so the pipeline is never closed: the follower gets
// heartbeats and no entry again until the leader restarts, and Raft's
// Shutdown waits for the send loop forever (hashicorp/raft#612; Grafana
// Pyroscope turned pipelining off for it). TestPipelineWedge shows it.
//
// drainedPipeline keeps the transport's answers moving whatever Raft
// reads: a goroutine of its own takes every answer as it arrives and
// queues it for Raft's reader, so the send never waits on a reader that
// left, the loop sees its decoder gone and closes the pipeline, and
// replication starts over as Raft means it to. The queue holds at most
// the answers to sends made after the reader left, which the send loop
// stops making at its next turn. Drop it once TestPipelineWedge's
// upstream case no longer wedges.
type drainedPipeline struct {
	raft.AppendPipeline
	clamp     func(*raft.AppendEntriesRequest) // the sender's commit clamp
	out       chan raft.AppendFuture
	closed    chan struct{}
	closeOnce sync.Once
	drained   chan struct{} // closed when the draining goroutine returns
}

func newDrainedPipeline(p raft.AppendPipeline, clamp func(*raft.AppendEntriesRequest)) *drainedPipeline {
	d := &drainedPipeline{AppendPipeline: p, clamp: clamp, out: make(chan raft.AppendFuture),
		closed: make(chan struct{}), drained: make(chan struct{})}
	go d.drain()
	return d
}

func (d *drainedPipeline) drain() {
	defer close(d.drained)
	in := d.AppendPipeline.Consumer()
	var queue []raft.AppendFuture
	for {
		var (
			send chan raft.AppendFuture
			head raft.AppendFuture
		)
		if len(queue) > 0 {
			send, head = d.out, queue[0]
		}
		select {
		case f := <-in:
			queue = append(queue, f)
		case send <- head:
			queue[0] = nil
			queue = queue[1:]
		case <-d.closed:
			return
		}
	}
}

// AppendEntries sends an append down the pipeline, its commit index
// clamped as the transport's own sends are.
func (d *drainedPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	d.clamp(args)
	return d.AppendPipeline.AppendEntries(args, resp)
}

// Consumer is where Raft reads the answers, in the order sent.
func (d *drainedPipeline) Consumer() <-chan raft.AppendFuture { return d.out }

// Close closes the transport's pipeline and stops draining it.
func (d *drainedPipeline) Close() error {
	d.closeOnce.Do(func() { close(d.closed) })
	err := d.AppendPipeline.Close()
	<-d.drained
	return err
}

// AppendEntriesPipeline opens a pipeline to a follower whose answers are
// drained (drainedPipeline).
func (t *clampedTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.NetworkTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return newDrainedPipeline(p, t.clampToDurable), nil
}
