package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/nemesis"
	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/zkdb"
)

// SetRole changes node i's place in the membership by the operator's
// reconfig until the newest membership a running member has applied says
// i holds role (nemesis.Reconfigurer; roleHeld says what holding it
// means). The newest, not the first member's: a member restarted from an
// old snapshot shows that snapshot's membership until it hears a leader,
// and taking its word let a change that was lost with its leader pass for
// made (the process nemesis, seed 49). A change found not made, lost or
// never sent, is asked for again, each time against the version it was
// found at: one that outlives its try cannot undo a later step's change.
func (c *inprocCluster) SetRole(ctx context.Context, i int, role nemesis.Role) error {
	id := uint64(i + 1)
	var last error
	for {
		if s, r := c.newestMembership(); s != nil {
			if roleHeld(r, id, role) {
				return nil
			}
			attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
			if role == nemesis.Out {
				_, last = s.ReconfigureFrom(attempt, r.Members.Version, nil, []uint64{id})
			} else {
				line := fmt.Sprintf("server.%d=%s:0:%s", id, c.nodes[i].cfg.Raft.RaftAddr, role)
				_, last = s.ReconfigureFrom(attempt, r.Members.Version, []string{line}, nil)
			}
			cancel()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %d still not %s: %w (last reconfig: %v)", i+1, role, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond): // between tries, and for the change to apply
		}
	}
}

// newestMembership returns the running member whose applied membership
// is the newest (the highest version: each is a reconfig's zxid), and
// what it shows; nil when no running node belongs. A node that is no
// member is left out: removed, it hears the membership no more.
func (c *inprocCluster) newestMembership() (*Server, ReplicationInfo) {
	var best *Server
	var newest ReplicationInfo
	for j := range c.nodes {
		s := c.server(j)
		if s == nil {
			continue
		}
		r := s.Replication()
		if _, in := r.Members.Member(uint64(j + 1)); !in {
			continue
		}
		if best == nil || r.Members.Version > newest.Members.Version {
			best, newest = s, r
		}
	}
	return best, newest
}

// TestSetRoleTrustsNoStaleMember pins the nemesis's seed-49 stall: a
// member restarted from an old snapshot reports the membership of that
// snapshot until it hears a leader, and the membership kind took it at its
// word. Node 1 snapshots while node 3 is a voting participant; node 3 is
// made an observer; node 1 is killed and restarted cut off from the others
// (so no leader can be elected: node 2 is the only other voter). Node 1
// now says node 3 is a voting participant, node 2 that it observes. Asked
// to make node 3 a participant, SetRole must not take node 1's word: it
// must go on until the change is made, which needs a leader, so once the
// partition heals; and then every member's membership says participant.
func TestSetRoleTrustsNoStaleMember(t *testing.T) {
	c := startInprocCluster(t, 500*time.Millisecond, false)
	const stale, other, target = 0, 1, 2
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitFor(t, 20*time.Second, "every member to know node 3 as a voting participant", func() bool {
		for i := range c.nodes {
			if !roleHeld(c.server(i).Replication(), target+1, nemesis.Participant) {
				return false
			}
		}
		return true
	})
	if err := c.server(stale).repl.(*raftstore.Node).Store().Snapshot(); err != nil {
		t.Fatal(err)
	}
	if err := c.SetRole(ctx, target, nemesis.Observer); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(stale); err != nil {
		t.Fatal(err)
	}
	if err := c.Isolate(stale); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(stale); err != nil {
		t.Fatal(err)
	}
	if !roleHeld(c.server(stale).Replication(), target+1, nemesis.Participant) {
		t.Fatalf("node %d, restarted from its snapshot, does not say node %d is a voting participant: %q", stale+1, target+1, c.server(stale).Replication().Members.Text())
	}
	healed := make(chan struct{})
	time.AfterFunc(2*time.Second, func() { _ = c.Heal(); close(healed) })
	began := time.Now()
	if err := c.SetRole(ctx, target, nemesis.Participant); err != nil {
		t.Fatal(err)
	}
	select {
	case <-healed:
	default:
		t.Fatalf("SetRole said node %d is a participant %v after it began, before any leader could make it one; node %d's membership: %q",
			target+1, time.Since(began).Round(time.Millisecond), other+1, c.server(other).Replication().Members.Text())
	}
	waitFor(t, 20*time.Second, "every member to know node 3 as a voting participant", func() bool {
		for i := range c.nodes {
			if !roleHeld(c.server(i).Replication(), target+1, nemesis.Participant) {
				return false
			}
		}
		return true
	})
	t.Logf("SetRole made node %d a participant %v after it began (the partition healed at 2s)", target+1, time.Since(began).Round(time.Millisecond))
}

// roleHeld reports whether the membership r shows says member id holds
// role: absent for Out; an observer Raft does not count for quorum for
// Observer; a participant Raft counts for quorum for Participant.
func roleHeld(r ReplicationInfo, id uint64, role nemesis.Role) bool {
	m, in := r.Members.Member(id)
	voter := slices.ContainsFunc(r.Replicas, func(rep zkdb.Replica) bool { return rep.ID == id && rep.Voter })
	switch role {
	case nemesis.Out:
		return !in
	case nemesis.Observer:
		return in && m.Role == membership.Observer && !voter
	}
	return in && m.Role == membership.Participant && voter
}

// TestPromotionAcrossALeaderPartition asks whether a promotion lost with
// its leader can leave the membership and Raft's configuration apart (the
// seed-49 question): node 3, an observer, is made a participant through
// the leader, and the leader is cut off for 3 s at one point of the change:
// as soon as the reconfig is sent; once the leader has applied the new
// membership (before Raft's configuration follows); once the leader's
// Raft configuration names node 3 a voter, not yet committed; once the
// reconfig is answered. After healing, whatever became of the promotion,
// the leader's committed Raft configuration must come to match the newest
// membership (a participant votes, an observer does not), and removing
// the other follower must then be decided as the membership says: made
// when node 3 is a participant, refused as bad arguments (one voter left)
// only when it observes.
func TestPromotionAcrossALeaderPartition(t *testing.T) {
	for _, cut := range []string{"sent", "decided", "voting", "answered"} {
		t.Run(cut, func(t *testing.T) {
			c := startInprocCluster(t, 500*time.Millisecond, false)
			const target = 2
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			if err := c.SetRole(ctx, target, nemesis.Observer); err != nil {
				t.Fatal(err)
			}
			leader := -1
			waitFor(t, 20*time.Second, "a leader", func() bool { leader = c.Leader(); return leader >= 0 && leader != target })
			other := 3 - leader - target // the follower that is neither
			s := c.server(leader)
			line := fmt.Sprintf("server.%d=%s:0:participant", target+1, c.nodes[target].cfg.Raft.RaftAddr)
			answered := make(chan error, 1)
			go func() {
				attempt, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				_, err := s.Reconfigure(attempt, []string{line}, nil)
				answered <- err
			}()
			var promotion error
			reached := func() bool {
				switch cut {
				case "decided":
					m, _ := s.Replication().Members.Member(target + 1)
					return m.Role == membership.Participant
				case "voting":
					replicas, _, err := s.repl.(*raftstore.Node).Store().Configuration() // the latest, committed or not
					return err == nil && slices.ContainsFunc(replicas, func(r zkdb.Replica) bool { return r.ID == target+1 && r.Voter })
				case "answered":
					select {
					case promotion = <-answered:
						answered <- promotion
						return true
					default:
						return false
					}
				}
				return true
			}
			deadline := time.Now().Add(10 * time.Second)
			for !reached() {
				if time.Now().After(deadline) {
					t.Fatalf("the promotion did not reach %q in 10s", cut)
				}
				time.Sleep(100 * time.Microsecond)
			}
			if err := c.Isolate(leader); err != nil {
				t.Fatal(err)
			}
			committed := slices.ContainsFunc(s.Replication().Replicas, func(r zkdb.Replica) bool { return r.ID == target+1 && r.Voter })
			time.Sleep(3 * time.Second)
			if err := c.Heal(); err != nil {
				t.Fatal(err)
			}
			promotion = <-answered
			var r ReplicationInfo
			var role nemesis.Role
			waitFor(t, 30*time.Second, "the leader's Raft configuration to match the newest membership", func() bool {
				l := c.Leader()
				_, newest := c.newestMembership()
				if l < 0 {
					return false
				}
				r = c.server(l).Replication()
				if r.Members.Version != newest.Members.Version {
					return false
				}
				for _, m := range r.Members.Members {
					voter := slices.ContainsFunc(r.Replicas, func(rep zkdb.Replica) bool { return rep.ID == m.ID && rep.Voter })
					if voter != m.Votes() {
						return false
					}
				}
				switch {
				case roleHeld(r, target+1, nemesis.Participant):
					role = nemesis.Participant
				case roleHeld(r, target+1, nemesis.Observer):
					role = nemesis.Observer
				default:
					return false
				}
				return true
			})
			t.Logf("leader node %d cut off once the promotion was %s (node 3 a voter in its committed configuration then: %v); answered %v; node %d is now a %s, membership version %x",
				leader+1, cut, committed, promotion, target+1, role, r.Members.Version)
			// Remove the other follower, asking again while the answer
			// is lost or another change is under way.
			var err error
			for try := 0; try < 50; try++ {
				s, _ := c.newestMembership()
				attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err = s.RemoveMembers(attempt, uint64(other+1))
				cancel()
				if err == nil || errors.Is(err, tree.ErrBadArguments) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			switch {
			case role == nemesis.Participant && err != nil:
				t.Fatalf("node %d votes as a participant, yet removing node %d failed: %v", target+1, other+1, err)
			case role == nemesis.Observer && !errors.Is(err, tree.ErrBadArguments):
				t.Fatalf("node %d observes, so removing node %d leaves one voter, yet it was answered %v", target+1, other+1, err)
			}
		})
	}
}
