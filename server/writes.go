package server

import (
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// decodeWrite reads the body of a write request into the value its
// transaction carries.
func (c *conn) decodeWrite(h wire.RequestHeader) (any, bool) {
	if h.Type == wire.OpMulti {
		m, ok := c.decodeMulti(h)
		return m, ok
	}
	req := newWriteRequest(h.Type)
	if !c.decode(h, req) {
		return nil, false
	}
	return req, true
}

// newWriteRequest returns an empty request body for a write opcode, or nil.
func newWriteRequest(op wire.OpCode) decodable {
	switch op {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer:
		return &wire.CreateRequest{}
	case wire.OpCreateTTL:
		return &wire.CreateTTLRequest{}
	case wire.OpDelete:
		return &wire.DeleteRequest{}
	case wire.OpSetData:
		return &wire.SetDataRequest{}
	case wire.OpSetACL:
		return &wire.SetACLRequest{}
	case wire.OpCheck:
		return &wire.CheckVersionRequest{}
	}
	return nil
}

// decodeMulti reads a multi request: op headers and bodies until the done
// marker.
func (c *conn) decodeMulti(h wire.RequestHeader) (*tree.MultiRequest, bool) {
	m := &tree.MultiRequest{}
	for {
		var mh wire.MultiHeader
		if !c.decode(h, &mh) {
			return nil, false
		}
		if mh.Done {
			return m, true
		}
		req := newWriteRequest(mh.Type)
		if req == nil || mh.Type == wire.OpSetACL {
			// ZooKeeper fails to deserialize such a multi and drops the connection.
			c.srv.log.Warn("closing connection: invalid op in multi", "op", int32(mh.Type), "session", c.sessionID.Load(), "ip", c.ip)
			return nil, false
		}
		if !c.decode(h, req) {
			return nil, false
		}
		m.Ops = append(m.Ops, tree.MultiOp{Op: mh.Type, Req: req})
	}
}

// propose sends a write to the committer without waiting: writes of one
// session pipeline, and the reply is queued when the write applies.
func (c *conn) propose(h wire.RequestHeader, req any) bool {
	p := &proposal{
		txn:     tree.Txn{Session: c.sessionID.Load(), Auth: c.identities(), Op: h.Type, Req: req},
		conn:    c,
		xid:     h.Xid,
		applied: replyWrite,
	}
	if !c.srv.submit(p) {
		return false
	}
	c.lastWrite = p
	return true
}

// replyWrite queues the reply of an applied write. It runs under the tree
// lock, after the write's watch notifications were queued.
func replyWrite(p *proposal, res *tree.Result) {
	var body encodable
	if res.Err == nil {
		switch p.txn.Op {
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
	p.conn.reply(p.xid, p.txn.Zxid, res.Err, body)
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
