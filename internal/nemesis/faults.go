package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Kind is a fault the schedule can inject.
type Kind string

// The fault kinds. Each is injected, held, undone, and followed by a wait
// for a successful write before the next.
const (
	KillLeader        Kind = "kill-leader"        // SIGKILL, down a while, restart from disk
	KillFollower      Kind = "kill-follower"      // the same to a follower
	PauseLeader       Kind = "pause-leader"       // SIGSTOP for longer than the session timeout
	PauseFollower     Kind = "pause-follower"     // the same to a follower
	PartitionLeader   Kind = "partition-leader"   // silent partition from the other nodes
	PartitionFollower Kind = "partition-follower" // the same to a follower
	KillLeaderInChurn Kind = "kill-leader-churn"  // leader kill while sessions are being opened on followers
	SkewClock         Kind = "clock-skew"         // a node's clock jumps, then comes back
	// OneWayCut: a follower can no longer open connections to the leader
	// (and those it had hang), while the leader's connections to it carry
	// on, for longer than a session timeout: its clients must move.
	OneWayCut Kind = "oneway-cut"
	// PeerFlood: a stranger floods a follower's peer port with idle and
	// garbage connections from one address, and meanwhile the leader is
	// killed and restarted, so the flooded node may have to win an
	// election and take its peers' connections through the flood.
	PeerFlood Kind = "peer-flood"
)

// Kinds lists every fault kind, in report order: the network and
// process faults, then the disk faults (DiskKinds, which need a
// DiskCluster).
var Kinds = append([]Kind{KillLeader, KillFollower, PauseLeader, PauseFollower,
	PartitionLeader, PartitionFollower, KillLeaderInChurn, SkewClock, OneWayCut, PeerFlood, MembershipChange}, DiskKinds...)

func (k Kind) onLeader() bool {
	return k == KillLeader || k == PauseLeader || k == PartitionLeader || k == KillLeaderInChurn || k == FullDiskLeader
}

// clock is how times appear in logs and details, to match servers' logs.
const clock = "15:04:05.000"

// faultRecord is one fault as injected.
type faultRecord struct {
	kind       Kind
	node       int
	start, end time.Time
	recovery   time.Duration // from undoing it to the next successful write
}

// schedule injects cfg.Faults faults, one at a time. Kinds come in
// rounds, each a seeded shuffle of every kind the cluster supports, so a
// short run still sees each kind; a kind the cluster refuses with
// ErrUnsupported is dropped.
func (r *runner) schedule(ctx context.Context) {
	supported := slices.Clone(Kinds)
	if len(r.cfg.Kinds) > 0 {
		supported = slices.Clone(r.cfg.Kinds)
	}
	var deck []Kind
	deadline := time.Now().Add(r.cfg.MaxDuration)
	for n := 0; n < r.cfg.Faults; {
		if ctx.Err() != nil || time.Now().After(deadline) {
			r.problem("the schedule ran out of time after %d of %d faults (bound %v)", n, r.cfg.Faults, r.cfg.MaxDuration)
			return
		}
		if len(supported) == 0 {
			r.problem("the cluster supports no fault kind")
			return
		}
		if len(deck) == 0 {
			deck = slices.Clone(supported)
			r.rng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		}
		kind := deck[0]
		deck = deck[1:]
		rec, err := r.inject(ctx, kind)
		if errors.Is(err, ErrUnsupported) {
			supported = slices.DeleteFunc(supported, func(k Kind) bool { return k == kind })
			deck = slices.DeleteFunc(deck, func(k Kind) bool { return k == kind })
			r.rep.Unsupported = append(r.rep.Unsupported, kind)
			continue
		}
		n++
		r.rep.Faults[kind]++
		if err != nil {
			// A cluster that cannot undo a fault (a node that will not
			// restart) cannot take the next one safely.
			r.problem("fault %d, %s of node %d: %v", n, kind, rec.node, err)
			r.faults = append(r.faults, rec)
			return
		}
		took, ok := r.waitWritable(ctx, r.cfg.RecoverTimeout)
		rec.recovery = took
		r.faults = append(r.faults, rec)
		if !ok {
			r.rep.RecoveryFailures++
			r.problem("fault %d, %s of node %d: no write succeeded within %v after it was undone", n, kind, rec.node, r.cfg.RecoverTimeout)
		}
		r.rep.SlowestRecovery = max(r.rep.SlowestRecovery, took)
		r.logf("fault %d/%d: %s of node %d from %s to %s; a write succeeded %v after it was undone",
			n, r.cfg.Faults, kind, rec.node, rec.start.Format(clock), rec.end.Format(clock), took.Round(time.Millisecond))
		pause(ctx, time.Duration(300+r.rng.IntN(700))*time.Millisecond) // let the workloads run between faults
	}
}

// inject applies one fault, holds it and undoes it.
func (r *runner) inject(ctx context.Context, kind Kind) (faultRecord, error) {
	leader := r.waitLeader(ctx, 15*time.Second)
	if leader < 0 {
		r.problem("no single node said it led for 15s before a %s", kind)
	}
	target := leader
	if !kind.onLeader() || leader < 0 {
		target = r.rng.IntN(r.c.Size())
		for i := 0; target == leader && i < 100; i++ {
			target = r.rng.IntN(r.c.Size())
		}
	}
	rec := faultRecord{kind: kind, node: target, start: time.Now()}
	// Holds sleep through ctx: a fault once injected is always undone.
	hold := func(d time.Duration) { time.Sleep(d) }
	var err error
	switch kind {
	case KillLeader, KillFollower:
		err = r.killRestart(target)
	case PauseLeader, PauseFollower:
		if err = r.c.Pause(target); err != nil {
			return rec, err
		}
		hold(r.cfg.PauseFor)
		err = r.c.Resume(target)
	case PartitionLeader, PartitionFollower:
		if err = r.c.Isolate(target); err != nil {
			return rec, err
		}
		hold(r.cfg.PartitionFor)
		err = r.c.Heal()
	case KillLeaderInChurn:
		stop := r.burst(ctx)
		err = r.killRestart(target)
		stop()
	case OneWayCut:
		if leader < 0 {
			return rec, fmt.Errorf("no leader to cut node %d from", target)
		}
		if err = r.c.CutOneWay(target, leader); err != nil {
			return rec, err
		}
		hold(r.cfg.OneWayFor)
		err = r.c.Heal()
	case PeerFlood:
		var stop func() string
		if stop, err = r.c.Flood(target); err != nil {
			return rec, err
		}
		hold(time.Second) // the flood is under way before the election
		if leader >= 0 {
			err = r.killRestart(leader)
		}
		hold(r.cfg.FloodFor)
		// Under the flood every member still takes writes: the
		// flooded one, and those that must reach it if it now leads.
		var took []string
		for i := range r.c.Size() {
			start := time.Now()
			if werr := r.writeThrough(ctx, i, floodWriteLimit); werr != nil {
				r.problem("during the flood of node %d (leader now: %d): %v", target, r.c.Leader(), werr)
			}
			took = append(took, time.Since(start).Round(time.Millisecond).String())
		}
		r.logf("flood of node %d (leader now: %d; a write through each node took %s): %s",
			target, r.c.Leader(), strings.Join(took, ", "), stop())
	case SkewClock:
		offset := r.cfg.SkewBy
		if r.rng.IntN(2) == 0 {
			offset = -offset
		}
		if err = r.c.Skew(target, offset); err != nil {
			return rec, err
		}
		hold(r.cfg.SkewFor)
		err = r.c.Skew(target, 0)
	case MembershipChange:
		err = r.changeMembership(ctx, target)
	default:
		if !isDiskKind(kind) {
			err = fmt.Errorf("unknown fault kind %q", kind)
			break
		}
		if err = r.injectDisk(ctx, kind, target); errors.Is(err, ErrUnsupported) {
			return rec, err
		}
	}
	rec.end = time.Now()
	return rec, err
}

// killRestart kills node i, keeps it down for about KillFor and restarts
// it. A node that fails to come back is a finding; it gets two more tries
// so that the rest of the schedule can still run.
func (r *runner) killRestart(i int) error {
	if err := r.c.Kill(i); err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	time.Sleep(r.cfg.KillFor/2 + time.Duration(r.rng.Int64N(int64(r.cfg.KillFor))))
	return r.restart(i)
}

// burst adds ChurnBurst churners with no rest and returns once they are
// opening sessions; the returned func stops them and waits for them.
func (r *runner) burst(ctx context.Context) (stop func()) {
	bctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	before := r.churn.Opened()
	r.bursts++
	for i := range r.cfg.ChurnBurst {
		wg.Go(func() { r.churn.run(bctx, fmt.Sprintf("b%d-%d", r.bursts, i), 0) })
	}
	deadline := time.Now().Add(5 * time.Second)
	for r.churn.Opened() < before+r.cfg.ChurnBurst && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polling an in-process counter
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// waitLeader polls the cluster until one node says it leads, and returns
// it, or -1 after limit.
func (r *runner) waitLeader(ctx context.Context, limit time.Duration) int {
	deadline := time.Now().Add(limit)
	for ctx.Err() == nil {
		l := r.c.Leader()
		if l >= 0 {
			r.leader.Store(int32(l))
			return l
		}
		if time.Now().After(deadline) {
			break
		}
		pause(ctx, 100*time.Millisecond)
	}
	r.leader.Store(-1)
	return -1
}

// waitWritable retries a write until one succeeds, and returns how long
// that took and whether one did within limit.
func (r *runner) waitWritable(ctx context.Context, limit time.Duration) (time.Duration, bool) {
	start := time.Now()
	deadline := start.Add(limit)
	p := r.cfg.Root + "/probe"
	for attempt := 0; attempt < 10_000 && time.Now().Before(deadline); attempt++ {
		err := Call(ctx, min(r.cfg.OpTimeout, time.Until(deadline)), func() error {
			_, err := r.admin.conn.Set(p, fmt.Appendf(nil, "%d", attempt), -1)
			return err
		})
		if err == nil {
			return time.Since(start), true
		}
		if !pause(ctx, 50*time.Millisecond) {
			break
		}
	}
	return time.Since(start), false
}

// floodWriteLimit bounds a write through one node during a peer flood:
// a session, an election already over, a forward.
const floodWriteLimit = 5 * time.Second

// writeThrough opens a session on node i alone and retries a write
// through it until one succeeds or limit passes.
func (r *runner) writeThrough(ctx context.Context, i int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	s, err := dialZK(ctx, "probe", []string{r.addrs[i]}, r.cfg.SessionTimeout, limit)
	if err != nil {
		return fmt.Errorf("no session on node %d: %w", i, err)
	}
	defer s.Close()
	p := r.cfg.Root + "/probe"
	for attempt := 0; attempt < 1000; attempt++ {
		err = Call(ctx, max(time.Until(deadline), time.Millisecond), func() error {
			_, err := s.conn.Set(p, fmt.Appendf(nil, "node %d", i), -1)
			return err
		})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || !pause(ctx, 50*time.Millisecond) {
			break
		}
	}
	return fmt.Errorf("no write through node %d within %v: %w", i, limit, err)
}
