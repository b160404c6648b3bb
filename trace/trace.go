package trace

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind says what an Event records.
type Kind uint8

// The kinds of event.
const (
	// TxnApplied is a transaction applied to the tree: a client's write
	// (Err set if it failed), a session's creation or close, or the
	// server's own cleanup of a container or TTL node.
	TxnApplied Kind = iota + 1
	// WatchDelivered is a watch notification queued to the connection
	// that set the watch; Session is that connection's session.
	WatchDelivered
	// SessionAttached is a session moved to a new connection: a client
	// that reconnected and re-attached its session.
	SessionAttached
	// SessionClosed is a session gone, with its ephemerals: Expired tells
	// a server's decision (a timeout, or an expiry a test asked for) from
	// a client closing its own session.
	SessionClosed
)

var kindNames = [...]string{TxnApplied: "txn", WatchDelivered: "watch", SessionAttached: "attach", SessionClosed: "close"}

// String is the kind's name: txn, watch, attach or close.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// MarshalText writes the kind's name, so JSON shows "txn", not 1.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a name MarshalText wrote.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, name := range kindNames {
		if name != "" && name == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("trace: unknown kind %q", b)
}

// Event is one thing the server did.
type Event struct {
	// Seq numbers the events a Broker published, from 1, while it had
	// subscribers; a gap in a subscriber's sequence is a drop (or an
	// event its filter left out).
	Seq  uint64    `json:"seq"`
	Kind Kind      `json:"kind"`
	Time time.Time `json:"time"` // the transaction time (ZooKeeper's mtime clock), from the server's clock
	// Zxid is the transaction's zxid; for a watch, the zxid of the
	// transaction that fired it; 0 for an attach.
	Zxid    int64  `json:"zxid,omitempty"`
	Session int64  `json:"session,omitempty"`
	Path    string `json:"path,omitempty"`
	// Op is a transaction's operation as ZooKeeper names it: create,
	// delete, setData, setACL, check, multi, createSession,
	// closeSession, deleteContainer...
	Op string `json:"op,omitempty"`
	// Err is a failed transaction's ZooKeeper error code name
	// (NODEEXISTS, BADVERSION, ...); "" when it succeeded.
	Err string `json:"err,omitempty"`
	// Ops are the operations of a multi, each with its path.
	Ops []Op `json:"ops,omitempty"`
	// Type is a watch event's type: NodeCreated, NodeDeleted,
	// NodeDataChanged, NodeChildrenChanged.
	Type string `json:"type,omitempty"`
	// Expired is set on a SessionClosed the server decided (a timeout,
	// or an expiry asked for), clear when the client closed it.
	Expired bool `json:"expired,omitempty"`
}

// Op is one operation of a multi.
type Op struct {
	Op   string `json:"op"`
	Path string `json:"path"`
}

// String is a one-line summary, for logs and failure messages.
func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s", e.Seq, e.Kind)
	if e.Op != "" {
		b.WriteString(" " + e.Op)
	}
	if e.Type != "" {
		b.WriteString(" " + e.Type)
	}
	if e.Path != "" {
		b.WriteString(" " + e.Path)
	}
	for _, op := range e.Ops {
		fmt.Fprintf(&b, " [%s %s]", op.Op, op.Path)
	}
	if e.Err != "" {
		b.WriteString(" err=" + e.Err)
	}
	if e.Zxid != 0 {
		fmt.Fprintf(&b, " zxid=%#x", e.Zxid)
	}
	if e.Session != 0 {
		fmt.Fprintf(&b, " session=%#x", e.Session)
	}
	if e.Expired {
		b.WriteString(" expired")
	}
	return b.String()
}

// Paths lists the paths the event concerns: its Path, or each op's.
func (e *Event) Paths() []string {
	if len(e.Ops) == 0 {
		if e.Path == "" {
			return nil
		}
		return []string{e.Path}
	}
	out := make([]string, len(e.Ops))
	for i, op := range e.Ops {
		out[i] = op.Path
	}
	return out
}

// Filter selects events; its zero value selects all.
type Filter struct {
	// Kinds, if any, are the kinds kept.
	Kinds []Kind
	// PathPrefix, if set, keeps events with a path starting with it
	// (any op's, for a multi): "/app/" is everything below /app, while
	// "/app" also matches /apple. Events without a path (a session's
	// creation, close or attach) are left out.
	PathPrefix string
	// Session, if set, keeps only that session's events.
	Session int64
}

// Match reports whether f keeps e.
func (f *Filter) Match(e *Event) bool {
	if len(f.Kinds) > 0 {
		found := false
		for _, k := range f.Kinds {
			found = found || k == e.Kind
		}
		if !found {
			return false
		}
	}
	if f.Session != 0 && e.Session != f.Session {
		return false
	}
	if f.PathPrefix != "" {
		if len(e.Ops) == 0 {
			return strings.HasPrefix(e.Path, f.PathPrefix)
		}
		for _, op := range e.Ops {
			if strings.HasPrefix(op.Path, f.PathPrefix) {
				return true
			}
		}
		return false
	}
	return true
}

// ErrClosed is what Recorder.Wait returns once no further event can come:
// the recorder was closed, or reached its limit.
var ErrClosed = errors.New("trace: recorder closed or full")
