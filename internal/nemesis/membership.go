package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MembershipChange is the membership kind: a follower leaves the
// ensemble, comes back as an observer, and is promoted to participant,
// each change made while another fault holds another node (a kill, a
// pause or a partition, drawn by the schedule's seed; the leader when it
// can be): the change is
// decided, logged and followed by Raft's configuration across elections
// and a lost quorum. Between the changes the ensemble has two
// participants, so a fault on one of them leaves it without a quorum until
// the fault is undone. Every change ends before the next fault: at the
// end the node is a participant again, so digests compare as after any
// fault.
const MembershipChange Kind = "membership"

// changeMembership runs the membership kind on follower target.
func (r *runner) changeMembership(ctx context.Context, target int) error {
	m, ok := r.c.(Reconfigurer)
	if !ok {
		return ErrUnsupported
	}
	for _, role := range []Role{Out, Observer, Participant} {
		other := r.c.Leader()
		for other < 0 || other == target {
			other = r.rng.IntN(r.c.Size())
		}
		under := [...]string{"kill", "pause", "partition"}[r.rng.IntN(3)]
		undo, under, err := r.holdOther(under, other)
		if err != nil {
			return fmt.Errorf("%s of node %d for the change of node %d to %s: %w", under, other, target, role, err)
		}
		done := make(chan error, 1)
		cctx, cancel := context.WithTimeout(ctx, r.cfg.RecoverTimeout)
		began := time.Now()
		go func() { done <- m.SetRole(cctx, target, role) }()
		time.Sleep(r.cfg.PartitionFor / 2) // the change is under way during the fault
		uerr := undo()
		err = <-done
		cancel()
		r.logf("node %d made %s under a %s of node %d in %v", target, role, under, other, time.Since(began).Round(time.Millisecond))
		if uerr != nil {
			return fmt.Errorf("undo the %s of node %d: %w", under, other, uerr)
		}
		if err != nil {
			return fmt.Errorf("node %d to %s under a %s of node %d: %w", target, role, under, other, err)
		}
	}
	return nil
}

// holdOther starts fault kind on node i and returns what undoes it and
// the fault it started: a cluster that cannot pause is partitioned
// instead.
func (r *runner) holdOther(kind string, i int) (undo func() error, started string, err error) {
	switch kind {
	case "kill":
		if err := r.c.Kill(i); err != nil {
			return nil, kind, err
		}
		return func() error { return r.restart(i) }, kind, nil
	case "pause":
		switch err := r.c.Pause(i); {
		case err == nil:
			return func() error { return r.c.Resume(i) }, kind, nil
		case !errors.Is(err, ErrUnsupported):
			return nil, kind, err
		}
	}
	if err := r.c.Isolate(i); err != nil {
		return nil, "partition", err
	}
	return r.c.Heal, "partition", nil
}

// restart starts node i again; a node that fails to come back is a
// finding, and gets two more tries so that the rest of the schedule can
// still run.
func (r *runner) restart(i int) error {
	for try := 1; try <= 3; try++ {
		err := r.c.Restart(i)
		if err == nil {
			return nil
		}
		r.problem("restart of node %d failed (try %d of 3): %v", i, try, err)
		time.Sleep(time.Duration(try) * time.Second) // let the others settle first
	}
	return fmt.Errorf("node %d did not restart in 3 tries", i)
}
