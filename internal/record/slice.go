package record

import "encoding/binary"

// Slice reads a record held in memory. The byte strings it returns alias
// the input.
type Slice struct {
	b   []byte
	bad bool
}

// NewSlice reads b.
func NewSlice(b []byte) *Slice { return &Slice{b: b} }

// Bad reports whether a read failed or Fail was called.
func (r *Slice) Bad() bool { return r.bad }

// Fail marks the record bad: a decoder found a value it cannot accept.
func (r *Slice) Fail() { r.bad = true }

// Rest is what has not been read.
func (r *Slice) Rest() []byte { return r.b }

// Uvarint reads an unsigned varint.
func (r *Slice) Uvarint() uint64 {
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

// Varint reads a signed (zig-zag) varint.
func (r *Slice) Varint() int64 {
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

// Byte reads one byte.
func (r *Slice) Byte() byte {
	if b := r.Take(1); len(b) == 1 {
		return b[0]
	}
	return 0
}

// Take reads the next n bytes.
func (r *Slice) Take(n uint64) []byte {
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// Bytes reads uvarint(len) and that many bytes.
func (r *Slice) Bytes() []byte { return r.Take(r.Uvarint()) }

// String reads uvarint(len) and that many bytes as a string.
func (r *Slice) String() string { return string(r.Bytes()) }

// Count reads a count of items of at least minSize bytes each and fails
// unless that many could follow, so a corrupt count cannot size an
// allocation.
func (r *Slice) Count(minSize uint64) int {
	n := r.Uvarint()
	if r.bad || n > uint64(len(r.b))/max(minSize, 1) {
		r.bad = true
		return 0
	}
	return int(n)
}
