package server

import (
	"time"

	"github.com/hutchzk/hutch/trace"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/watch"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// traceApplied publishes what one command did: the command, then the
// watch deliveries it caused (collected by Notify), then the session it
// closed. It runs in the sink, under the DB's lock, so events come out in
// apply order.
func (s *Server) traceApplied(e *zkdb.Effects) {
	txn := &e.Command.Txn
	at := time.UnixMilli(txn.Time)
	var closing trace.Event // the txn's event, for a closeSession
	if e.Command.Kind == zkdb.KindAttach {
		ev := trace.Event{Kind: trace.SessionAttached, Time: at, Session: txn.Session, Member: e.Command.Origin, Timeout: e.Command.Timeout}
		if e.Result.Err != nil {
			ev.Err = errCode(e.Result.Err).String()
		}
		s.trace.Publish(ev)
	} else {
		ev := trace.Event{Kind: trace.TxnApplied, Time: at, Zxid: txn.Zxid, Session: txn.Session, Op: txn.Op.String()}
		if err := e.Result.Err; err != nil {
			ev.Err = errCode(err).String()
		} else if err := e.Result.MultiErr(); err != nil {
			ev.Err = errCode(err).String()
		}
		ev.Path, ev.Ops = txnPaths(txn, &e.Result)
		ev.Changes = txnChanges(e.Result.Events)
		switch {
		case e.ClosedSession != 0:
			ev.Member, ev.Timeout, ev.Reason = e.ClosedNode, e.ClosedTimeout, closeReason(e)
			closing = ev
		case txn.Op == wire.OpCreateSession && ev.Err == "":
			if cs, ok := txn.Req.(*tree.CreateSession); ok {
				ev.Member, ev.Timeout = e.Command.Origin, cs.Timeout
			}
		}
		s.trace.Publish(ev)
	}
	for i := range s.traceWatches {
		w := &s.traceWatches[i]
		w.Time, w.Zxid = at, txn.Zxid
		s.trace.Publish(*w)
	}
	clear(s.traceWatches)
	s.traceWatches = s.traceWatches[:0]
	if e.ClosedSession != 0 {
		s.trace.Publish(trace.Event{Kind: trace.SessionClosed, Time: at, Zxid: txn.Zxid,
			Session: e.ClosedSession, Expired: e.Command.Conn == 0, Reason: closing.Reason,
			Member: closing.Member, Timeout: closing.Timeout, Changes: closing.Changes})
	}
}

// closeReason says why a closeSession closed its session: the server
// decided (Conn 0: a timeout, or an expiry asked for) or its client asked.
func closeReason(e *zkdb.Effects) string {
	if e.Command.Conn == 0 {
		return trace.ReasonExpired
	}
	return trace.ReasonClosed
}

// txnChanges lists the nodes a transaction created, deleted or changed,
// from the events the tree raised, with what the view needs to replay
// them: the owner and (the start of) the data.
func txnChanges(events []tree.Event) []trace.Change {
	n := 0
	for i := range events {
		if events[i].Type != wire.EventNodeChildrenChanged {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]trace.Change, 0, n)
	for i := range events {
		ev := &events[i]
		if ev.Type != wire.EventNodeChildrenChanged {
			out = append(out, trace.Changed(ev.Type.String(), ev.Path, ev.Owner, ev.Data))
		}
	}
	return out
}

// txnPaths names the node a transaction touched (the created name, for a
// sequential create), or each op's for a multi.
func txnPaths(txn *tree.Txn, res *tree.Result) (string, []trace.Op) {
	if m, ok := txn.Req.(*tree.MultiRequest); ok {
		ops := make([]trace.Op, len(m.Ops))
		for i, op := range m.Ops {
			var resp any
			if i < len(res.Multi) {
				resp = res.Multi[i].Resp
			}
			ops[i] = trace.Op{Op: op.Op.String(), Path: requestPath(op.Req, resp)}
		}
		return "", ops
	}
	return requestPath(txn.Req, res.Resp), nil
}

// requestPath is the path of a write request, or the created one.
func requestPath(req, resp any) string {
	if r, ok := resp.(*wire.Create2Response); ok && r.Path != "" {
		return r.Path
	}
	switch r := req.(type) {
	case *wire.CreateRequest:
		return r.Path
	case *wire.CreateTTLRequest:
		return r.Path
	case *wire.DeleteRequest:
		return r.Path
	case *wire.SetDataRequest:
		return r.Path
	case *wire.SetACLRequest:
		return r.Path
	case *wire.CheckVersionRequest:
		return r.Path
	case *wire.PathRequest:
		return r.Path
	}
	return ""
}

// traceWatchSet publishes a watch c set on path, from inside the read that
// set it, under the DB's read lock: it is ordered with the writes around
// it. zxid is the last one applied.
func (c *conn) traceWatchSet(kind, path string, zxid int64) {
	if t := c.srv.trace; t.Active() {
		t.Publish(trace.Event{Kind: trace.WatchSet, Time: c.srv.clock.Now(), Zxid: zxid,
			Session: c.sessionID.Load(), Path: path, Watch: kind})
	}
}

// traceWatchesGone publishes watches c held that went without firing.
func (c *conn) traceWatchesGone(reason string, ws []trace.Op, zxid int64) {
	if t := c.srv.trace; t.Active() && len(ws) > 0 {
		t.Publish(trace.Event{Kind: trace.WatchRemoved, Time: c.srv.clock.Now(), Zxid: zxid,
			Session: c.sessionID.Load(), Ops: ws, Reason: reason})
	}
}

// watchKinds names the watches of table entries as the view does: a
// persistent watch's two entries are one; a one-shot data watch on a
// node that does not exist is an exist watch.
func watchKinds(entries []watch.Entry, exists func(path string) bool) []trace.Op {
	dataMode := make(map[string]string, len(entries))
	for _, e := range entries {
		if !e.Child {
			dataMode[e.Path] = e.Mode
		}
	}
	var out []trace.Op
	for _, e := range entries {
		kind := e.Mode
		switch {
		case e.Mode != "standard":
			if e.Child && dataMode[e.Path] == e.Mode {
				continue // its data entry stands for both
			}
		case e.Child:
			kind = "child"
		case exists(e.Path):
			kind = "data"
		default:
			kind = "exist"
		}
		out = append(out, trace.Op{Op: kind, Path: e.Path})
	}
	return out
}

// dropWatches forgets the watches of a connection that closed and, when
// the trace is on, publishes them: inside a read, so that they are
// ordered with the writes, and named as the view names them.
func (s *Server) dropWatches(c *conn) {
	if !s.trace.Active() {
		s.db.RemoveWatcher(c.id)
		return
	}
	s.db.Read(func(v *zkdb.View) {
		gone := watchKinds(s.db.WatchesOf([]int64{c.id}), func(path string) bool {
			_, err := v.Tree.Exists(path)
			return err == nil
		})
		s.db.RemoveWatcher(c.id)
		c.traceWatchesGone(trace.ReasonConnClosed, gone, v.Tree.LastZxid())
	})
}
