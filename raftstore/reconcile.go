package raftstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/zkdb"
)

// Raft's configuration follows the membership. The membership (zkdb) says
// who belongs to the ensemble and in which role; the leader makes Raft's
// configuration match it with hashicorp/raft's single-server changes, each
// naming the configuration it changes (prevIndex), one at a time:
//
//  1. a member Raft does not know is added as a non-voter, and a member
//     whose address changed is re-added at its new address;
//  2. a participant that is a non-voter becomes a voter once it has caught
//     up (it answers the status question with the leader's applied index):
//     a joining member counts for quorum only then;
//  3. an observer that votes is demoted, and so is a server the
//     membership no longer names;
//  4. such a server is removed once it has been a non-voter for
//     removalGrace: meanwhile it still gets the log, so it learns it was
//     removed and its clients, which it turns over to other members
//     (server.RemovedGrace), are still answered;
//  5. last, the leader itself, if it is to go or to observe: once another
//     participant votes, it demotes itself, Raft hands the leadership on,
//     and the next leader removes it (4) if it is to go.
//
// Adding before removing keeps the most members voting while a change is
// under way. A leader that dies between two steps leaves the rest to its
// successor, which reconciles as soon as it has taken over and then every
// reconcileInterval; steps that fail are tried again then.

// reconcileInterval is how often the leader looks for steps to take:
// participants that have caught up, or a step that failed.
const reconcileInterval = time.Second

// removalGrace is how long a server the membership no longer names stays
// in Raft as a non-voter before it is removed; longer than the grace its
// server gives its clients to finish.
const removalGrace = 5 * time.Second

// promotionWait bounds how long the leader waits for a non-voting
// participant to reach its applied index before promoting it; it asks
// again at the next look.
const promotionWait = 200 * time.Millisecond

// reconcileLoop reconciles while this node leads, every
// reconcileInterval, unless a reconfig is changing Raft's configuration.
func (n *Node) reconcileLoop(ctx context.Context) {
	t := time.NewTicker(reconcileInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, ok := n.Leading(); !ok || !n.raftMu.TryLock() {
			continue
		}
		n.reconcile(ctx)
		n.raftMu.Unlock()
	}
}

// maxReconcileSteps bounds the steps one reconcile takes: each changes
// one server, so this covers replacing a large ensemble.
const maxReconcileSteps = 64

// reconcile takes the steps that bring Raft's configuration in line with
// the membership, until none is left or one fails. It holds raftMu.
func (n *Node) reconcile(ctx context.Context) {
	for range maxReconcileSteps {
		if ctx.Err() != nil {
			return
		}
		if _, ok := n.Leading(); !ok {
			return
		}
		step, ok := n.nextStep(ctx)
		if !ok {
			return
		}
		if err := step.run(n); err != nil {
			n.cfg.Logger.Warn("membership: Raft configuration change failed; trying again later", "change", step.String(), "err", err)
			return
		}
		n.cfg.Logger.Info("membership: Raft configuration changed", "change", step.String())
	}
}

// stepKind is what a step does to one server.
type stepKind uint8

const (
	stepAddNonvoter stepKind = iota
	stepAddVoter
	stepDemote
	stepRemove
)

// step is one single-server change.
type step struct {
	kind stepKind
	id   uint64
	addr string
	prev uint64 // the configuration's index it changes
}

func (s step) String() string {
	what := [...]string{"add non-voter", "add voter", "demote to non-voter", "remove"}[s.kind]
	return fmt.Sprintf("%s %d (%s)", what, s.id, s.addr)
}

func (s step) run(n *Node) error {
	switch s.kind {
	case stepAddNonvoter:
		return n.store.AddNonvoter(s.id, s.addr, s.prev)
	case stepAddVoter:
		return n.store.AddVoter(s.id, s.addr, s.prev)
	case stepDemote:
		return n.store.DemoteVoter(s.id, s.prev)
	}
	return n.store.RemoveServer(s.id, s.prev)
}

// nextStep returns the next change Raft's configuration needs, or false
// when it matches the membership (or there is no membership yet).
func (n *Node) nextStep(ctx context.Context) (step, bool) {
	members := n.db.Membership()
	if members.IsZero() {
		return step{}, false
	}
	replicas, prev, err := n.store.Configuration()
	if err != nil {
		return step{}, false
	}
	raftOf := make(map[uint64]zkdb.Replica, len(replicas))
	for _, r := range replicas {
		raftOf[r.ID] = r
	}
	ordered := slices.Clone(members.Members)
	slices.SortFunc(ordered, func(a, b membership.Member) int { return int64Cmp(a.ID, b.ID) })
	self := n.cfg.NodeID
	// 1. unknown members, and moved ones.
	for _, m := range ordered {
		r, in := raftOf[m.ID]
		switch {
		case !in:
			return step{stepAddNonvoter, m.ID, m.RaftAddr(), prev}, true
		case r.Addr != m.RaftAddr() && m.ID != self:
			kind := stepAddNonvoter
			if r.Voter {
				kind = stepAddVoter
			}
			return step{kind, m.ID, m.RaftAddr(), prev}, true
		}
	}
	// 2. participants that have caught up.
	for _, m := range ordered {
		if r := raftOf[m.ID]; m.Votes() && !r.Voter && n.caughtUp(ctx, m.ID, r.Addr, n.db.Applied(), promotionWait) {
			return step{stepAddVoter, m.ID, r.Addr, prev}, true
		}
	}
	// 3. observers and servers that are no members, that vote.
	for _, r := range replicas {
		m, in := members.Member(r.ID)
		if r.ID != self && r.Voter && (!in || !m.Votes()) {
			return step{stepDemote, r.ID, r.Addr, prev}, true
		}
	}
	// 4. servers that are no members, after their grace.
	now := time.Now()
	for id := range n.leaving {
		if _, in := raftOf[id]; !in {
			delete(n.leaving, id)
		}
	}
	for _, r := range replicas {
		if _, in := members.Member(r.ID); in || r.ID == self {
			delete(n.leaving, r.ID)
			continue
		}
		since, seen := n.leaving[r.ID]
		if !seen {
			n.leaving[r.ID] = now
			continue
		}
		if now.Sub(since) >= removalGrace {
			delete(n.leaving, r.ID)
			return step{stepRemove, r.ID, r.Addr, prev}, true
		}
	}
	// 5. the leader itself, once another participant votes.
	if me, in := members.Member(self); (in && me.Votes()) || !raftOf[self].Voter {
		return step{}, false
	}
	if !slices.ContainsFunc(replicas, func(r zkdb.Replica) bool {
		m, ok := members.Member(r.ID)
		return r.ID != self && r.Voter && ok && m.Votes()
	}) {
		return step{}, false
	}
	return step{stepDemote, self, raftOf[self].Addr, prev}, true
}

func int64Cmp(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
