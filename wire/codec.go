package wire

import (
	"encoding/binary"
	"errors"
)

// Decoding errors. A Decoder keeps the first one it meets and returns zero
// values from then on, so callers check Err once after decoding a message.
var (
	// ErrShortBuffer means the input ended before a field, or a length or
	// count claimed more bytes than remain.
	ErrShortBuffer = errors.New("wire: short buffer")
	// ErrBadLength means a length or count was negative where jute allows
	// no such value.
	ErrBadLength = errors.New("wire: bad length")
)

// nullLength is how jute marks a null buffer, string or vector.
const nullLength = -1

// Encoder appends jute encodings to a byte slice it owns. The zero value is
// ready to use; Reset keeps the storage so one Encoder can serve a whole
// connection without reallocating.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an Encoder that writes into dst's storage, starting
// empty.
func NewEncoder(dst []byte) *Encoder {
	return &Encoder{buf: dst[:0]}
}

// Bytes returns the encoded bytes. They alias the Encoder's storage and are
// only valid until the next Reset.
func (e *Encoder) Bytes() []byte { return e.buf }

// Len returns the number of bytes encoded so far.
func (e *Encoder) Len() int { return len(e.buf) }

// Reset empties the Encoder, keeping its storage.
func (e *Encoder) Reset() { e.buf = e.buf[:0] }

// Int32 appends a big-endian jute int.
func (e *Encoder) Int32(v int32) {
	e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v))
}

// Int64 appends a big-endian jute long.
func (e *Encoder) Int64(v int64) {
	e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v))
}

// Bool appends a jute boolean, one byte.
func (e *Encoder) Bool(v bool) {
	var b byte
	if v {
		b = 1
	}
	e.buf = append(e.buf, b)
}

// String appends a jute ustring: a length then the bytes. Go strings cannot
// be null, so the length is never -1.
func (e *Encoder) String(s string) {
	e.Int32(int32(len(s)))
	e.buf = append(e.buf, s...)
}

// Buffer appends a jute buffer. A nil slice is written as length -1, which
// Java reads back as null; an empty non-nil slice is written as length 0.
func (e *Encoder) Buffer(b []byte) {
	if b == nil {
		e.Int32(nullLength)
		return
	}
	e.Int32(int32(len(b)))
	e.buf = append(e.buf, b...)
}

// StringVector appends a jute vector<ustring>. A nil slice is written as
// count -1 (Java null), an empty non-nil slice as count 0.
func (e *Encoder) StringVector(v []string) {
	if v == nil {
		e.Int32(nullLength)
		return
	}
	e.Int32(int32(len(v)))
	for _, s := range v {
		e.String(s)
	}
}

// stringList appends v as a vector that is never null. Java clients
// dereference reply lists without null checks, so replies must not carry -1.
func (e *Encoder) stringList(v []string) {
	e.Int32(int32(len(v)))
	for _, s := range v {
		e.String(s)
	}
}

// PatchInt32 overwrites the four bytes at offset at with v. It is meant for
// back-filling a length whose value is known only after encoding the body.
func (e *Encoder) PatchInt32(at int, v int32) {
	binary.BigEndian.PutUint32(e.buf[at:at+4], uint32(v))
}

// BeginFrame appends a placeholder for a frame length and returns its
// offset, to be handed to EndFrame once the body is encoded.
func (e *Encoder) BeginFrame() int {
	at := len(e.buf)
	e.buf = append(e.buf, 0, 0, 0, 0)
	return at
}

// EndFrame fills the placeholder written by BeginFrame at offset at with the
// number of bytes encoded after it.
func (e *Encoder) EndFrame(at int) {
	e.PatchInt32(at, int32(len(e.buf)-at-4))
}

// Decoder reads jute encodings from a byte slice. Errors are sticky: after
// the first one every method returns a zero value and Err reports it. No
// method panics or allocates more than the input could justify, whatever
// the input.
type Decoder struct {
	buf []byte
	off int
	err error
}

// NewDecoder returns a Decoder reading b.
func NewDecoder(b []byte) *Decoder {
	return &Decoder{buf: b}
}

// Reset makes the Decoder read b from the start and clears its error.
func (d *Decoder) Reset(b []byte) {
	d.buf, d.off, d.err = b, 0, nil
}

// Err returns the first error met, or nil.
func (d *Decoder) Err() error { return d.err }

// Remaining returns the number of unread bytes.
func (d *Decoder) Remaining() int { return len(d.buf) - d.off }

// Offset returns the number of bytes consumed so far.
func (d *Decoder) Offset() int { return d.off }

func (d *Decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// Fail records err as the decoding error unless one is already recorded;
// a record's Decode uses it for content that is well-formed jute but not
// a valid record.
func (d *Decoder) Fail(err error) { d.fail(err) }

// take returns the next n bytes, or nil after recording ErrShortBuffer.
func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.buf)-d.off {
		d.fail(ErrShortBuffer)
		return nil
	}
	b := d.buf[d.off : d.off+n : d.off+n]
	d.off += n
	return b
}

// Int32 reads a jute int.
func (d *Decoder) Int32() int32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// Int64 reads a jute long.
func (d *Decoder) Int64() int64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// Bool reads a jute boolean. Like Java's DataInput, any non-zero byte is
// true.
func (d *Decoder) Bool() bool {
	b := d.take(1)
	if b == nil {
		return false
	}
	return b[0] != 0
}

// length reads a length prefix and checks it against the remaining input.
// It returns -1 for jute's null marker, which every length-prefixed jute
// type accepts.
func (d *Decoder) length() int {
	n := d.Int32()
	if d.err != nil {
		return 0
	}
	switch {
	case n == nullLength:
		return nullLength
	case n < 0:
		d.fail(ErrBadLength)
		return 0
	case int(n) > d.Remaining():
		d.fail(ErrShortBuffer)
		return 0
	}
	return int(n)
}

// String reads a jute ustring. A null string (length -1) reads as "", as Go
// has no null string.
func (d *Decoder) String() string {
	n := d.length()
	if n <= 0 {
		return ""
	}
	return string(d.take(n))
}

// Buffer reads a jute buffer into a fresh slice, so the result stays valid
// after the input is reused. Length -1 reads as nil and length 0 as an empty
// non-nil slice, preserving Java's null/empty distinction.
func (d *Decoder) Buffer() []byte {
	n := d.length()
	if d.err != nil || n == nullLength {
		return nil
	}
	b := make([]byte, n)
	copy(b, d.take(n))
	return b
}

// vectorLen reads a vector count and bounds it by the remaining input,
// given that each element occupies at least minElem bytes. It returns -1 for
// a null vector.
func (d *Decoder) vectorLen(minElem int) int {
	n := d.Int32()
	if d.err != nil {
		return 0
	}
	switch {
	case n == nullLength:
		return nullLength
	case n < 0:
		d.fail(ErrBadLength)
		return 0
	case int64(n)*int64(minElem) > int64(d.Remaining()):
		d.fail(ErrShortBuffer)
		return 0
	}
	return int(n)
}

// StringVector reads a jute vector<ustring>. Count -1 reads as nil and
// count 0 as an empty non-nil slice.
func (d *Decoder) StringVector() []string {
	n := d.vectorLen(4)
	if d.err != nil || n == nullLength {
		return nil
	}
	v := make([]string, n)
	for i := range v {
		v[i] = d.String()
	}
	if d.err != nil {
		return nil
	}
	return v
}
