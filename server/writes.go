package server

import (
	"errors"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// decodeWrite reads the body of a write request into the request its
// transaction carries. A multi holding an op that may not appear in one
// fails to decode, and ZooKeeper then drops the connection too. Any other
// body that does not decode becomes a transaction without a request: as
// ZooKeeper's error txn it takes a zxid and is answered MARSHALLINGERROR,
// and the connection carries on.
func (c *conn) decodeWrite(h wire.RequestHeader) (tree.Request, bool) {
	req, _ := tree.NewRequest(h.Type)
	if !c.decode(h, req) {
		if errors.Is(c.dec.Err(), tree.ErrInvalidMultiOp) {
			return nil, false
		}
		return nil, true
	}
	return req, true
}

// propose sends a write to the committer without waiting: writes of one
// session pipeline, and the reply is queued when the write applies.
func (c *conn) propose(h wire.RequestHeader, req tree.Request, size int) bool {
	if c.pendingReconfig != nil {
		c.waitWrites()
	}
	p := &proposal{
		cmd: zkdb.Command{Conn: c.id, Order: c.nextOrder(), Kind: zkdb.KindTxn,
			Txn: c.prepare(h.Type, req)},
		conn:    c,
		xid:     h.Xid,
		req:     c.cur,
		size:    size,
		applied: replyWrite,
	}
	if !c.srv.submit(p) {
		return false
	}
	c.srv.stats.proposed(size)
	c.lastWrite = p
	return true
}

// prepare makes the transaction of a write: its ACL checks decided here,
// against this member's tree, as grants (tree.Grants), so the command
// carries those and not the connection's identities; only a write whose
// ACL has an "auth" entry, which expands to the identities where it
// applies, carries them.
func (c *conn) prepare(op wire.OpCode, req tree.Request) tree.Txn {
	txn := tree.Txn{Session: c.sessionID.Load(), Op: op, Req: req}
	auth := c.identities()
	if tree.NeedsIdentities(op, req) {
		txn.Auth = auth
		return txn
	}
	c.srv.db.Read(func(v *zkdb.View) { txn.Grants = v.Tree.PrepareGrants(op, req, auth) })
	return txn
}

// replyWrite queues the reply of an applied write. It runs under the DB
// lock, after the write's watch notifications were queued.
func replyWrite(p *proposal, e *zkdb.Effects) {
	res := &e.Result
	var body encodable
	if res.Err == nil {
		switch e.Command.Txn.Op {
		case wire.OpCreate:
			if r, ok := res.Resp.(*wire.Create2Response); ok {
				body = &wire.CreateResponse{Path: r.Path}
			}
		case wire.OpMulti:
			body = &multiResponse{results: res.Multi}
		default:
			if r, ok := res.Resp.(encodable); ok {
				body = r
			}
		}
	}
	p.conn.replyTo(p.req, e.Command.Txn.Zxid, res.Err, body)
}

// multiResponse lays out per-op results as ZooKeeper's MultiResponse does:
// a header per result (type -1 and the code for errors), its body, and a
// done marker.
type multiResponse struct {
	results []tree.OpResult
}

func (m *multiResponse) Encode(e *wire.Encoder) {
	for _, r := range m.results {
		if r.Err != nil || r.Op == wire.OpError {
			code := errCode(r.Err)
			(&wire.MultiHeader{Type: wire.OpError, Err: code}).Encode(e)
			(&wire.ErrorResult{Err: code}).Encode(e)
			continue
		}
		// A create result that carries a Stat says create2 whatever created
		// the node (ZooKeeper's CreateResult(path, stat)).
		typ := r.Op
		if typ == wire.OpCreateContainer || typ == wire.OpCreateTTL {
			typ = wire.OpCreate2
		}
		(&wire.MultiHeader{Type: typ}).Encode(e)
		switch r.Op {
		case wire.OpCreate:
			if cr, ok := r.Resp.(*wire.Create2Response); ok {
				(&wire.CreateResponse{Path: cr.Path}).Encode(e)
			}
		case wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL, wire.OpSetData,
			wire.OpGetData, wire.OpGetChildren:
			if body, ok := r.Resp.(encodable); ok {
				body.Encode(e)
			}
		}
	}
	(&wire.MultiHeader{Type: wire.OpError, Done: true, Err: -1}).Encode(e)
}
