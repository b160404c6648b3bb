package wire

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func checkBytes(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s:\n got % x\nwant % x", what, got, want)
	}
}

func TestEncoderPrimitives(t *testing.T) {
	tests := []struct {
		name string
		enc  func(e *Encoder)
		want []byte
	}{
		{"int32 zero", func(e *Encoder) { e.Int32(0) }, []byte{0, 0, 0, 0}},
		{"int32 neg", func(e *Encoder) { e.Int32(-1) }, []byte{0xff, 0xff, 0xff, 0xff}},
		{"int32 order", func(e *Encoder) { e.Int32(0x01020304) }, []byte{1, 2, 3, 4}},
		{"int64 order", func(e *Encoder) { e.Int64(0x0102030405060708) }, []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{"int64 min", func(e *Encoder) { e.Int64(math.MinInt64) }, []byte{0x80, 0, 0, 0, 0, 0, 0, 0}},
		{"bool true", func(e *Encoder) { e.Bool(true) }, []byte{1}},
		{"bool false", func(e *Encoder) { e.Bool(false) }, []byte{0}},
		{"string", func(e *Encoder) { e.String("ab") }, []byte{0, 0, 0, 2, 'a', 'b'}},
		{"empty string", func(e *Encoder) { e.String("") }, []byte{0, 0, 0, 0}},
		{"nil buffer", func(e *Encoder) { e.Buffer(nil) }, []byte{0xff, 0xff, 0xff, 0xff}},
		{"empty buffer", func(e *Encoder) { e.Buffer([]byte{}) }, []byte{0, 0, 0, 0}},
		{"buffer", func(e *Encoder) { e.Buffer([]byte{9}) }, []byte{0, 0, 0, 1, 9}},
		{"nil vector", func(e *Encoder) { e.StringVector(nil) }, []byte{0xff, 0xff, 0xff, 0xff}},
		{"empty vector", func(e *Encoder) { e.StringVector([]string{}) }, []byte{0, 0, 0, 0}},
		{"vector", func(e *Encoder) { e.StringVector([]string{"a", ""}) },
			[]byte{0, 0, 0, 2, 0, 0, 0, 1, 'a', 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e Encoder // the zero value must be usable
			tt.enc(&e)
			checkBytes(t, "encoding", e.Bytes(), tt.want)
			if e.Len() != len(tt.want) {
				t.Fatalf("Len = %d, want %d", e.Len(), len(tt.want))
			}
		})
	}
}

func TestEncoderResetAndFrame(t *testing.T) {
	e := NewEncoder(make([]byte, 10, 64))
	if e.Len() != 0 {
		t.Fatalf("NewEncoder should start empty, Len = %d", e.Len())
	}
	e.Int32(5)
	e.Reset()
	if e.Len() != 0 {
		t.Fatalf("Len after Reset = %d", e.Len())
	}
	e.Bool(true) // bytes before the frame must be left alone
	at := e.BeginFrame()
	e.Int32(7)
	e.String("x")
	e.EndFrame(at)
	checkBytes(t, "frame", e.Bytes(), []byte{1, 0, 0, 0, 9, 0, 0, 0, 7, 0, 0, 0, 1, 'x'})
	e.PatchInt32(0+1, -2)
	checkBytes(t, "patched", e.Bytes()[1:5], []byte{0xff, 0xff, 0xff, 0xfe})
}

func TestEncoderDoesNotAllocate(t *testing.T) {
	e := NewEncoder(make([]byte, 0, 4096))
	req := CreateRequest{Path: "/a/b", Data: []byte("data"), ACL: []ACL{{PermAll, ID{"world", "anyone"}}}}
	stat := Stat{Czxid: 1, Pzxid: 2}
	allocs := testing.AllocsPerRun(100, func() {
		e.Reset()
		at := e.BeginFrame()
		(&ReplyHeader{Xid: 1, Zxid: 2}).Encode(e)
		req.Encode(e)
		stat.Encode(e)
		e.EndFrame(at)
	})
	if allocs != 0 {
		t.Fatalf("encoding into a warm Encoder allocated %v times", allocs)
	}
}

func TestDecoderPrimitives(t *testing.T) {
	d := NewDecoder([]byte{
		0xff, 0xff, 0xff, 0xfe, // int32 -2
		0, 0, 0, 0, 0, 0, 1, 0, // int64 256
		2,                    // bool: any non-zero byte is true
		0, 0, 0, 2, 'h', 'i', // string
		0xff, 0xff, 0xff, 0xff, // null string
		0xff, 0xff, 0xff, 0xff, // null buffer
		0, 0, 0, 0, // empty buffer
		0, 0, 0, 1, 0, 0, 0, 1, 'z', // vector
		0xff, 0xff, 0xff, 0xff, // null vector
		0, 0, 0, 0, // empty vector
	})
	if v := d.Int32(); v != -2 {
		t.Errorf("Int32 = %d", v)
	}
	if v := d.Int64(); v != 256 {
		t.Errorf("Int64 = %d", v)
	}
	if v := d.Bool(); !v {
		t.Errorf("Bool = %v", v)
	}
	if v := d.String(); v != "hi" {
		t.Errorf("String = %q", v)
	}
	if v := d.String(); v != "" {
		t.Errorf("null String = %q", v)
	}
	if v := d.Buffer(); v != nil {
		t.Errorf("null Buffer = %v", v)
	}
	if v := d.Buffer(); v == nil || len(v) != 0 {
		t.Errorf("empty Buffer = %#v, want empty non-nil", v)
	}
	if v := d.StringVector(); len(v) != 1 || v[0] != "z" {
		t.Errorf("StringVector = %q", v)
	}
	if v := d.StringVector(); v != nil {
		t.Errorf("null StringVector = %#v", v)
	}
	if v := d.StringVector(); v == nil || len(v) != 0 {
		t.Errorf("empty StringVector = %#v, want empty non-nil", v)
	}
	if d.Err() != nil || d.Remaining() != 0 {
		t.Fatalf("Err = %v, Remaining = %d", d.Err(), d.Remaining())
	}
}

func TestDecoderBufferCopies(t *testing.T) {
	in := []byte{0, 0, 0, 2, 'a', 'b'}
	b := NewDecoder(in).Buffer()
	in[4] = 'X'
	if string(b) != "ab" {
		t.Fatalf("Buffer aliases its input: %q", b)
	}
}

func TestDecoderErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		dec  func(d *Decoder) any
		want error
	}{
		{"int32 short", []byte{0, 0, 0}, func(d *Decoder) any { return d.Int32() }, ErrShortBuffer},
		{"int64 short", []byte{0, 0, 0, 0, 0, 0, 0}, func(d *Decoder) any { return d.Int64() }, ErrShortBuffer},
		{"bool empty", nil, func(d *Decoder) any { return d.Bool() }, ErrShortBuffer},
		{"string short length", []byte{0, 0}, func(d *Decoder) any { return d.String() }, ErrShortBuffer},
		{"string past end", []byte{0, 0, 0, 5, 'a'}, func(d *Decoder) any { return d.String() }, ErrShortBuffer},
		{"string huge", []byte{0x7f, 0xff, 0xff, 0xff}, func(d *Decoder) any { return d.String() }, ErrShortBuffer},
		{"string negative", []byte{0xff, 0xff, 0xff, 0xfe}, func(d *Decoder) any { return d.String() }, ErrBadLength},
		{"string min int", []byte{0x80, 0, 0, 0}, func(d *Decoder) any { return d.String() }, ErrBadLength},
		{"buffer past end", []byte{0, 0, 0, 2, 1}, func(d *Decoder) any { return d.Buffer() }, ErrShortBuffer},
		{"buffer negative", []byte{0xff, 0xff, 0xff, 0xf0}, func(d *Decoder) any { return d.Buffer() }, ErrBadLength},
		{"vector negative", []byte{0xff, 0xff, 0xff, 0xfe}, func(d *Decoder) any { return d.StringVector() }, ErrBadLength},
		{"vector huge count", []byte{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0}, func(d *Decoder) any { return d.StringVector() }, ErrShortBuffer},
		// Two elements need at least 8 bytes; 7 remain.
		{"vector count over bytes", []byte{0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}, func(d *Decoder) any { return d.StringVector() }, ErrShortBuffer},
		{"vector element short", []byte{0, 0, 0, 1, 0, 0, 0, 3, 'a'}, func(d *Decoder) any { return d.StringVector() }, ErrShortBuffer},
		// Two ACLs need at least 24 bytes; 16 remain.
		{"acl count over bytes", append([]byte{0, 0, 0, 2}, make([]byte, 16)...), func(d *Decoder) any { return decodeACLs(d) }, ErrShortBuffer},
		{"acl negative", []byte{0xff, 0xff, 0xff, 0xfd}, func(d *Decoder) any { return decodeACLs(d) }, ErrBadLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder(tt.in)
			got := tt.dec(d)
			if !errors.Is(d.Err(), tt.want) {
				t.Fatalf("Err = %v, want %v", d.Err(), tt.want)
			}
			if !isZero(got) {
				t.Fatalf("failed decode returned %#v, want zero value", got)
			}
		})
	}
}

func isZero(v any) bool {
	switch v := v.(type) {
	case int32:
		return v == 0
	case int64:
		return v == 0
	case bool:
		return !v
	case string:
		return v == ""
	case []byte:
		return v == nil
	case []string:
		return v == nil
	case []ACL:
		return v == nil
	}
	return false
}

func TestDecoderStickyAndReset(t *testing.T) {
	d := NewDecoder([]byte{0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 9})
	_ = d.String()
	if d.Err() != ErrBadLength {
		t.Fatalf("Err = %v", d.Err())
	}
	off := d.Offset()
	if v := d.Int32(); v != 0 || d.Err() != ErrBadLength || d.Offset() != off {
		t.Fatalf("read after error: v=%d err=%v off=%d", v, d.Err(), d.Offset())
	}
	d.Reset([]byte{0, 0, 0, 9})
	if v := d.Int32(); v != 9 || d.Err() != nil {
		t.Fatalf("after Reset: v=%d err=%v", v, d.Err())
	}
}

func TestDecoderHugeCountsDoNotAllocate(t *testing.T) {
	// A lying count must be rejected before any slice is made for it.
	inputs := [][]byte{
		append([]byte{0x7f, 0xff, 0xff, 0xff}, make([]byte, 64)...),
		append([]byte{0x00, 0x10, 0x00, 0x00}, make([]byte, 64)...),
	}
	for _, in := range inputs {
		allocs := testing.AllocsPerRun(10, func() {
			d := NewDecoder(in)
			d.StringVector()
			d.Reset(in)
			decodeACLs(d)
			d.Reset(in)
			d.Buffer()
		})
		if allocs != 0 {
			t.Fatalf("rejecting count % x allocated %v times", in[:4], allocs)
		}
	}
}
