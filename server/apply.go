package server

import (
	"errors"

	"github.com/hutchzk/hutch/trace"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// sink turns the DB's effects into replies, notifications and closed
// connections. Its methods run under the DB's lock, in apply order.
type sink struct{ s *Server }

// Notify queues a watch notification on the connection that set the
// watch. Watches are keyed by connection id, as ZooKeeper keys them by
// connection, so a dropped connection's watches go with it. As in
// ZooKeeper, a connection without READ on the node (the parent, for a
// child event) is not told: the one-shot watch is spent all the same.
func (k sink) Notify(watcher int64, ev *wire.WatcherEvent, from *tree.Event) {
	c := k.s.connByID(watcher)
	if c == nil || !from.Readable(c.identities()) {
		return
	}
	c.notify(ev)
	if k.s.trace.Active() {
		k.s.traceWatches = append(k.s.traceWatches, trace.Event{Kind: trace.WatchDelivered,
			Session: c.sessionID.Load(), Path: ev.Path, Type: ev.Type.String()})
	}
}

// Applied answers the proposal this node made for the command, if any,
// and closes the connections the command ended: the owner of a session it
// closed, once its replies are written, and the former owner of a session
// it moved.
func (k sink) Applied(e *zkdb.Effects) {
	s := k.s
	if s.trace.Active() || len(s.traceWatches) > 0 {
		s.traceApplied(e)
	}
	if e.Command.Kind == zkdb.KindTxn {
		s.stats.txns.Add(1)
	}
	var p *proposal
	if e.Command.Origin == s.nodeID {
		p = s.pending.take(e.Command.Seq)
		for _, q := range e.Result.Quota {
			s.quotaLog.passed(q)
		}
	}
	if p != nil {
		p.committed, p.err = true, e.Result.Err
		if errors.Is(p.err, zkdb.ErrSessionMoved) || errors.Is(p.err, zkdb.ErrOutOfOrder) || errors.Is(p.err, tree.ErrACLChanged) {
			// The connection no longer speaks for its session, or lost
			// a write it sent earlier: ZooKeeper drops it without a
			// reply, and the client re-attaches wherever it can. A write
			// prepared against an ACL that changed before it applied
			// did not happen either; its client sees the same, and
			// retries against the new ACL.
			if p.conn != nil {
				s.log.Info("dropping connection: write refused", "session", e.Command.Txn.Session, "err", p.err)
				p.conn.out.abort()
			}
		} else if p.applied != nil {
			p.applied(p, e)
		}
		close(p.done)
	}
	if e.Membership != nil {
		s.memberOf(*e.Membership)
	}
	if e.MovedFrom != 0 {
		if c := s.connByID(e.MovedFrom); c != nil {
			s.log.Info("closing connection: session re-attached elsewhere", "session", e.Command.Txn.Session, "ip", c.ip)
			c.out.abort()
		}
	}
	if e.ClosedConn != 0 {
		if c := s.connByID(e.ClosedConn); c != nil {
			c.out.finish()
		}
	}
}

// Reset drops every client connection and gives up on this node's
// waiting writes: the state was replaced by a snapshot, so watches set on
// the old state are gone and replies may never come. Clients reconnect,
// re-attach their sessions and set their watches again, and the server
// fires what they missed (setWatches), as after a ZooKeeper follower's
// snapshot sync.
func (k sink) Reset() {
	s := k.s
	s.log.Warn("state replaced by a snapshot from the leader: dropping client connections")
	s.pending.failAll()
	for _, c := range s.openConns() {
		c.out.abort()
	}
	// The snapshot holds a membership; it is read once the DB's lock is
	// released.
	go func() { s.memberOf(s.db.Membership()) }()
}
