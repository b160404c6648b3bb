package zkformat

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash"
	"hash/adler32"
	"io"
	"slices"
)

// maxRecordBytes bounds one buffer or string read from a file; a corrupt
// length fails at the end of the file, since reads are chunked, rather
// than by allocating it. ZooKeeper's own bound (jute.maxbuffer) is 1 MB
// by default and rarely above a few.
const maxRecordBytes = 1 << 30

// streamReader reads jute from a stream, keeping the offset and the
// Adler-32 of everything read (ZooKeeper's CheckedInputStream), for
// snapshots, which are read as they stream.
type streamReader struct {
	r   *bufio.Reader
	off int64
	sum hash.Hash32
	err error
	tmp [8]byte
	scr []byte
}

func newStreamReader(r io.Reader) *streamReader {
	return &streamReader{r: bufio.NewReaderSize(r, 64<<10), sum: adler32.New(), scr: make([]byte, 4096)}
}

func (s *streamReader) fail(msg string, err error) {
	if s.err == nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = ErrTruncated
		}
		s.err = &Error{Offset: s.off, Msg: msg, Err: err}
	}
}

// full reads len(b) bytes into b through the checksum.
func (s *streamReader) full(b []byte) bool {
	if s.err != nil {
		return false
	}
	n, err := io.ReadFull(s.r, b)
	s.sum.Write(b[:n])
	s.off += int64(n)
	if err != nil {
		s.fail("", err)
		return false
	}
	return true
}

func (s *streamReader) int32() int32 {
	if !s.full(s.tmp[:4]) {
		return 0
	}
	return int32(binary.BigEndian.Uint32(s.tmp[:4]))
}

func (s *streamReader) int64() int64 {
	if !s.full(s.tmp[:8]) {
		return 0
	}
	return int64(binary.BigEndian.Uint64(s.tmp[:8]))
}

// length reads a length prefix: -1 (null) or 0..maxRecordBytes.
func (s *streamReader) length(what string) int {
	n := s.int32()
	if s.err == nil && (n < -1 || n > maxRecordBytes) {
		s.fail("", errors.New(what+": bad length"))
		return 0
	}
	return int(n)
}

// buffer reads a jute buffer into a fresh slice; null reads as nil.
func (s *streamReader) buffer() []byte {
	n := s.length("buffer")
	if s.err != nil || n < 0 {
		return nil
	}
	return s.bytesN(n)
}

// str reads a jute ustring; null reads as "".
func (s *streamReader) str() string {
	n := s.length("string")
	if s.err != nil || n <= 0 {
		return ""
	}
	if n <= len(s.scr) {
		if !s.full(s.scr[:n]) {
			return ""
		}
		return string(s.scr[:n])
	}
	return string(s.bytesN(n))
}

// bytesN reads n bytes into a fresh slice, in chunks, so that a corrupt
// length runs into the end of the file before it allocates much.
func (s *streamReader) bytesN(n int) []byte {
	const chunk = 64 << 10
	out := make([]byte, 0, min(n, chunk))
	for len(out) < n {
		k := min(n-len(out), chunk)
		out = slices.Grow(out, k)
		if !s.full(out[len(out) : len(out)+k]) {
			return nil
		}
		out = out[:len(out)+k]
	}
	return out
}

// atEOF reports whether the stream has ended exactly here.
func (s *streamReader) atEOF() bool {
	if s.err != nil {
		return false
	}
	_, err := s.r.Peek(1)
	return errors.Is(err, io.EOF)
}

// seal checks a seal (SnapStream.sealStream): the Adler-32 of everything
// before it, as a long, then the string "/".
func (s *streamReader) seal() {
	want := uint32(s.sum.Sum32())
	at := s.off
	got := s.int64()
	path := s.str()
	if s.err != nil {
		return
	}
	if got != int64(want) {
		s.err = &Error{Offset: at, Msg: "seal", Err: ErrChecksum}
		return
	}
	if path != "/" {
		s.err = &Error{Offset: at + 8, Msg: "seal does not end in \"/\""}
	}
}
