package nemesis

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Config sets the schedule and the workloads. Zero fields take the
// defaults shown, which suit a three-node ensemble with tickTime 500ms and
// an election timeout of 1s on a loaded two-core machine.
type Config struct {
	// Seed picks the fault schedule; 0 takes one from the clock. The
	// report says which was used.
	Seed uint64
	// Faults is how many faults to inject (8).
	Faults int
	// Kinds, when set, limits the schedule to these kinds of fault.
	Kinds []Kind
	// MaxDuration bounds the fault schedule (Faults × 40s).
	MaxDuration time.Duration

	// SessionTimeout is what every client asks for (4s).
	SessionTimeout time.Duration
	// OpTimeout bounds one client call, reconnecting included (15s).
	OpTimeout time.Duration
	// RecoverTimeout bounds the wait for a successful write after a fault
	// is undone, and for the digests to agree at the end (30s).
	RecoverTimeout time.Duration

	// KillFor is how long a killed node stays down (1s, varied ±50%).
	KillFor time.Duration
	// PauseFor is how long a node stays stopped; longer than the session
	// timeout, so the sessions on it must move (5s). It must also be well
	// beyond the time the other nodes take to replace a silent leader
	// (hutch's election timeout, ZooKeeper's syncLimit×tickTime): a
	// leader nobody replaced expires, on waking, every session it did not
	// hear from, and ZooKeeper's does so too.
	PauseFor time.Duration
	// PartitionFor is how long a node stays cut off (3s).
	PartitionFor time.Duration
	// SkewBy and SkewFor are the clock offset and how long it lasts
	// (1m and 3s).
	SkewBy, SkewFor time.Duration
	// OneWayFor is how long a one-way cut lasts: longer than the session
	// timeout, so the cut follower's clients must move (6s).
	OneWayFor time.Duration
	// FloodFor is how long a peer flood goes on after the leader it
	// overlaps was restarted (3s).
	FloodFor time.Duration

	// DiskFor is how long a disk fault holds once it has bitten (3s).
	DiskFor time.Duration
	// FreshReaders read a counter without sync (3), each every
	// FreshEvery (50ms), while a ticker sets it every FreshEvery too; no
	// read may be older than FreshnessBound (half the session timeout).
	FreshReaders   int
	FreshEvery     time.Duration
	FreshnessBound time.Duration

	// LockClients take the fenced fair lock (3).
	LockClients int
	// Pipelines are raw-protocol writers (2), each keeping up to
	// PipelineWindow creates outstanding (32), topping the window up
	// every PipelineEvery (100ms) and moving to a fresh parent after
	// PipelineDirSize creates (5000) so a listing stays small.
	Pipelines, PipelineWindow, PipelineDirSize int
	PipelineEvery                              time.Duration
	// LiveSessions hold an ephemeral each for the whole run (10).
	LiveSessions int
	// ChurnClients open and close sessions on followers (2); a leader
	// kill during churn adds ChurnBurst more for its duration (6).
	ChurnClients, ChurnBurst int
	// RegisterClients run the linearizable register (4) on RegisterKeys
	// znodes (3).
	RegisterClients, RegisterKeys int

	// Root is the znode under which everything is created ("/nemesis");
	// it must not exist yet.
	Root string
	// ArtifactDir receives a porcupine visualization when the register
	// history is not linearizable; "" writes none.
	ArtifactDir string
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
}

func (c Config) withDefaults() Config {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	dur := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Faults, 8)
	dur(&c.MaxDuration, time.Duration(c.Faults)*40*time.Second)
	dur(&c.SessionTimeout, 4*time.Second)
	dur(&c.OpTimeout, 15*time.Second)
	dur(&c.RecoverTimeout, 30*time.Second)
	dur(&c.KillFor, time.Second)
	dur(&c.PauseFor, 5*time.Second)
	dur(&c.PartitionFor, 3*time.Second)
	dur(&c.SkewBy, time.Minute)
	dur(&c.SkewFor, 3*time.Second)
	dur(&c.OneWayFor, max(6*time.Second, c.SessionTimeout*3/2))
	dur(&c.FloodFor, 3*time.Second)
	dur(&c.DiskFor, 3*time.Second)
	def(&c.FreshReaders, 3)
	dur(&c.FreshEvery, 50*time.Millisecond)
	dur(&c.FreshnessBound, c.SessionTimeout/2)
	def(&c.LockClients, 3)
	def(&c.Pipelines, 2)
	def(&c.PipelineWindow, 32)
	def(&c.PipelineDirSize, 5000)
	dur(&c.PipelineEvery, 100*time.Millisecond)
	def(&c.LiveSessions, 10)
	def(&c.ChurnClients, 2)
	def(&c.ChurnBurst, 6)
	def(&c.RegisterClients, 4)
	def(&c.RegisterKeys, 3)
	if c.Root == "" {
		c.Root = "/nemesis"
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return c
}

// ParseKinds reads a comma-separated list of fault kinds ("" for all).
func ParseKinds(list string) ([]Kind, error) {
	if list == "" {
		return nil, nil
	}
	var out []Kind
	for _, name := range strings.Split(list, ",") {
		k := Kind(strings.TrimSpace(name))
		if !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("unknown fault kind %q (kinds: %v)", k, Kinds)
		}
		out = append(out, k)
	}
	return out, nil
}
