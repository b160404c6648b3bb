package raftstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hutchzk/hutch/zkdb"
)

// TestPipesAreSharedAndBounded: 200 concurrent syncs and 200 concurrent
// forwards from one follower reach the leader over at most maxPipes
// connections (before pipes, each concurrent forward dialled its own and
// the leader refused those past 64), and all of them succeed.
func TestPipesAreSharedAndBounded(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, 5*time.Second, nodes...)
	f := followers(nodes, leader)[0]

	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for i := range 200 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			errs <- untilSent(ctx, func() error { return f.WaitApplied(ctx) })
		})
		cmds := encode(t, []zkdb.Command{createCommand(f.cfg.NodeID, fmt.Sprintf("/p%d", i))})
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			errs <- untilSent(ctx, func() error { return f.Forward(ctx, cmds) })
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	leader.fwdMu.Lock()
	inbound := len(leader.inbound)
	leader.fwdMu.Unlock()
	f.fwdMu.Lock()
	pipes := len(f.pipes)
	f.fwdMu.Unlock()
	// The other follower holds its own pipes too (for commit notices).
	if pipes > maxPipes || inbound > 2*maxPipes {
		t.Fatalf("the follower holds %d pipes and the leader serves %d forwarding connections; at most %d a follower", pipes, inbound, maxPipes)
	}
}

// TestRefusedPipeRetires: once a node has refused a command frame as not
// the leader it refuses every later one on that connection (so no later
// batch overtakes one being retried); the follower must then use a new
// connection, or it could never forward to that node again, should it
// lead again.
func TestRefusedPipeRetires(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, 5*time.Second, nodes...)
	fs := followers(nodes, leader)
	from, notLeader := fs[0], fs[1]
	cmds := encode(t, []zkdb.Command{createCommand(from.cfg.NodeID, "/refused")})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	before, err := from.pipeTo(notLeader.Addr(), time.Now().Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_, _, status, err := from.roundTrip(ctx, notLeader.Addr(), frameCommands, cmds)
	if err != nil || status != statusNotLeader {
		t.Fatalf("a follower answered a command frame with status %d, %v; want not the leader", status, err)
	}
	after, err := from.pipeTo(notLeader.Addr(), time.Now().Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Fatal("the pipe that carried the refused command frame was handed out again")
	}
	select {
	case <-before.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the retired pipe was not closed once idle")
	}
	// The new pipe is served: an index question to a non-leader is
	// answered (refused) rather than lost.
	if _, _, status, err := from.roundTrip(ctx, notLeader.Addr(), frameIndex, nil); err != nil || status != statusNotLeader {
		t.Fatalf("index question on the new pipe: status %d, %v", status, err)
	}
}

// TestPipeSendHonoursTheDeadline: a frame waiting to enter a pipe whose
// writer is stuck (a leader paused with its socket buffers full) is given
// up on at the caller's deadline, as not sent. Before, it waited until
// the pipe broke: an activity report stuck there stopped the follower's
// report loop, which is also what drops clients the leader no longer
// hears of, and the follower went on answering them while the leader
// expired their sessions (the nemesis: live sessions expired, a lock held
// twice, after a leader's SIGSTOP).
func TestPipeSendHonoursTheDeadline(t *testing.T) {
	st := &Store{}
	p := &pipe{s: st, queue: make(chan *pipeCall), done: make(chan struct{}), calls: map[uint32]*pipeCall{}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	began := time.Now()
	pc := p.send(ctx, frameTouches, encodeTouches([]int64{1}))
	select {
	case r := <-pc.res:
		var notSent errNotSent
		if !errors.As(r.err, &notSent) {
			t.Fatalf("a frame that never left was answered %+v, want not sent", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("send waited past its deadline on a stuck pipe")
	}
	if waited := time.Since(began); waited > 2*time.Second {
		t.Fatalf("send took %v with a 50ms deadline", waited)
	}
	if n := p.load(); n != 0 {
		t.Fatalf("%d calls left waiting on the pipe", n)
	}
}
