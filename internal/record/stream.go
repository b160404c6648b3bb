package record

import (
	"bufio"
	"encoding/binary"
	"hash/crc64"
	"io"
	"math"
	"slices"
)

// Table is the CRC-64 (ECMA) table hutch's snapshots are sealed with.
var Table = crc64.MakeTable(crc64.ECMA)

// chunk is how far a read of a long byte string allocates ahead of the
// bytes that arrived: a corrupt length fails at the end of the stream,
// not by allocating what it claims.
const chunk = 64 << 10

// Stream reads records from a stream, keeping a CRC-64 of every byte it
// consumes. The first failure sticks; the end of the stream inside a
// record is io.ErrUnexpectedEOF.
type Stream struct {
	r       *bufio.Reader
	corrupt error
	sum     uint64
	err     error
	scratch []byte
}

// NewStream reads r through a 64 KB buffer (r itself when it is a
// bufio.Reader that large, so the caller can go on reading from it where
// the stream stopped). A value out of its bounds fails with corrupt, the
// format's own error.
func NewStream(r io.Reader, corrupt error) *Stream {
	return &Stream{r: bufio.NewReaderSize(r, chunk), corrupt: corrupt}
}

// Reader is the buffered reader under the stream.
func (s *Stream) Reader() *bufio.Reader { return s.r }

// Err is the first failure.
func (s *Stream) Err() error { return s.err }

// Sum is the CRC-64 of every byte read so far.
func (s *Stream) Sum() uint64 { return s.sum }

// Fail records err as the stream's failure unless one came before.
func (s *Stream) Fail(err error) {
	if s.err == nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		s.err = err
	}
}

// ReadByte reads one byte through the checksum (an io.ByteReader, for
// binary.ReadUvarint and for callers reading flags).
func (s *Stream) ReadByte() (byte, error) {
	if s.err != nil {
		return 0, s.err
	}
	b, err := s.r.ReadByte()
	if err != nil {
		s.Fail(err)
		return 0, s.err
	}
	s.sum = crc64.Update(s.sum, Table, []byte{b})
	return b, nil
}

// Uvarint reads an unsigned varint.
func (s *Stream) Uvarint() uint64 {
	if s.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(s)
	if err != nil {
		s.Fail(err)
		return 0
	}
	return v
}

// Varint reads a signed (zig-zag) varint.
func (s *Stream) Varint() int64 {
	if s.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(s)
	if err != nil {
		s.Fail(err)
		return 0
	}
	return v
}

// Int32 reads a varint that must fit 32 bits.
func (s *Stream) Int32() int32 {
	v := s.Varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		s.Fail(s.corrupt)
		return 0
	}
	return int32(v)
}

// Raw reads n bytes, at most limit, in bounded chunks.
func (s *Stream) Raw(n, limit uint64) []byte {
	if s.err != nil {
		return nil
	}
	if n > limit {
		s.Fail(s.corrupt)
		return nil
	}
	out := make([]byte, 0, min(n, chunk))
	for uint64(len(out)) < n {
		k := min(n-uint64(len(out)), chunk)
		out = slices.Grow(out, int(k))
		m, err := io.ReadFull(s.r, out[len(out):len(out)+int(k)])
		s.sum = crc64.Update(s.sum, Table, out[len(out):len(out)+m])
		out = out[:len(out)+m]
		if err != nil {
			s.Fail(err)
			return nil
		}
	}
	return out
}

// Bytes reads uvarint(len) and that many bytes, at most limit.
func (s *Stream) Bytes(limit uint64) []byte { return s.Raw(s.Uvarint(), limit) }

// NullableBytes reads a byte string written as uvarint(len+1), 0 for nil
// (nil and empty data differ on ZooKeeper's wire), at most limit bytes.
func (s *Stream) NullableBytes(limit uint64) []byte {
	n := s.Uvarint()
	if n == 0 || s.err != nil {
		return nil
	}
	return s.Raw(n-1, limit)
}

// String reads uvarint(len) and that many bytes, at most limit, as a
// string. Short strings, the usual names, cost one allocation: the
// string's own.
func (s *Stream) String(limit uint64) string {
	n := s.Uvarint()
	if s.err != nil {
		return ""
	}
	if n > 4096 {
		return string(s.Raw(n, limit))
	}
	if n > limit {
		s.Fail(s.corrupt)
		return ""
	}
	if s.scratch == nil {
		s.scratch = make([]byte, 4096)
	}
	buf := s.scratch[:n]
	if _, err := io.ReadFull(s.r, buf); err != nil {
		s.Fail(err)
		return ""
	}
	s.sum = crc64.Update(s.sum, Table, buf)
	return string(buf)
}
