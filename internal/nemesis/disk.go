package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/hutchzk/hutch/internal/diskfault"
)

// DiskCluster is a Cluster whose nodes keep their data on disks that can
// fail. The disk fault kinds need one; a Cluster without it has them
// left out, as unsupported.
type DiskCluster interface {
	Cluster
	// FillDisk fills node i's filesystem: its writes that need a new
	// block fail with ENOSPC.
	FillDisk(i int) error
	// FailSyncs makes node i's fsyncs fail, and its filesystem refuse
	// writes thereafter, as a failing disk does.
	FailSyncs(i int) error
	// DamageLog changes node i's log on disk, which it must not be
	// running on (Kill it first), and says what it changed.
	DamageLog(i int, d Damage) (string, error)
	// Recover brings node i back after a disk fault: it stops the node
	// if it still runs, frees its disk, or with wipe replaces it with an
	// empty one (as an operator replaces a failed disk, or a log that is
	// damaged, so that the node resyncs from the others), and starts it.
	Recover(i int, wipe bool) error
	// Halted reports whether node i stopped itself (a process: exited of
	// itself).
	Halted(i int) bool
}

// Disks are the disks a cluster's nodes keep their data on, by index (nil
// where a node has none): a DiskCluster's FillDisk and FailSyncs, and the
// disk's part of its Recover and DamageLog.
type Disks []*diskfault.Disk

func (d Disks) disk(i int) (*diskfault.Disk, error) {
	if i < 0 || i >= len(d) || d[i] == nil {
		return nil, ErrUnsupported
	}
	return d[i], nil
}

// FillDisk fills node i's filesystem.
func (d Disks) FillDisk(i int) error {
	disk, err := d.disk(i)
	if err != nil {
		return err
	}
	return disk.Fill()
}

// FailSyncs makes node i's fsyncs fail.
func (d Disks) FailSyncs(i int) error {
	disk, err := d.disk(i)
	if err != nil {
		return err
	}
	return disk.FailSyncs()
}

// Restore frees node i's disk, stopped, or with wipe puts an empty one in
// its place (as an operator replaces a failed disk or a damaged log) and
// then waits, up to 20s, until leader (the index of the node that leads,
// -1 for none) names one: a wiped member forgets its vote, and must not
// come back into an election it may have voted in.
func (d Disks) Restore(i int, wipe bool, leader func() int) error {
	disk, err := d.disk(i)
	if err != nil {
		return err
	}
	if !wipe {
		return disk.Free()
	}
	if err := disk.Reset(); err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for leader() < 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // polling the other nodes
	}
	return nil
}

// DamageLog changes the log in a data directory no node runs on, rng
// choosing where, and says what it changed.
func DamageLog(dataDir string, how Damage, rng *rand.Rand) (string, error) {
	if how == TearTail {
		return diskfault.TearTail(dataDir, rng)
	}
	return diskfault.FlipByte(dataDir, rng)
}

// Damage is a change DamageLog makes to a log.
type Damage int

const (
	// FlipByte changes one byte inside a record of the log.
	FlipByte Damage = iota
	// TearTail cuts the log's last record part-way, as a crash in the
	// middle of a write leaves it.
	TearTail
)

// The disk fault kinds.
const (
	// FullDiskFollower: a follower's filesystem fills while writes go on;
	// it must stop serving (its clients move), and come back once space
	// is freed.
	FullDiskFollower Kind = "full-disk-follower"
	// FullDiskLeader: the same to the leader; the others elect another.
	FullDiskLeader Kind = "full-disk-leader"
	// FullDiskAll: every member's filesystem fills: the ensemble stops
	// taking writes, and comes back, with every acknowledged one, once
	// space is freed and the members restarted.
	FullDiskAll Kind = "full-disk-all"
	// FailingSync: a follower's fsyncs fail; it stops, and comes back on
	// a new, empty disk, resyncing from the others.
	FailingSync Kind = "failing-fsync"
	// FlippedByte: one byte of a stopped follower's log changes; it must
	// refuse to start (or start only where the byte was in no record),
	// and comes back from an empty data directory.
	FlippedByte Kind = "flipped-byte"
	// TornTail: a stopped follower's last log record is cut part-way; it
	// starts (cutting the torn record, or refusing, and then from an
	// empty data directory) and catches up.
	TornTail Kind = "torn-tail"
)

// DiskKinds are the disk fault kinds.
var DiskKinds = []Kind{FullDiskFollower, FullDiskLeader, FullDiskAll, FailingSync, FlippedByte, TornTail}

func isDiskKind(k Kind) bool {
	for _, d := range DiskKinds {
		if d == k {
			return true
		}
	}
	return false
}

// diskBurst writes about 4 MB through the admin session, in 512 KB
// values, so that every member appends past what its log files hold
// already (a store may allocate ahead: seglog a megabyte at a time,
// ZooKeeper 64 MB); a full disk bites only then. Failures are expected.
func (r *runner) diskBurst(ctx context.Context, within time.Duration) int {
	value := make([]byte, 512<<10)
	deadline := time.Now().Add(within)
	acked := 0
	for i := 0; i < 8 && time.Now().Before(deadline); i++ {
		err := Call(ctx, min(r.cfg.OpTimeout, time.Until(deadline)), func() error {
			_, err := r.admin.conn.Set(r.cfg.Root+"/disk", value, -1)
			return err
		})
		if err == nil {
			acked++
		}
	}
	return acked
}

// injectDisk applies, holds and undoes one disk fault on target (the
// leader for FullDiskLeader, a follower otherwise; every node for
// FullDiskAll).
func (r *runner) injectDisk(ctx context.Context, kind Kind, target int) error {
	dc, ok := r.c.(DiskCluster)
	if !ok {
		return ErrUnsupported
	}
	targets := []int{target}
	if kind == FullDiskAll {
		targets = targets[:0]
		for i := range r.c.Size() {
			targets = append(targets, i)
		}
	}
	switch kind {
	case FullDiskFollower, FullDiskLeader, FullDiskAll, FailingSync:
		for _, i := range targets {
			var err error
			if kind == FailingSync {
				err = dc.FailSyncs(i)
			} else {
				err = dc.FillDisk(i)
			}
			if err != nil {
				return err
			}
		}
		// A disk bites once the node needs blocks it has not written yet
		// (a store writes into what it allocated ahead, a node catching
		// up may not have appended yet): up to three bursts, until the
		// target stops.
		acked, sent := 0, 0
		for round := 0; round < 3; round++ {
			acked += r.diskBurst(ctx, 10*time.Second)
			sent += 8
			time.Sleep(r.cfg.DiskFor)
			if kind == FullDiskAll || dc.Halted(target) || ctx.Err() != nil {
				break
			}
		}
		var halted []string
		for _, i := range targets {
			if dc.Halted(i) {
				halted = append(halted, fmt.Sprint(i))
				r.rep.DiskHalts++
			}
		}
		r.logf("%s: %d of %d large writes acknowledged meanwhile; nodes that stopped themselves: [%s]", kind, acked, sent, strings.Join(halted, " "))
		if len(halted) == 0 && kind != FullDiskAll {
			// A disk that failed under up to 12 MB of writes and a node
			// that went on: it served from a state it could not keep.
			r.rep.DiskNotHalted++
			r.rep.Details = append(r.rep.Details, fmt.Sprintf("%s of node %d: the node did not stop itself", kind, target))
		}
		for _, i := range targets {
			if err := dc.Recover(i, kind == FailingSync); err != nil {
				return fmt.Errorf("recover node %d: %w", i, err)
			}
		}
		r.awaitServing(ctx, targets...)
		return nil
	case FlippedByte, TornTail:
		// The damage is to a log that holds what the node caught up
		// with: a node just restarted on an empty disk (a failing-fsync
		// fault's recovery) may hold no record yet, and damaging
		// nothing tests nothing.
		r.awaitServing(ctx, target)
		if err := r.c.Kill(target); err != nil {
			return fmt.Errorf("kill: %w", err)
		}
		how := FlipByte
		if kind == TornTail {
			how = TearTail
		}
		what, err := dc.DamageLog(target, how)
		if err != nil {
			// Never leave the node down: the run would end with a
			// member missing, which is not what it checks.
			if rerr := r.c.Restart(target); rerr != nil {
				err = errors.Join(err, fmt.Errorf("restart: %w", rerr))
			}
			return fmt.Errorf("damage the log: %w", err)
		}
		err = r.c.Restart(target)
		switch {
		case err == nil:
			r.logf("%s of node %d (%s): it started", kind, target, what)
			if kind == FlippedByte {
				r.rep.DamageStarted++
			}
		case errors.Is(err, ErrUnsupported):
			return err
		default:
			r.rep.DamageRefused++
			r.logf("%s of node %d (%s): it refused to start: %s", kind, target, what, gist(err.Error()))
			if err := dc.Recover(target, true); err != nil {
				return err
			}
		}
		r.awaitServing(ctx, target)
		return nil
	}
	return fmt.Errorf("not a disk fault: %s", kind)
}

// awaitServing waits, up to RecoverTimeout each, until a write goes
// through each of nodes, restarted after a disk fault: the next fault
// then meets a whole ensemble, and a node that never came back is a
// problem of the run rather than of the fault after it.
func (r *runner) awaitServing(ctx context.Context, nodes ...int) {
	for _, i := range nodes {
		start := time.Now()
		if err := r.writeThrough(ctx, i, r.cfg.RecoverTimeout); err != nil {
			r.problem("node %d, restarted after a disk fault: %v", i, err)
			continue
		}
		r.logf("node %d serves again: a write went through it %v after it was restarted", i, time.Since(start).Round(time.Millisecond))
	}
}

// gist shortens a start-up error to its first line and, where a
// process's log follows it, the log's last line: the reason it gave.
func gist(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) == 1 {
		return lines[0]
	}
	return lines[0] + " " + strings.TrimSpace(lines[len(lines)-1])
}
