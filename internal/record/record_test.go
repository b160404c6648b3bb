package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc64"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

var errTest = errors.New("test: corrupt")

// sample is a record of every kind of field, as the formats write them.
func sample() []byte {
	b := binary.AppendVarint(nil, -42)
	b = binary.AppendUvarint(b, 1<<40)
	b = append(b, 7)
	b = binary.AppendUvarint(b, 5)
	b = append(b, "hello"...)
	b = binary.AppendUvarint(b, 0) // nullable: nil
	b = binary.AppendUvarint(b, 1) // nullable: empty
	long := strings.Repeat("x", 5000)
	b = binary.AppendUvarint(b, uint64(len(long)))
	return append(b, long...)
}

func TestSliceReadsEveryField(t *testing.T) {
	r := NewSlice(sample())
	if v := r.Varint(); v != -42 {
		t.Errorf("varint %d", v)
	}
	if v := r.Uvarint(); v != 1<<40 {
		t.Errorf("uvarint %d", v)
	}
	if v := r.Byte(); v != 7 {
		t.Errorf("byte %d", v)
	}
	if v := r.String(); v != "hello" {
		t.Errorf("string %q", v)
	}
	r.Uvarint()
	r.Uvarint()
	if v := r.Bytes(); len(v) != 5000 {
		t.Errorf("bytes %d long", len(v))
	}
	if r.Bad() || len(r.Rest()) != 0 {
		t.Errorf("bad %v, %d bytes left", r.Bad(), len(r.Rest()))
	}
}

func TestSliceFailuresStick(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		read func(*Slice)
	}{
		{"truncated varint", []byte{0x80}, func(r *Slice) { r.Uvarint() }},
		{"empty byte", nil, func(r *Slice) { r.Byte() }},
		{"length past the end", binary.AppendUvarint(nil, 10), func(r *Slice) { r.Bytes() }},
		{"count past what could follow", append(binary.AppendUvarint(nil, 3), 1, 2, 3, 4, 5), func(r *Slice) { r.Count(2) }},
		{"huge count", binary.AppendUvarint(nil, 1<<62), func(r *Slice) { r.Count(0) }},
		{"caller's verdict", []byte{1}, func(r *Slice) { r.Fail() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewSlice(tc.in)
			tc.read(r)
			if !r.Bad() {
				t.Fatal("not bad")
			}
			rest := len(r.Rest())
			if r.Uvarint() != 0 || r.Byte() != 0 || r.Bytes() != nil || len(r.Rest()) != rest {
				t.Error("a read after the failure returned something or moved on")
			}
		})
	}
	if r := NewSlice(append(binary.AppendUvarint(nil, 2), 1, 2, 3, 4)); r.Count(2) != 2 || r.Bad() {
		t.Error("a count that fits was refused")
	}
}

func TestStreamReadsEveryFieldAndSumsThem(t *testing.T) {
	in := sample()
	// One byte at a time: a stream's reads must not depend on how its
	// source splits the bytes.
	s := NewStream(iotest.OneByteReader(bytes.NewReader(in)), errTest)
	if v := s.Varint(); v != -42 {
		t.Errorf("varint %d", v)
	}
	if v := s.Uvarint(); v != 1<<40 {
		t.Errorf("uvarint %d", v)
	}
	if v, err := s.ReadByte(); v != 7 || err != nil {
		t.Errorf("byte %d %v", v, err)
	}
	if v := s.String(10); v != "hello" {
		t.Errorf("string %q", v)
	}
	if v := s.NullableBytes(10); v != nil {
		t.Errorf("nil read back as %q", v)
	}
	if v := s.NullableBytes(10); v == nil || len(v) != 0 {
		t.Errorf("empty read back as %v", v)
	}
	if v := s.String(1 << 20); len(v) != 5000 {
		t.Errorf("long string %d long", len(v))
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	if want := crc64.Checksum(in, Table); s.Sum() != want {
		t.Errorf("sum %x, want %x", s.Sum(), want)
	}
	if _, err := s.ReadByte(); err != io.ErrUnexpectedEOF {
		t.Errorf("read past the end: %v", err)
	}
}

func TestStreamFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		read func(*Stream)
		want error
	}{
		{"end inside a varint", []byte{0x80}, func(s *Stream) { s.Uvarint() }, io.ErrUnexpectedEOF},
		{"end inside a string", append(binary.AppendUvarint(nil, 10), "abc"...), func(s *Stream) { s.String(100) }, io.ErrUnexpectedEOF},
		{"end inside a long string", append(binary.AppendUvarint(nil, 10000), "abc"...), func(s *Stream) { s.String(1 << 20) }, io.ErrUnexpectedEOF},
		{"string over its limit", append(binary.AppendUvarint(nil, 10), "0123456789"...), func(s *Stream) { s.String(9) }, errTest},
		{"bytes over their limit", append(binary.AppendUvarint(nil, 10), "0123456789"...), func(s *Stream) { s.Bytes(9) }, errTest},
		{"nullable over its limit", append(binary.AppendUvarint(nil, 11), "0123456789"...), func(s *Stream) { s.NullableBytes(9) }, errTest},
		{"int32 out of range", binary.AppendVarint(nil, 1<<31), func(s *Stream) { s.Int32() }, errTest},
		{"caller's verdict", []byte{1}, func(s *Stream) { s.Fail(errTest) }, errTest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStream(bytes.NewReader(tc.in), errTest)
			tc.read(s)
			if s.Err() != tc.want {
				t.Fatalf("err %v, want %v", s.Err(), tc.want)
			}
			if s.Uvarint() != 0 || s.Raw(1, 1) != nil || s.String(10) != "" || s.Err() != tc.want {
				t.Error("a read after the failure returned something or replaced the error")
			}
		})
	}
}

// TestStreamDoesNotAllocateWhatALengthClaims: a corrupt length of 1 GB on
// a short stream fails at its end having allocated one chunk, not 1 GB.
func TestStreamDoesNotAllocateWhatALengthClaims(t *testing.T) {
	in := append(binary.AppendUvarint(nil, 1<<30), "short"...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s := NewStream(bytes.NewReader(in), errTest)
	if s.Bytes(1<<30) != nil || s.Err() != io.ErrUnexpectedEOF {
		t.Fatalf("err %v", s.Err())
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("allocated %d bytes for a 5-byte stream", grew)
	}
}

// TestStreamLeavesTheRestToItsCaller: a stream over a large enough
// bufio.Reader reads through it, so what follows the records is still
// there for the caller (zkdb reads its header, then hands the reader to
// tree).
func TestStreamLeavesTheRestToItsCaller(t *testing.T) {
	in := append(binary.AppendUvarint(nil, 300), "rest"...)
	s := NewStream(bytes.NewReader(in), errTest)
	if s.Uvarint() != 300 {
		t.Fatal(s.Err())
	}
	rest, err := io.ReadAll(s.Reader())
	if string(rest) != "rest" || err != nil {
		t.Fatalf("rest %q %v", rest, err)
	}
}

// FuzzReaders reads the input as a script of fields, through both
// readers: neither may panic, both agree on the values while they
// succeed, and the stream's sum covers exactly the bytes it consumed.
func FuzzReaders(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, sample())
	f.Add([]byte{3, 3, 3}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, script, in []byte) {
		sl := NewSlice(in)
		st := NewStream(bytes.NewReader(in), errTest)
		for _, op := range script {
			switch op % 4 {
			case 0:
				if a, b := sl.Varint(), st.Varint(); !sl.Bad() && st.Err() == nil && a != b {
					t.Fatalf("varint %d and %d", a, b)
				}
			case 1:
				if a, b := sl.Uvarint(), st.Uvarint(); !sl.Bad() && st.Err() == nil && a != b {
					t.Fatalf("uvarint %d and %d", a, b)
				}
			case 2:
				a := sl.Byte()
				b, _ := st.ReadByte()
				if !sl.Bad() && st.Err() == nil && a != b {
					t.Fatalf("byte %d and %d", a, b)
				}
			case 3:
				if a, b := sl.String(), st.String(1<<16); !sl.Bad() && st.Err() == nil && a != b {
					t.Fatalf("string %q and %q", a, b)
				}
			}
			if sl.Bad() != (st.Err() != nil) {
				t.Fatalf("slice bad %v, stream %v", sl.Bad(), st.Err())
			}
		}
		if st.Err() == nil {
			used := len(in) - len(sl.Rest())
			if want := crc64.Checksum(in[:used], Table); st.Sum() != want {
				t.Fatalf("sum %x over %d bytes, want %x", st.Sum(), used, want)
			}
		}
	})
}
