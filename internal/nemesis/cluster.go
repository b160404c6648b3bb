package nemesis

import (
	"context"
	"errors"
	"time"
)

// Cluster is the ensemble under test, as the nemesis drives it. Nodes are
// numbered from 0 to Size()-1. Every method returns within a bounded time.
type Cluster interface {
	// Size is the number of nodes.
	Size() int
	// ClientAddrs returns each node's client address, by index.
	ClientAddrs() []string
	// Leader returns the index of the one node whose srvr says
	// "Mode: leader", or -1 when none or more than one does.
	Leader() int
	// Kill crashes node i without a clean shutdown (SIGKILL for a process).
	Kill(i int) error
	// Restart starts node i again from its data directory and returns
	// once it answers ruok.
	Restart(i int) error
	// Pause freezes node i (SIGSTOP); ErrUnsupported where impossible.
	Pause(i int) error
	// Resume undoes Pause (SIGCONT).
	Resume(i int) error
	// Isolate silently partitions node i from the other nodes: their
	// traffic hangs, nothing is refused or closed. Client links stay up.
	Isolate(i int) error
	// Heal ends every partition.
	Heal() error
	// Skew shifts node i's clock by offset (0 undoes it); ErrUnsupported
	// for a cluster of processes sharing the host's clock.
	Skew(i int, offset time.Duration) error
	// CutOneWay stops node from opening connections to node to, silently
	// (those it had hang), while to's connections to from carry on. Heal
	// undoes it.
	CutOneWay(from, to int) error
	// Flood starts a stranger flooding node i's peer port with idle and
	// garbage connections from one address; stop ends it and describes
	// what it did (and what it cost the node, where that can be read).
	Flood(i int) (stop func() string, err error)
	// Expiries returns every session a node expired (its leader decided
	// the session had timed out), when, by the real clock; ErrUnsupported
	// where that cannot be read.
	Expiries() ([]ServerExpiry, error)
	// Digests returns each node's tree digest, such as "digest@zxid" from
	// the admin HTTP /commands/digest; equal strings mean equal trees.
	Digests() ([]string, error)
}

// ErrUnsupported is returned by a Cluster for a fault it cannot inject;
// the schedule then leaves that kind out.
var ErrUnsupported = errors.New("nemesis: fault not supported by this cluster")

// ServerExpiry is a session a node expired, and when it decided to.
type ServerExpiry struct {
	Node    int
	Session int64
	At      time.Time
}

// Role is what the membership kind makes a node: a voting member, an
// observer, or no member.
type Role int

const (
	Participant Role = iota
	Observer
	Out
)

func (r Role) String() string { return [...]string{"participant", "observer", "out"}[r] }

// Reconfigurer is a Cluster whose membership the nemesis may change (the
// membership kind); a Cluster that is not one leaves that kind out.
type Reconfigurer interface {
	// SetRole makes node i a participant, an observer or no member by
	// reconfig, trying again through elections and quorum losses, and
	// returns once the ensemble's membership says so, or when ctx ends.
	// "The ensemble's" is the newest membership a running member has
	// applied, not any member's: one restarted from an old snapshot shows
	// that snapshot's until it hears a leader (seed 49 believed one).
	SetRole(ctx context.Context, i int, role Role) error
}
