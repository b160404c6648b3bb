package server

import (
	"time"

	"github.com/hutchzk/hutch/trace"
	"github.com/hutchzk/hutch/tree"
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
	if e.Command.Kind == zkdb.KindAttach {
		ev := trace.Event{Kind: trace.SessionAttached, Time: at, Session: txn.Session}
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
			Session: e.ClosedSession, Expired: e.Command.Conn == 0})
	}
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
