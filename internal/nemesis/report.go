package nemesis

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what a run did and found. Err lists every invariant it
// breaks; String draws it as a table.
type Report struct {
	Seed          uint64
	Duration      time.Duration
	FaultsPlanned int
	Faults        map[Kind]int // injected, by kind
	Unsupported   []Kind       // kinds the cluster refused with ErrUnsupported
	// SlowestRecovery is the longest wait, after a fault was undone, for
	// a write to succeed; RecoveryFailures counts waits that ran out.
	SlowestRecovery  time.Duration
	RecoveryFailures int

	// AckedWrites are the acknowledged pipelined creates and fenced
	// increments; AckedLost those missing at the end (must be 0).
	// UnknownWrites lost their answer and may have landed or not.
	AckedWrites, AckedLost, UnknownWrites int
	PipelineWrites                        int // creates sent by the pipelined writers
	OrderViolations                       int // breaches of a session's FIFO order (must be 0)

	LiveSessions       int
	LiveWronglyExpired int // live sessions that lost their session or ephemeral (must be 0)
	// SessionsExpired counts, by workload, the expiries a client was told
	// of less than half a session timeout after it last heard from a
	// server; no fault here should cause one (must be empty).
	// SessionsExpiredAllowed counts those after a longer silence, which
	// ZooKeeper makes too.
	SessionsExpired, SessionsExpiredAllowed map[string]int
	ChurnSessions                           int
	// ServerExpiries counts the workloads' sessions a node expired, and
	// ExpiredWhileAnswered those whose client had been answered less than
	// a third of a timeout before (must be 0): a follower vouched for a
	// client the leader no longer heard. ServerExpiriesChecked is false
	// where the cluster cannot say what it expired.
	ServerExpiries, ExpiredWhileAnswered int
	ServerExpiriesChecked                bool

	LockAcquisitions int
	DoubleHolders    int // overlapping critical sections (must be 0)
	// LockHoldsLost are holds whose session ended during them, left out
	// of DoubleHolders: the lock went with the session.
	LockHoldsLost  int
	FenceConflicts int // fenced writes refused or overtaken under the lock (must be 0)
	// FenceValue is the fence counter at the end; it must lie between
	// FenceAcked and FenceAcked+FenceUnknown.
	FenceValue, FenceAcked, FenceUnknown int

	// Linearizability is porcupine's verdict on the register history:
	// legal, illegal, or undecided.
	Linearizability              string
	RegisterOps, RegisterUnknown int
	Visualization                string // the drawing of an illegal history

	DigestsEqual bool
	Digests      []string

	// FreshReads are reads without sync of a counter set every tick;
	// FrozenReads those older than FreshnessBound (must be 0), WrongReads
	// those of a value never written (must be 0); StalestRead is how
	// stale the stalest read was (how long before it began the first
	// value it missed had been acknowledged).
	FreshReads, FrozenReads, WrongReads int
	FreshnessBound, StalestRead         time.Duration
	// DiskHalts counts the nodes that stopped themselves on a disk
	// fault; DiskNotHalted the disk faults after which the node went on
	// (must be 0). DamageRefused counts damaged logs a node refused to
	// start from, DamageStarted flipped bytes it started from anyway
	// (the byte outside any record).
	DiskHalts, DiskNotHalted, DamageRefused, DamageStarted int

	// Problems are failures of the run itself or of liveness: a fault
	// not undone, no write after one, a workload that made no progress.
	Problems []string
	// WorkloadErrors are errors a client did not expect from the server.
	WorkloadErrors []string
	// Details say what each violation was, the first few of each check.
	Details []string
}

// Err returns nil if every invariant held, or an error listing each that
// did not, followed by the details.
func (r *Report) Err() error {
	var v []string
	add := func(cond bool, format string, args ...any) {
		if cond {
			v = append(v, fmt.Sprintf(format, args...))
		}
	}
	v = append(v, r.Problems...)
	add(r.AckedLost > 0, "acknowledged writes lost: %d of %d", r.AckedLost, r.AckedWrites)
	add(r.LiveWronglyExpired > 0, "live sessions wrongly expired: %d of %d", r.LiveWronglyExpired, r.LiveSessions)
	if n := sum(r.SessionsExpired); n > 0 {
		v = append(v, fmt.Sprintf("sessions wrongly expired: %d (%s)", n, byName(r.SessionsExpired)))
	}
	add(r.ExpiredWhileAnswered > 0, "sessions expired while their client was being answered: %d of %d expired", r.ExpiredWhileAnswered, r.ServerExpiries)
	add(r.OrderViolations > 0, "session order violations: %d", r.OrderViolations)
	add(r.DoubleHolders > 0, "lock held by two clients at once: %d times", r.DoubleHolders)
	add(r.FenceConflicts > 0, "fenced writes refused or overtaken under the lock: %d", r.FenceConflicts)
	add(r.FenceValue < r.FenceAcked || r.FenceValue > r.FenceAcked+r.FenceUnknown,
		"fence counter is %d, want %d acknowledged increments plus at most %d of unknown outcome", r.FenceValue, r.FenceAcked, r.FenceUnknown)
	add(r.Linearizability != "legal", "register history: %s", r.Linearizability)
	add(!r.DigestsEqual, "digests differ after healing: %v", r.Digests)
	add(r.FrozenReads > 0, "reads older than %v: %d of %d (the stalest %v)", r.FreshnessBound, r.FrozenReads, r.FreshReads, r.StalestRead)
	add(r.WrongReads > 0, "reads of a value never written: %d of %d", r.WrongReads, r.FreshReads)
	add(r.DiskNotHalted > 0, "nodes that went on after their disk failed: %d", r.DiskNotHalted)
	add(len(r.WorkloadErrors) > 0, "unexpected client errors: %d", len(r.WorkloadErrors))
	if len(v) == 0 {
		return nil
	}
	lines := append([]string{"nemesis found:"}, indent(v)...)
	if details := append(slices.Clone(r.Details), r.WorkloadErrors...); len(details) > 0 {
		lines = append(lines, "details:")
		lines = append(lines, indent(details)...)
	}
	if r.Visualization != "" {
		lines = append(lines, "porcupine visualization: "+r.Visualization)
	}
	return errors.New(strings.Join(lines, "\n"))
}

func indent(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "  " + x
	}
	return out
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// byName formats a count map in key order.
func byName(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// String is the report as a table, one row per check, marked ok or FAIL.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "nemesis report: seed %d, %v\n", r.Seed, r.Duration.Round(time.Second))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	row := func(ok bool, what, format string, args ...any) {
		mark := "ok"
		if !ok {
			mark = "FAIL"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", mark, what, fmt.Sprintf(format, args...))
	}
	info := func(what, format string, args ...any) {
		fmt.Fprintf(tw, "  \t%s\t%s\n", what, fmt.Sprintf(format, args...))
	}
	var faults []string
	injected := 0
	for _, k := range Kinds {
		if n := r.Faults[k]; n > 0 {
			faults = append(faults, fmt.Sprintf("%s %d", k, n))
			injected += n
		}
	}
	row(injected == r.FaultsPlanned && r.RecoveryFailures == 0, "faults injected",
		"%d of %d: %s", injected, r.FaultsPlanned, strings.Join(faults, ", "))
	if len(r.Unsupported) > 0 {
		var u []string
		for _, k := range r.Unsupported {
			u = append(u, string(k))
		}
		info("unsupported", "%s", strings.Join(u, ", "))
	}
	row(r.RecoveryFailures == 0, "recovery", "slowest write after a fault %v; %d waits ran out",
		r.SlowestRecovery.Round(time.Millisecond), r.RecoveryFailures)
	row(r.AckedLost == 0, "acknowledged writes lost", "%d of %d acknowledged (%d pipelined creates sent; %d writes of unknown outcome)",
		r.AckedLost, r.AckedWrites, r.PipelineWrites, r.UnknownWrites)
	row(r.OrderViolations == 0, "order violations", "%d", r.OrderViolations)
	row(r.LiveWronglyExpired == 0, "live sessions wrongly expired", "%d of %d", r.LiveWronglyExpired, r.LiveSessions)
	row(sum(r.SessionsExpired) == 0, "sessions wrongly expired", "%s (%d churn sessions opened)", byName(r.SessionsExpired), r.ChurnSessions)
	if r.ServerExpiriesChecked {
		row(r.ExpiredWhileAnswered == 0, "expired while answered", "%d of %d sessions the nodes expired (client answered within a third of a timeout before)",
			r.ExpiredWhileAnswered, r.ServerExpiries)
	} else {
		info("expired while answered", "not checked: the cluster does not say what it expired")
	}
	if n := sum(r.SessionsExpiredAllowed); n > 0 {
		info("expired after a long silence", "%s (allowed: no server heard for half a timeout or more)", byName(r.SessionsExpiredAllowed))
	}
	row(r.DoubleHolders == 0 && r.FenceConflicts == 0, "lock", "%d acquisitions, %d double holders, %d fence conflicts",
		r.LockAcquisitions, r.DoubleHolders, r.FenceConflicts)
	if r.LockHoldsLost > 0 {
		info("lock lost with its session", "%d holds (left out of the double holders: the lock went with the expired session)", r.LockHoldsLost)
	}
	row(r.FenceValue >= r.FenceAcked && r.FenceValue <= r.FenceAcked+r.FenceUnknown, "fence counter",
		"%d (%d acknowledged increments, %d of unknown outcome)", r.FenceValue, r.FenceAcked, r.FenceUnknown)
	row(r.Linearizability == "legal", "linearizability", "%s (%d ops, %d of unknown outcome)",
		r.Linearizability, r.RegisterOps, r.RegisterUnknown)
	digest := "differ: " + strings.Join(r.Digests, " ")
	if r.DigestsEqual && len(r.Digests) > 0 {
		digest = "equal on all nodes: " + r.Digests[0]
	}
	row(r.DigestsEqual, "final digests", "%s", digest)
	if r.FreshReads > 0 {
		row(r.FrozenReads == 0 && r.WrongReads == 0, "reads without sync", "%d: %d older than %v (the stalest %v), %d of a value never written",
			r.FreshReads, r.FrozenReads, r.FreshnessBound, r.StalestRead.Round(time.Millisecond), r.WrongReads)
	}
	if n := r.disks(); n > 0 {
		row(r.DiskNotHalted == 0, "disk faults", "%d: %d node stops, %d went on; damaged logs refused %d, started from %d",
			n, r.DiskHalts, r.DiskNotHalted, r.DamageRefused, r.DamageStarted)
	}
	row(len(r.Problems) == 0 && len(r.WorkloadErrors) == 0, "run problems", "%d problems, %d unexpected client errors",
		len(r.Problems), len(r.WorkloadErrors))
	tw.Flush()
	return b.String()
}

// disks counts the disk faults injected.
func (r *Report) disks() int {
	n := 0
	for _, k := range DiskKinds {
		n += r.Faults[k]
	}
	return n
}
