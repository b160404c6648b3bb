package membership

import "fmt"

// State is a node's part in its ensemble now, as srvr's "Mode:" line names
// it. Code asks a State what the node may do (ServesClients, OrdersWrites,
// RunsSessionTimers, ...) rather than comparing names, so that a new part
// (an observer, a read-only member) gets the right answers in one place.
type State uint8

// The states. The zero value is Standalone.
const (
	// Standalone is a single node that replicates nothing: it orders its
	// writes itself and runs the session timers.
	Standalone State = iota
	// Leading is the Raft leader: it orders every write and runs the
	// session timers of the whole ensemble.
	Leading
	// Following is a participant that does not lead: it votes, counts for
	// quorum, serves reads and forwards writes to the leader.
	Following
	// Observing is an observer (a Raft non-voter): it serves reads and
	// forwards writes like a follower, but never votes or counts for
	// quorum.
	Observing
	// ReadOnly is a member cut off from its quorum that serves read-only
	// clients (readonlymode.enabled): reads from its own state, every
	// write refused.
	ReadOnly
)

var stateNames = [...]string{
	Standalone: "standalone",
	Leading:    "leader",
	Following:  "follower",
	Observing:  "observer",
	ReadOnly:   "read-only",
}

// String is srvr's Mode: standalone, leader, follower, observer or
// read-only.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// ParseState reads a State from its String.
func ParseState(name string) (State, error) {
	for s, n := range stateNames {
		if n == name {
			return State(s), nil
		}
	}
	return 0, fmt.Errorf("membership: unknown state %q", name)
}

// MarshalText writes the State's name, so JSON shows "leader" and not 1.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a State's name.
func (s *State) UnmarshalText(b []byte) error {
	v, err := ParseState(string(b))
	if err == nil {
		*s = v
	}
	return err
}

// Replicated reports whether the node belongs to an ensemble.
func (s State) Replicated() bool { return s != Standalone }

// Leads reports whether the node is the ensemble's leader.
func (s State) Leads() bool { return s == Leading }

// OrdersWrites reports whether the node puts writes into the one order
// every replica applies (the leader, or a single node); the others hand
// theirs to the leader.
func (s State) OrdersWrites() bool { return s == Leading || s == Standalone }

// AcceptsWrites reports whether the node takes writes from its clients at
// all (ordering them or forwarding them); a read-only member refuses them.
func (s State) AcceptsWrites() bool { return s != ReadOnly }

// RunsSessionTimers reports whether the node expires sessions: the one
// that orders writes. Followers and observers report their clients'
// activity to it instead.
func (s State) RunsSessionTimers() bool { return s.OrdersWrites() }

// CountsForQuorum reports whether the node votes and its acknowledgement
// counts towards a quorum: participants (leader or follower), not
// observers.
func (s State) CountsForQuorum() bool { return s == Leading || s == Following }

// IsReadOnly reports whether the node serves read-only clients only.
func (s State) IsReadOnly() bool { return s == ReadOnly }
