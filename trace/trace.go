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
	// WatchSet is a watch a client set on this server (getData, exists,
	// getChildren with a watch, addWatch, or setWatches re-arming it on
	// a reconnect): Watch says which kind.
	WatchSet
	// WatchRemoved is watches that went without firing: Ops lists them
	// (Op their kind), Reason why (a removeWatches request, or their
	// connection closing).
	WatchRemoved
)

var kindNames = [...]string{TxnApplied: "txn", WatchDelivered: "watch", SessionAttached: "attach", SessionClosed: "close",
	WatchSet: "setwatch", WatchRemoved: "unwatch"}

// String is the kind's name: txn, watch, attach, close, setwatch or
// unwatch.
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
	// Reason says why a session closed ("expired": the server expired
	// it, its timeout having passed or a test having asked; "closed": its
	// client closed it) or why watches went (WatchRemoved).
	Reason string `json:"reason,omitempty"`
	// Changes are the nodes a transaction created, deleted or changed,
	// in the order it did: a closeSession's ephemerals, each op of a
	// multi, a container's or TTL node's removal. They are what the live
	// view replays the tree and the lock queues from.
	Changes []Change `json:"changes,omitempty"`
	// Member is the ensemble member a session connected or re-attached
	// through (createSession, attach, closeSession); 0 when unknown.
	Member uint64 `json:"member,omitempty"`
	// Timeout is a session's negotiated timeout in ms (createSession,
	// closeSession).
	Timeout int32 `json:"timeout,omitempty"`
	// Watch is the kind of watch set (WatchSet): data, exist, child,
	// persistent or persistentRecursive.
	Watch string `json:"watch,omitempty"`
}

// Op is one operation of a multi, or one watch of a WatchRemoved (Op its
// kind).
type Op struct {
	Op   string `json:"op"`
	Path string `json:"path"`
}

// Change is one node a transaction created, deleted or changed.
type Change struct {
	// Type is NodeCreated, NodeDeleted or NodeDataChanged.
	Type string `json:"type"`
	Path string `json:"path"`
	// Owner is the session owning the node, for an ephemeral one.
	Owner int64 `json:"owner,omitempty"`
	// Data is a created node's data, or a deleted or changed node's
	// data before: at most ChangeData bytes of it. Size is its whole
	// length.
	Data []byte `json:"data,omitempty"`
	Size int    `json:"size,omitempty"`
}

// ChangeData is how much of a node's data a Change keeps: enough for the
// name or address a lock recipe's contender writes there.
const ChangeData = 256

// Changed returns a Change of data, keeping ChangeData bytes of it: data
// itself when it is that short (a node's data is never changed in place,
// so sharing it is safe), else a copy of its start, so a large node's
// data is not held on to.
func Changed(typ, path string, owner int64, data []byte) Change {
	c := Change{Type: typ, Path: path, Owner: owner, Size: len(data)}
	if len(data) <= ChangeData {
		c.Data = data
	} else {
		c.Data = append([]byte(nil), data[:ChangeData]...)
	}
	return c
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
	if e.Watch != "" {
		b.WriteString(" watch=" + e.Watch)
	}
	for _, c := range e.Changes {
		fmt.Fprintf(&b, " {%s %s}", c.Type, c.Path)
	}
	if e.Reason != "" {
		b.WriteString(" reason=" + e.Reason)
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

// Paths lists the paths the event concerns: its Path, each op's and
// each change's (a closeSession concerns the ephemerals it deleted).
func (e *Event) Paths() []string {
	var out []string
	if e.Path != "" {
		out = append(out, e.Path)
	}
	for _, op := range e.Ops {
		out = append(out, op.Path)
	}
	for _, c := range e.Changes {
		out = append(out, c.Path)
	}
	return out
}

// hasPathPrefix reports whether any path the event concerns starts with
// prefix, without building the list.
func (e *Event) hasPathPrefix(prefix string) bool {
	if strings.HasPrefix(e.Path, prefix) && e.Path != "" {
		return true
	}
	for _, op := range e.Ops {
		if strings.HasPrefix(op.Path, prefix) {
			return true
		}
	}
	for _, c := range e.Changes {
		if strings.HasPrefix(c.Path, prefix) {
			return true
		}
	}
	return false
}

// Filter selects events; its zero value selects all.
type Filter struct {
	// Kinds, if any, are the kinds kept.
	Kinds []Kind
	// PathPrefix, if set, keeps events with a path starting with it
	// (any op's, for a multi; any deleted ephemeral's, for a session's
	// close): "/app/" is everything below /app, while "/app" also matches
	// /apple. Events without a path (a session's creation or attach, a
	// close that deleted nothing) are left out.
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
		return e.hasPathPrefix(f.PathPrefix)
	}
	return true
}

// ErrClosed is what Recorder.Wait returns once no further event can come:
// the recorder was closed, or reached its limit.
var ErrClosed = errors.New("trace: recorder closed or full")
