package zkdb

import (
	"errors"

	"github.com/hutchzk/hutch/tree"
)

// Kind says what a Command does to the state.
type Kind uint8

const (
	// KindTxn applies Txn to the tree; it takes the next zxid.
	KindTxn Kind = 1
	// KindAttach moves Txn.Session to Command.Conn, as when a client
	// re-attaches its session through another connection. It changes no
	// znode and takes no zxid (ZooKeeper logs nothing for it), but every
	// replica learns the session's new owner.
	KindAttach Kind = 2
	// KindReconfig applies a reconfig's outcome, which the leader decided
	// (Txn.Op is OpReconfig, Txn.Req an *Outcome): it takes the next
	// zxid, as ZooKeeper's reconfig transaction does, and when the outcome
	// is a new configuration installs it as the membership and writes it
	// into /zookeeper/config. It is never forwarded: only a leader puts it
	// in the log.
	KindReconfig Kind = 3
)

// Command is one write, as replicated: the transaction and who sent it.
type Command struct {
	// Origin is the node that took the request from its client and Seq its
	// number there: the origin finds the waiting request by them and
	// replies once the command applies.
	Origin uint64
	Seq    uint64
	// Conn is the client connection that sent the command, or 0 for the
	// server's own writes (expiry, cleanup), which act for no connection.
	Conn int64
	// Order is the command's position among Conn's commands since Conn
	// created or attached its session, from 1. A command applies only in
	// its turn, so a connection's writes commit in the order it sent them
	// or not at all.
	Order uint64
	Kind  Kind
	// Txn's Zxid and Time are assigned when the command applies.
	Txn tree.Txn
	// Timeout is the session timeout, in milliseconds, a KindAttach
	// command negotiated.
	Timeout int32
	// Term, when not 0, is the leadership term in which the leader decided
	// this command on its own (an expiry, a cleanup): it applies only from
	// a log entry of that term. A leader deposed meanwhile may still hand
	// the command on, but its decision no longer holds: the new leader
	// has started every session afresh and looks at the tree itself.
	Term uint64
}

// Batch is one log entry: commands applied together, stamped with one time
// by the node that ordered them (the leader, or a single node).
type Batch struct {
	Time     int64 // ms since the epoch
	Commands []Command
	// Term is the leadership term of the log entry (1 on a single node).
	Term uint64
}

// Errors of commands refused before they reach the tree.
var (
	// ErrSessionMoved refuses a write whose connection no longer owns its
	// session: the session re-attached through another connection since.
	// ZooKeeper refuses such a write with SESSIONMOVED and drops the
	// connection that sent it.
	ErrSessionMoved = errors.New("zkdb: session moved to another connection")
	// ErrOutOfOrder refuses a write that arrived before an earlier write of
	// its connection, which was lost: committing it would reorder the
	// connection's writes. The connection must be dropped.
	ErrOutOfOrder = errors.New("zkdb: an earlier write of this connection was lost")
	// ErrStaleDecision refuses a command a leader decided on its own in a
	// term that is over (see Command.Term).
	ErrStaleDecision = errors.New("zkdb: decided by a leader of another term")
)
