package tree

import (
	"errors"

	"github.com/hutchzk/hutch/wire"
)

// Request is the body a write transaction carries. Its jute encoding is the
// one form it takes everywhere: from the client, in the replicated log and
// in tests.
type Request interface {
	Encode(e *wire.Encoder)
	Decode(d *wire.Decoder)
}

// writeOp describes one opcode a Txn may carry.
type writeOp struct {
	// request returns an empty body; nil for ops that carry none.
	request func() Request
	// client marks the ops a client sends as an ordinary write request.
	client bool
	// inMulti marks the ops a multi may contain.
	inMulti bool
}

// writeOps is the one table of the ops a Txn can carry and the request type
// each carries: clients' writes, and the ops only the server issues.
var writeOps = map[wire.OpCode]writeOp{
	wire.OpCreate:          {func() Request { return new(wire.CreateRequest) }, true, true},
	wire.OpCreate2:         {func() Request { return new(wire.CreateRequest) }, true, true},
	wire.OpCreateContainer: {func() Request { return new(wire.CreateRequest) }, true, true},
	wire.OpCreateTTL:       {func() Request { return new(wire.CreateTTLRequest) }, true, true},
	wire.OpDelete:          {func() Request { return new(wire.DeleteRequest) }, true, true},
	wire.OpSetData:         {func() Request { return new(wire.SetDataRequest) }, true, true},
	wire.OpSetACL:          {func() Request { return new(wire.SetACLRequest) }, true, false},
	wire.OpCheck:           {func() Request { return new(wire.CheckVersionRequest) }, true, true},
	wire.OpMulti:           {func() Request { return new(MultiRequest) }, true, false},
	wire.OpReconfig:        {func() Request { return new(wire.ReconfigRequest) }, true, false},
	wire.OpCreateSession:   {func() Request { return new(CreateSession) }, false, false},
	wire.OpCloseSession:    {nil, false, false},
	wire.OpDeleteContainer: {func() Request { return new(wire.PathRequest) }, false, false},
}

// NewRequest returns an empty body for op; nil and true for an op that
// carries none, false for an op no Txn carries.
func NewRequest(op wire.OpCode) (Request, bool) {
	w, ok := writeOps[op]
	if !ok || w.request == nil {
		return nil, ok
	}
	return w.request(), true
}

// IsClientWrite reports whether op is a write request a client sends
// (create, delete, setData, setACL, check, multi, reconfig...); closeSession
// is a client request too but is not a write of this kind.
func IsClientWrite(op wire.OpCode) bool { return writeOps[op].client }

// ErrInvalidMultiOp is the decoding error of a multi containing an op that
// may not appear in one; ZooKeeper cannot deserialize such a request.
var ErrInvalidMultiOp = errors.New("tree: op not allowed in a multi")

// Encode writes the multi as ZooKeeper's MultiOperationRecord: a header and
// body per op, then a done header.
func (m *MultiRequest) Encode(e *wire.Encoder) {
	for _, op := range m.Ops {
		(&wire.MultiHeader{Type: op.Op, Err: -1}).Encode(e)
		if r, ok := op.Req.(Request); ok {
			r.Encode(e)
		}
	}
	(&wire.MultiHeader{Type: wire.OpError, Done: true, Err: -1}).Encode(e)
}

// Decode reads a MultiOperationRecord. An op that may not appear in a
// multi fails it with ErrInvalidMultiOp.
func (m *MultiRequest) Decode(d *wire.Decoder) {
	m.Ops = m.Ops[:0]
	for d.Err() == nil {
		var h wire.MultiHeader
		h.Decode(d)
		if h.Done || d.Err() != nil {
			return
		}
		if !writeOps[h.Type].inMulti {
			d.Fail(ErrInvalidMultiOp)
			return
		}
		req := writeOps[h.Type].request()
		req.Decode(d)
		m.Ops = append(m.Ops, MultiOp{Op: h.Type, Req: req})
	}
}

// Encode writes the session's id, timeout and password.
func (c *CreateSession) Encode(e *wire.Encoder) {
	e.Int64(c.ID)
	e.Int32(c.Timeout)
	e.Buffer(c.Passwd)
}

// Decode reads what Encode wrote.
func (c *CreateSession) Decode(d *wire.Decoder) {
	c.ID = d.Int64()
	c.Timeout = d.Int32()
	c.Passwd = d.Buffer()
}
