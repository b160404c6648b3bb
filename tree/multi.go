package tree

import "github.com/hutchzk/hutch/wire"

// MultiOp is one op of a multi: Op is OpCreate, OpCreate2, OpCreateContainer,
// OpCreateTTL, OpDelete, OpSetData or OpCheck, with Req as for Txn.
type MultiOp struct {
	Op  wire.OpCode
	Req any
}

// MultiRequest is the body of OpMulti.
type MultiRequest struct {
	Ops []MultiOp
}

// normalizeMultiOp re-derives an op's type from its create flags the way
// ZooKeeper's MultiOperationRecord.deserialize does, so the result layout
// (CreateResult with or without Stat) and the node type match it: a create,
// create2 or createContainer op takes createContainer for flag 4; TTL flags
// there, or unknown flags, make the whole multi unreadable; a createTTL op with
// a non-TTL mode becomes a plain create (or createContainer for flag 4) and
// its ttl is dropped. ok false means ZooKeeper would answer MarshallingError.
func normalizeMultiOp(op MultiOp) (MultiOp, bool) {
	switch op.Op {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer:
		r, ok := op.Req.(*wire.CreateRequest)
		if !ok || r == nil {
			return op, false
		}
		m, ok := modeOf(r.Flags)
		if !ok || m.ttl {
			return op, false
		}
		// Op.create rebuilds the op from its flags: create2 becomes a plain
		// create, whose result carries the path and no Stat.
		op.Op = wire.OpCreate
		if m.container {
			op.Op = wire.OpCreateContainer
		}
		return op, true
	case wire.OpCreateTTL:
		r, ok := op.Req.(*wire.CreateTTLRequest)
		if !ok || r == nil {
			return op, false
		}
		if m, ok := modeOf(r.Flags); ok && m.ttl {
			return op, true
		}
		cr := &wire.CreateRequest{Path: r.Path, Data: r.Data, ACL: r.ACL, Flags: r.Flags}
		if r.Flags == wire.ModeContainer {
			return MultiOp{Op: wire.OpCreateContainer, Req: cr}, true
		}
		return MultiOp{Op: wire.OpCreate, Req: cr}, true
	case wire.OpDelete:
		r, ok := op.Req.(*wire.DeleteRequest)
		return op, ok && r != nil
	case wire.OpSetData:
		r, ok := op.Req.(*wire.SetDataRequest)
		return op, ok && r != nil
	case wire.OpCheck:
		r, ok := op.Req.(*wire.CheckVersionRequest)
		return op, ok && r != nil
	}
	return op, false
}

// applyMulti applies ops in order, each seeing the effects of the earlier
// ones, all under the one zxid. On the first failure the changes made so far
// are undone from the undo log, and the results take ZooKeeper's failed
// layout. Result.Err stays nil: ZooKeeper's reply header says OK for a failed
// multi and carries the errors in the body.
func (t *Tree) applyMulti(c *ctx, req *MultiRequest) Result {
	ops := make([]MultiOp, len(req.Ops))
	for i, op := range req.Ops {
		var ok bool
		if ops[i], ok = normalizeMultiOp(op); !ok {
			return Result{Err: ErrMarshallingError}
		}
	}
	var log []undoRec
	t.undo = &log
	defer func() { t.undo = nil }()
	c.inMulti = true

	results := make([]OpResult, len(ops))
	for i, op := range ops {
		resp, err := t.applyOp(c, op.Op, op.Req)
		if err == ErrMarshallingError || err == ErrACLChanged {
			// Limits or stats that do not parse throw in ZooKeeper's
			// prep, outside the per-op error handling: the whole multi
			// becomes an error txn, answered with no results. A changed
			// ACL refuses the whole multi too (grants.go).
			t.rollback(log)
			return Result{Err: err, Quota: c.quota}
		}
		if err != nil {
			t.rollback(log)
			for j := range results {
				switch {
				case j < i:
					results[j] = OpResult{Op: wire.OpError}
				case j == i:
					results[j] = OpResult{Op: wire.OpError, Err: err}
				default:
					results[j] = OpResult{Op: wire.OpError, Err: ErrRuntimeInconsistency}
				}
			}
			return Result{Multi: results, Quota: c.quota}
		}
		// Typed nils would otherwise hide inside the interface.
		switch r := resp.(type) {
		case *wire.Create2Response:
			results[i] = OpResult{Op: op.Op, Resp: r}
		case *wire.StatResponse:
			results[i] = OpResult{Op: op.Op, Resp: r}
		default:
			results[i] = OpResult{Op: op.Op}
		}
	}
	return Result{Multi: results, Events: c.events, Quota: c.quota}
}
