package server

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/nemesis"
	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/zkdb"
)

// SetRole changes node i's place in the membership by the operator's
// reconfig until the newest membership a running member has applied says
// i holds role (nemesis.Reconfigurer; roleHeld says what holding it
// means). The newest, not the first member's: a member restarted from an
// old snapshot shows that snapshot's membership until it hears a leader,
// and taking its word let a change that was lost with its leader pass for
// made (the process nemesis, seed 49). A change found not made, lost or
// never sent, is asked for again.
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
				_, last = s.RemoveMembers(attempt, id)
			} else {
				line := fmt.Sprintf("server.%d=%s:0:%s", id, c.nodes[i].cfg.Raft.RaftAddr, role)
				_, last = s.Reconfigure(attempt, []string{line}, nil)
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
