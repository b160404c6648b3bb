package wire

import (
	"bufio"
	"bytes"
	"reflect"
	"testing"
)

// ptrMessage lets the fuzz helpers make a fresh zero T and decode into it.
type ptrMessage[T any] interface {
	*T
	Message
}

// seedMessages adds the encodings of msgs to the corpus together with
// damaged variants: each encoding cut short, and lengths replaced by -1, by
// a negative number and by a huge count.
func seedMessages[T any, P ptrMessage[T]](f *testing.F, msgs ...T) {
	f.Helper()
	for i := range msgs {
		b := encode(P(&msgs[i]))
		f.Add(b)
		if len(b) > 1 {
			f.Add(b[:len(b)/2])
			f.Add(b[:len(b)-1])
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{0x80, 0, 0, 0, 0x80, 0, 0, 0, 0x80, 0, 0, 0, 0x80, 0, 0, 0})
	f.Add(bytes.Repeat([]byte{0, 0, 0, 1}, 16))
}

// checkRoundTrip is the property every decoder must hold: decoding any
// input never panics, and a value that decoded cleanly survives re-encoding
// unchanged and re-encodes to the same bytes. norm, if set, maps a decoded
// value to the value its encoding is expected to decode to.
func checkRoundTrip[T any, P ptrMessage[T]](t *testing.T, in []byte, norm func(*T)) {
	var first T
	d := NewDecoder(in)
	P(&first).Decode(d)
	if d.Err() != nil {
		return
	}
	if d.Offset() > len(in) || d.Remaining() < 0 {
		t.Fatalf("decoder position out of range: off=%d rem=%d len=%d", d.Offset(), d.Remaining(), len(in))
	}
	if norm != nil {
		norm(&first)
	}
	b := encode(P(&first))
	var second T
	d2 := NewDecoder(b)
	P(&second).Decode(d2)
	if err := d2.Err(); err != nil {
		t.Fatalf("re-decoding %#v: %v", first, err)
	}
	if d2.Remaining() != 0 {
		t.Fatalf("re-decoding %#v left %d bytes", first, d2.Remaining())
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("round trip changed the value:\nfirst  %#v\nsecond %#v", first, second)
	}
	if b2 := encode(P(&second)); !bytes.Equal(b, b2) {
		t.Fatalf("encoding is not stable:\n% x\n% x", b, b2)
	}
}

func fuzzMessage[T any, P ptrMessage[T]](f *testing.F, norm func(*T), seeds ...T) {
	seedMessages[T, P](f, seeds...)
	f.Fuzz(func(t *testing.T, in []byte) {
		checkRoundTrip[T, P](t, in, norm)
	})
}

func FuzzConnectRequest(f *testing.F) {
	full := ConnectRequest{LastZxidSeen: 5, Timeout: 30000, SessionID: 9, Passwd: make([]byte, 16), ReadOnly: true}
	b := encode(&full)
	f.Add(b[:len(b)-1]) // an old client's frame, without readOnly
	fuzzMessage[ConnectRequest](f, nil, full, ConnectRequest{Timeout: 1})
}

func FuzzConnectResponse(f *testing.F) {
	fuzzMessage[ConnectResponse](f, nil, ConnectResponse{Timeout: 4000, SessionID: 3, Passwd: []byte("0123456789abcdef")})
}

func FuzzRequestHeader(f *testing.F) {
	fuzzMessage[RequestHeader](f, nil, RequestHeader{Xid: 1, Type: OpCreate}, RequestHeader{Xid: XidPing, Type: OpPing})
}

func FuzzReplyHeader(f *testing.F) {
	fuzzMessage[ReplyHeader](f, nil, ReplyHeader{Xid: 1, Zxid: 2, Err: CodeNoNode})
}

func FuzzCreateRequest(f *testing.F) {
	fuzzMessage[CreateRequest](f, nil,
		CreateRequest{Path: "/a", Data: []byte("x"), ACL: testACL, Flags: ModeEphemeral},
		CreateRequest{Path: "/b", ACL: []ACL{}},
	)
}

func FuzzCreateTTLRequest(f *testing.F) {
	fuzzMessage[CreateTTLRequest](f, nil,
		CreateTTLRequest{Path: "/t", Data: []byte{}, ACL: testACL[:1], Flags: ModePersistentWithTTL, TTL: 1000},
	)
}

func FuzzSetDataRequest(f *testing.F) {
	fuzzMessage[SetDataRequest](f, nil, SetDataRequest{Path: "/s", Data: []byte("v"), Version: -1}, SetDataRequest{Path: "/n"})
}

func FuzzSetACLRequest(f *testing.F) {
	fuzzMessage[SetACLRequest](f, nil, SetACLRequest{Path: "/s", ACL: testACL, Version: 3})
}

func FuzzSetWatches(f *testing.F) {
	fuzzMessage[SetWatchesRequest](f, nil,
		SetWatchesRequest{RelativeZxid: 1, DataWatches: []string{"/a"}, ExistWatches: []string{}, ChildWatches: []string{"/b", "/c"}},
	)
}

func FuzzSetWatches2(f *testing.F) {
	fuzzMessage[SetWatches2Request](f, nil,
		SetWatches2Request{RelativeZxid: 1, DataWatches: []string{"/a"}, ExistWatches: []string{},
			ChildWatches: []string{"/b"}, PersistentWatches: []string{"/p"}, PersistentRecursiveWatches: []string{"/"}},
		SetWatches2Request{},
	)
}

func FuzzMultiHeader(f *testing.F) {
	fuzzMessage[MultiHeader](f, nil, MultiHeader{Type: OpCheck}, MultiHeader{Type: -1, Done: true, Err: -1})
}

func FuzzAuthPacket(f *testing.F) {
	fuzzMessage[AuthPacket](f, nil, AuthPacket{Scheme: "digest", Auth: []byte("u:p")}, AuthPacket{Scheme: "ip"})
}

func FuzzPathWatchRequest(f *testing.F) {
	fuzzMessage[PathWatchRequest](f, nil, PathWatchRequest{Path: "/w", Watch: true})
}

func FuzzReconfigRequest(f *testing.F) {
	fuzzMessage[ReconfigRequest](f, nil, ReconfigRequest{JoiningServers: []byte("a"), LeavingServers: []byte("b"), CurConfigID: -1})
}

// Replies send null lists as empty ones, so a decoded nil is expected back
// as an empty slice.

func FuzzGetChildren2Response(f *testing.F) {
	fuzzMessage[GetChildren2Response](f, func(r *GetChildren2Response) {
		if r.Children == nil {
			r.Children = []string{}
		}
	}, GetChildren2Response{Children: []string{"a", "b"}, Stat: testStat})
}

func FuzzGetACLResponse(f *testing.F) {
	fuzzMessage[GetACLResponse](f, func(r *GetACLResponse) {
		if r.ACL == nil {
			r.ACL = []ACL{}
		}
	}, GetACLResponse{ACL: testACL, Stat: testStat})
}

func FuzzWhoAmIResponse(f *testing.F) {
	fuzzMessage[WhoAmIResponse](f, func(r *WhoAmIResponse) {
		if r.Infos == nil {
			r.Infos = []ClientInfo{}
		}
	}, WhoAmIResponse{Infos: []ClientInfo{{"ip", "::1"}}})
}

// FuzzReadFrame feeds arbitrary streams to ReadFrame: it must never panic or
// return a body over the limit, and every frame it accepts must survive
// being framed again by BeginFrame/EndFrame.
func FuzzReadFrame(f *testing.F) {
	var e Encoder
	at := e.BeginFrame()
	(&RequestHeader{Xid: 1, Type: OpGetData}).Encode(&e)
	(&PathWatchRequest{Path: "/a", Watch: true}).Encode(&e)
	e.EndFrame(at)
	at = e.BeginFrame()
	e.EndFrame(at)
	f.Add(e.Bytes(), 64)
	f.Add(e.Bytes()[:7], 64)
	f.Add([]byte("ruok"), DefaultMaxFrame)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, 64)
	f.Add([]byte{0, 0, 0, 8, 1, 2, 3}, 64)
	f.Add([]byte{0, 0, 0, 2, 1, 2}, 1)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 0 || max > 1<<16 {
			max &= 1<<16 - 1
		}
		r := bufio.NewReader(bytes.NewReader(in))
		buf := make([]byte, 0, 8)
		consumed := 0
		for {
			body, err := ReadFrame(r, max, buf)
			if err != nil {
				break
			}
			if len(body) > max {
				t.Fatalf("frame of %d bytes passed limit %d", len(body), max)
			}
			consumed += 4 + len(body)
			if consumed > len(in) {
				t.Fatalf("read %d bytes from %d of input", consumed, len(in))
			}
			var e Encoder
			at := e.BeginFrame()
			e.Buffer(body[:len(body):len(body)])
			e.EndFrame(at)
			again, err := ReadFrame(bufio.NewReader(bytes.NewReader(e.Bytes())), max+4, nil)
			if err != nil {
				t.Fatalf("re-reading a re-framed frame: %v", err)
			}
			if got := NewDecoder(again).Buffer(); !bytes.Equal(got, body) {
				t.Fatalf("re-framed body = % x, want % x", got, body)
			}
		}
	})
}
