package raftstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/faultnet"
)

// TestPeerPortSurvivesFlood floods one member's peer port, from the
// address the members themselves use, with 10,000 connections that never
// authenticate (half idle after reading the greeting, half sending
// garbage). The member must still take fresh authenticated connections,
// win an election through them, and take forwarded writes. Before the
// fix 64 idle strangers filled every handshake slot for 5 s each, and
// every connection past them, real members' included, was closed at once.
func TestPeerPortSurvivesFlood(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, 5*time.Second, nodes...)
	fs := followers(nodes, leader)
	target, other := fs[0], fs[1]

	flood := faultnet.StartFlood(faultnet.FloodConfig{Addr: target.Addr(), FromIP: "127.0.0.1", Total: 10_000, Hold: 400, For: time.Minute})
	defer func() { t.Logf("flood: %+v", flood.Stop()) }()
	waitFor(t, 20*time.Second, "the flood to be under way", func() bool { return flood.Stats().Opened >= 1000 })

	// Fresh handshakes from a member get through, one after another.
	for i := range 20 {
		c, err := dialPeer(other.Store.cfg.Dial, testSecret, target.Addr(), tagPipe, 2*time.Second)
		if err != nil {
			t.Fatalf("authenticated dial %d during the flood: %v (flood so far %+v)", i, err, flood.Stats())
		}
		c.Close()
		if waiting, knocked := target.mux.pendingCount(); waiting > target.mux.pending.hardCap || knocked > maxKnocked {
			t.Fatalf("%d connections waiting to knock and %d knocked, bounds %d and %d", waiting, knocked, target.mux.pending.hardCap, maxKnocked)
		}
	}

	// The leader dies: the flooded member and the other elect a leader
	// over fresh connections, and writes forwarded by the follower apply.
	leader.Close()
	next := waitLeader(t, 20*time.Second, target, other)
	follower := other
	if next == other {
		follower = target
	}
	for i := range 5 {
		follower.dropIdleForwards() // each forward dials afresh
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var err error
		for {
			// As Node.forward does: nothing was taken while leadership
			// moves (a loaded machine may hold another election).
			err = follower.Forward(ctx, encode(t, createBatch(follower.cfg.NodeID, "/flooded-"+string(rune('a'+i))+"-", 3)))
			if !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrNoLeader) && !errors.Is(err, ErrUnreachable) || ctx.Err() != nil {
				break
			}
			time.Sleep(leaderPoll)
		}
		cancel()
		if err != nil {
			t.Fatalf("forward %d from node %d to the leader during the flood: %v", i, follower.cfg.NodeID, err)
		}
	}
	waitFor(t, 20*time.Second, "the forwarded writes on both nodes", func() bool {
		return target.app.exists("/flooded-e-2") && other.app.exists("/flooded-e-2")
	})
	waiting, knocked := target.mux.pendingCount()
	t.Logf("node %d led after the old leader died; flood so far %+v; on the flooded node %d connections wait to knock, %d knocked",
		next.cfg.NodeID, flood.Stats(), waiting, knocked)
}

// dropIdleForwards closes the pipes to the leader, so the next forward
// dials.
func (s *Store) dropIdleForwards() {
	s.fwdMu.Lock()
	pipes := append([]*pipe(nil), s.pipes...)
	s.fwdMu.Unlock()
	for _, p := range pipes {
		p.fail(errors.New("test: dropped"))
	}
}
