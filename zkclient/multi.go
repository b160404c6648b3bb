package zkclient

import (
	"fmt"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// Op is one operation of a Multi.
type Op struct {
	Type wire.OpCode
	Req  wire.Message
}

// DeleteOp deletes path at version within a Multi.
func DeleteOp(path string, version int32) Op {
	return Op{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: path, Version: version}}
}

// CheckOp asserts path's version within a Multi.
func CheckOp(path string, version int32) Op {
	return Op{Type: wire.OpCheck, Req: &wire.CheckVersionRequest{Path: path, Version: version}}
}

// SetOp sets path's data at version within a Multi.
func SetOp(path string, data []byte, version int32) Op {
	return Op{Type: wire.OpSetData, Req: &wire.SetDataRequest{Path: path, Data: data, Version: version}}
}

// CreateOp creates path with flags (no TTL modes) within a Multi.
func CreateOp(path string, data []byte, acl []wire.ACL, flags int32) Op {
	return Op{Type: wire.OpCreate, Req: &wire.CreateRequest{Path: path, Data: data, ACL: acl, Flags: flags}}
}

// OpResult is the outcome of one op of a Multi: Err is its code (OK for
// a success; in a failed multi the failing op has its error and the others
// OK or RUNTIMEINCONSISTENCY); Path is a created node's path and Stat a
// create2's or setData's Stat.
type OpResult struct {
	Type wire.OpCode
	Err  wire.Code
	Path string
	Stat wire.Stat
}

// Multi applies ops atomically. It returns each op's result; if one
// failed, the error carries the first failing op's code.
func (c *Client) Multi(ops ...Op) ([]OpResult, error) {
	req := &tree.MultiRequest{Ops: make([]tree.MultiOp, len(ops))}
	for i, op := range ops {
		if p, ok := opPath(op); ok {
			if err := ValidatePath(p, false); err != nil {
				return nil, err
			}
		}
		req.Ops[i] = tree.MultiOp{Op: op.Type, Req: op.Req}
	}
	cn, code := c.connected()
	if code != wire.CodeOK {
		return nil, &Error{Code: code}
	}
	var results []OpResult
	cl := &call{op: wire.OpMulti, decode: func(d *wire.Decoder) { results = decodeMultiResults(d) }}
	_, err := c.callOn(cn, cl, "", req)
	if err != nil {
		return results, err
	}
	for _, r := range results {
		if r.Err != wire.CodeOK {
			return results, &Error{Code: r.Err}
		}
	}
	return results, nil
}

func opPath(op Op) (string, bool) {
	switch r := op.Req.(type) {
	case *wire.DeleteRequest:
		return r.Path, true
	case *wire.CheckVersionRequest:
		return r.Path, true
	case *wire.SetDataRequest:
		return r.Path, true
	}
	return "", false
}

// errUnknownResult is a multi result of a type no request asked for.
var errUnknownResult = fmt.Errorf("zkclient: unknown multi result type")

// decodeMultiResults reads a MultiResponse: a header and body per result
// up to a done header.
func decodeMultiResults(d *wire.Decoder) []OpResult {
	var out []OpResult
	for d.Err() == nil {
		var h wire.MultiHeader
		h.Decode(d)
		if h.Done || d.Err() != nil {
			break
		}
		r := OpResult{Type: h.Type}
		switch h.Type {
		case wire.OpError:
			var e wire.ErrorResult
			e.Decode(d)
			r.Err = e.Err
		case wire.OpCreate:
			var cr wire.CreateResponse
			cr.Decode(d)
			r.Path = cr.Path
		case wire.OpCreate2:
			var cr wire.Create2Response
			cr.Decode(d)
			r.Path, r.Stat = cr.Path, cr.Stat
		case wire.OpSetData:
			var sr wire.StatResponse
			sr.Decode(d)
			r.Stat = sr.Stat
		case wire.OpDelete, wire.OpCheck:
		default:
			d.Fail(errUnknownResult)
		}
		out = append(out, r)
	}
	return out
}
