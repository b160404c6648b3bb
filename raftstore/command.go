package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// Entry is one write committed through Raft. Txn.Zxid is 0 when proposed: the
// applier assigns zxids deterministically in commit order, so every node's
// tree is identical.
type Entry struct {
	Origin uint64   // node id that proposed it; routes the client reply
	Seq    uint64   // proposal number on the origin node
	Txn    tree.Txn // Time is leader-stamped before proposing
}

// Command codec errors.
var (
	// ErrCorruptCommand means a log entry or forwarded frame does not decode.
	ErrCorruptCommand = errors.New("raftstore: corrupt command")
	// errRequestType means a Txn's Req does not have the type its Op needs.
	errRequestType = errors.New("raftstore: request type does not match op")
)

// Layout of a batch, all integers varint-encoded except inside requests:
//
//	batch   = uvarint(count) entry*
//	entry   = uvarint(origin) uvarint(seq) varint(time) varint(session)
//	          uvarint(nauth) (str(scheme) str(id))* varint(op) body
//	body    = uvarint(0) for a nil Req | uvarint(len+1) request
//	str     = uvarint(len) bytes
//
// A request is the op's jute encoding (wire's Encode); OpMulti's is
// uvarint(count) (varint(op) body)* and OpCreateSession's is
// jute long id, int timeout, buffer passwd. The zxid is not carried: the
// applier assigns it. Bodies are length-prefixed so a decoder can check that
// each request consumes exactly its bytes.

// minEntrySize is the fewest bytes an encoded entry can take (one byte for
// each of origin, seq, time, session, nauth, op and body marker); it bounds
// the entry count a batch may claim.
const minEntrySize = 7

// scratch holds the jute encoder used for request bodies, reused across
// calls so encoding a batch allocates only the result.
type scratch struct{ enc wire.Encoder }

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// EncodeBatch appends the encoding of entries to dst.
func EncodeBatch(dst []byte, entries []Entry) ([]byte, error) {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	dst = binary.AppendUvarint(dst, uint64(len(entries)))
	for i := range entries {
		var err error
		if dst, err = s.entry(dst, &entries[i]); err != nil {
			return nil, fmt.Errorf("entry %d (op %d): %w", i, entries[i].Txn.Op, err)
		}
	}
	return dst, nil
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func (s *scratch) entry(dst []byte, e *Entry) ([]byte, error) {
	t := &e.Txn
	dst = binary.AppendUvarint(dst, e.Origin)
	dst = binary.AppendUvarint(dst, e.Seq)
	dst = binary.AppendVarint(dst, t.Time)
	dst = binary.AppendVarint(dst, t.Session)
	dst = binary.AppendUvarint(dst, uint64(len(t.Auth)))
	for _, id := range t.Auth {
		dst = appendStr(dst, id.Scheme)
		dst = appendStr(dst, id.ID)
	}
	return s.op(dst, t.Op, t.Req)
}

// op appends varint(op) and the body of req.
func (s *scratch) op(dst []byte, op wire.OpCode, req any) ([]byte, error) {
	dst = binary.AppendVarint(dst, int64(op))
	if isNil(req) {
		return binary.AppendUvarint(dst, 0), nil
	}
	if mr, ok := req.(*tree.MultiRequest); ok && op == wire.OpMulti {
		// Multi bodies nest ops, so they are built in dst directly: the
		// scratch encoder is needed by each op.
		var body []byte
		body = binary.AppendUvarint(body, uint64(len(mr.Ops)))
		for i := range mr.Ops {
			var err error
			if body, err = s.op(body, mr.Ops[i].Op, mr.Ops[i].Req); err != nil {
				return nil, err
			}
		}
		dst = binary.AppendUvarint(dst, uint64(len(body))+1)
		return append(dst, body...), nil
	}
	s.enc.Reset()
	if err := encodeRequest(&s.enc, op, req); err != nil {
		return nil, err
	}
	b := s.enc.Bytes()
	dst = binary.AppendUvarint(dst, uint64(len(b))+1)
	return append(dst, b...), nil
}

// isNil reports whether req is nil or a typed nil pointer of a known type,
// both of which the tree treats as a missing request.
func isNil(req any) bool {
	switch r := req.(type) {
	case nil:
		return true
	case *wire.CreateRequest:
		return r == nil
	case *wire.CreateTTLRequest:
		return r == nil
	case *wire.DeleteRequest:
		return r == nil
	case *wire.SetDataRequest:
		return r == nil
	case *wire.SetACLRequest:
		return r == nil
	case *wire.CheckVersionRequest:
		return r == nil
	case *wire.PathRequest:
		return r == nil
	case *wire.ReconfigRequest:
		return r == nil
	case *tree.MultiRequest:
		return r == nil
	case *tree.CreateSession:
		return r == nil
	case *Touch:
		return r == nil
	}
	return false
}

// encodeRequest writes req, which must have the type op carries.
func encodeRequest(e *wire.Encoder, op wire.OpCode, req any) error {
	ok := false
	switch op {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer:
		var r *wire.CreateRequest
		if r, ok = req.(*wire.CreateRequest); ok {
			r.Encode(e)
		}
	case wire.OpCreateTTL:
		var r *wire.CreateTTLRequest
		if r, ok = req.(*wire.CreateTTLRequest); ok {
			r.Encode(e)
		}
	case wire.OpDelete:
		var r *wire.DeleteRequest
		if r, ok = req.(*wire.DeleteRequest); ok {
			r.Encode(e)
		}
	case wire.OpSetData:
		var r *wire.SetDataRequest
		if r, ok = req.(*wire.SetDataRequest); ok {
			r.Encode(e)
		}
	case wire.OpSetACL:
		var r *wire.SetACLRequest
		if r, ok = req.(*wire.SetACLRequest); ok {
			r.Encode(e)
		}
	case wire.OpCheck:
		var r *wire.CheckVersionRequest
		if r, ok = req.(*wire.CheckVersionRequest); ok {
			r.Encode(e)
		}
	case wire.OpDeleteContainer, wire.OpSync:
		var r *wire.PathRequest
		if r, ok = req.(*wire.PathRequest); ok {
			r.Encode(e)
		}
	case wire.OpReconfig:
		var r *wire.ReconfigRequest
		if r, ok = req.(*wire.ReconfigRequest); ok {
			r.Encode(e)
		}
	case wire.OpPing:
		var r *Touch
		if r, ok = req.(*Touch); ok {
			e.Int32(int32(len(r.Sessions)))
			for _, id := range r.Sessions {
				e.Int64(id)
			}
		}
	case wire.OpCreateSession:
		var r *tree.CreateSession
		if r, ok = req.(*tree.CreateSession); ok {
			e.Int64(r.ID)
			e.Int32(r.Timeout)
			e.Buffer(r.Passwd)
		}
	}
	if !ok {
		return errRequestType
	}
	return nil
}

// batchReader walks an encoded batch. Every read is bounds-checked; the
// first failure sticks and later reads return zero values.
type batchReader struct {
	b   []byte
	bad bool
}

func (r *batchReader) uvarint() uint64 {
	if r.bad {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *batchReader) varint() int64 {
	if r.bad {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

// take returns the next n bytes (aliasing the input).
func (r *batchReader) take(n uint64) []byte {
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *batchReader) str() string { return string(r.take(r.uvarint())) }

// count reads a count and checks that count*minSize bytes could follow.
func (r *batchReader) count(minSize uint64) int {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b))/minSize {
		r.bad = true
		return 0
	}
	return int(n)
}

// DecodeBatch decodes a batch written by EncodeBatch. It never panics and
// allocates no more than the input's size justifies; any malformed input
// gives ErrCorruptCommand. Decoded requests do not alias b.
func DecodeBatch(b []byte) ([]Entry, error) {
	r := &batchReader{b: b}
	n := r.count(minEntrySize)
	if r.bad {
		return nil, ErrCorruptCommand
	}
	entries := make([]Entry, n)
	for i := range entries {
		e := &entries[i]
		e.Origin = r.uvarint()
		e.Seq = r.uvarint()
		e.Txn.Time = r.varint()
		e.Txn.Session = r.varint()
		if na := r.count(2); na > 0 {
			e.Txn.Auth = make([]wire.ID, na)
			for j := range e.Txn.Auth {
				e.Txn.Auth[j] = wire.ID{Scheme: r.str(), ID: r.str()}
			}
		}
		e.Txn.Op, e.Txn.Req = r.op(0)
		if r.bad {
			return nil, ErrCorruptCommand
		}
	}
	if len(r.b) != 0 {
		return nil, ErrCorruptCommand
	}
	return entries, nil
}

// maxMultiDepth refuses multis nested in multis; the tree never accepts
// them, and the limit keeps hostile input from recursing deeply.
const maxMultiDepth = 1

// op reads varint(op) and its body.
func (r *batchReader) op(depth int) (wire.OpCode, any) {
	v := r.varint()
	if v < -1<<31 || v >= 1<<31 {
		r.bad = true
	}
	op := wire.OpCode(v)
	blen := r.uvarint()
	if r.bad || blen == 0 {
		return op, nil
	}
	body := r.take(blen - 1)
	if r.bad {
		return op, nil
	}
	if op == wire.OpMulti {
		if depth >= maxMultiDepth {
			r.bad = true
			return op, nil
		}
		mr := &batchReader{b: body}
		n := mr.count(2)
		m := &tree.MultiRequest{Ops: make([]tree.MultiOp, n)}
		for i := range m.Ops {
			m.Ops[i].Op, m.Ops[i].Req = mr.op(depth + 1)
		}
		if mr.bad || len(mr.b) != 0 {
			r.bad = true
			return op, nil
		}
		return op, m
	}
	req, ok := decodeRequest(op, body)
	if !ok {
		r.bad = true
	}
	return op, req
}

// decodeRequest decodes body as op's request, requiring it to use every
// byte.
func decodeRequest(op wire.OpCode, body []byte) (any, bool) {
	d := wire.NewDecoder(body)
	var req any
	switch op {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer:
		r := new(wire.CreateRequest)
		r.Decode(d)
		req = r
	case wire.OpCreateTTL:
		r := new(wire.CreateTTLRequest)
		r.Decode(d)
		req = r
	case wire.OpDelete:
		r := new(wire.DeleteRequest)
		r.Decode(d)
		req = r
	case wire.OpSetData:
		r := new(wire.SetDataRequest)
		r.Decode(d)
		req = r
	case wire.OpSetACL:
		r := new(wire.SetACLRequest)
		r.Decode(d)
		req = r
	case wire.OpCheck:
		r := new(wire.CheckVersionRequest)
		r.Decode(d)
		req = r
	case wire.OpDeleteContainer, wire.OpSync:
		r := new(wire.PathRequest)
		r.Decode(d)
		req = r
	case wire.OpReconfig:
		r := new(wire.ReconfigRequest)
		r.Decode(d)
		req = r
	case wire.OpPing:
		r := new(Touch)
		n := int(d.Int32())
		if n < 0 || n > d.Remaining()/8 {
			return nil, false
		}
		r.Sessions = make([]int64, n)
		for i := range r.Sessions {
			r.Sessions[i] = d.Int64()
		}
		req = r
	case wire.OpCreateSession:
		r := new(tree.CreateSession)
		r.ID = d.Int64()
		r.Timeout = d.Int32()
		r.Passwd = d.Buffer()
		req = r
	default:
		return nil, false
	}
	return req, d.Err() == nil && d.Remaining() == 0
}

// Touch carries sessions a follower's clients were active on (op
// wire.OpPing), so the leader, which owns expiry, keeps them alive. It
// changes no state of the tree.
type Touch struct {
	Sessions []int64
}
