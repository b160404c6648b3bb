package server

import (
	"time"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// applyBatch stamps and applies proposals in order under one acquisition of
// the tree lock. Only the single-node committer stamps; a replicated one
// arrives with zxid and time already chosen by the leader.
func (s *Server) applyBatch(batch []*proposal) {
	s.treeMu.Lock()
	now := s.cfg.Clock.Now().UnixMilli()
	for _, p := range batch {
		p.txn.Zxid = s.tree.LastZxid() + 1
		p.txn.Time = now
		s.applyCommittedLocked(p)
	}
	s.treeMu.Unlock()
	for _, p := range batch {
		close(p.done)
	}
}

// applyCommittedLocked is the one place the tree changes: apply the
// transaction, fire the watches it triggered, then let the waiting request
// queue its reply. The caller holds treeMu for writing.
func (s *Server) applyCommittedLocked(p *proposal) {
	res := s.tree.Apply(&p.txn)
	p.committed = true
	s.stats.txns.Add(1)
	if len(res.Events) > 0 {
		s.watchMu.Lock()
		for i := range res.Events {
			s.firing = &res.Events[i]
			s.watches.Trigger(s.firing.Type, s.firing.Path, s.deliver)
		}
		s.firing = nil
		s.watchMu.Unlock()
	}
	if p.applied != nil {
		p.applied(p, &res)
	}
	// After the reply: closing a session closes its connection once what is
	// queued, the closeSession reply included, has been written.
	if res.Err == nil {
		s.trackSessionsLocked(&p.txn)
	}
}

// deliverEvent queues a watch notification on the connection that set the
// watch. Watches are keyed by connection id, as ZooKeeper keys them by
// connection, so a dropped connection's watches go with it. As in ZooKeeper,
// a connection without READ on the node (the parent, for a child event) is
// not told: the one-shot watch is spent all the same.
func (s *Server) deliverEvent(connID int64, ev wire.WatcherEvent) {
	s.connsMu.Lock()
	c := s.conns[connID]
	s.connsMu.Unlock()
	if c == nil || !s.firing.Readable(c.identities()) {
		return
	}
	c.out.send(wire.ReplyHeader{Xid: wire.XidNotification, Zxid: -1}, &ev)
	s.stats.notifications.Add(1)
}

// trackSessionsLocked keeps the session tracker in step with the replicated
// session table, on every node, so whichever node leads can expire any
// session; a closed session's connection here is closed too.
func (s *Server) trackSessionsLocked(txn *tree.Txn) {
	switch txn.Op {
	case wire.OpCreateSession:
		if cs, ok := txn.Req.(*tree.CreateSession); ok {
			s.sessMu.Lock()
			s.tracker.Add(cs.ID, time.Duration(cs.Timeout)*time.Millisecond, s.cfg.Clock.Now())
			s.sessMu.Unlock()
		}
	case wire.OpCloseSession:
		s.sessMu.Lock()
		s.tracker.Remove(txn.Session)
		s.sessMu.Unlock()
		s.connsMu.Lock()
		c := s.sessionConns[txn.Session]
		delete(s.sessionConns, txn.Session)
		s.connsMu.Unlock()
		if c != nil {
			c.out.finish()
		}
	}
}
