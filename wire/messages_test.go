package wire

import (
	"errors"
	"reflect"
	"testing"
)

var (
	testStat = Stat{
		Czxid: 0x100000001, Mzxid: 0x100000002, Ctime: 1700000000000, Mtime: 1700000000001,
		Version: 3, Cversion: 4, Aversion: 5, EphemeralOwner: 0x7e57,
		DataLength: 6, NumChildren: 7, Pzxid: 0x100000003,
	}
	testACL = []ACL{
		{Perms: PermAll, ID: ID{Scheme: "world", ID: "anyone"}},
		{Perms: PermRead | PermAdmin, ID: ID{Scheme: "digest", ID: "u:hash="}},
	}
)

// messageCase pairs a populated message with a constructor for an empty one
// of the same type.
type messageCase struct {
	name string
	in   Message
	out  func() Message
	// optionalTail is the number of trailing bytes a decoder must accept the
	// absence of.
	optionalTail int
}

func allMessages() []messageCase {
	return []messageCase{
		{"Stat", &testStat, func() Message { return new(Stat) }, 0},
		{"ID", &ID{"ip", "10.0.0.1"}, func() Message { return new(ID) }, 0},
		{"ACL", &testACL[1], func() Message { return new(ACL) }, 0},
		{"ConnectRequest", &ConnectRequest{ProtocolVersion: 0, LastZxidSeen: 42, Timeout: 30000, SessionID: 0x1234, Passwd: make([]byte, 16), ReadOnly: true}, func() Message { return new(ConnectRequest) }, 1},
		{"ConnectRequest/nil passwd", &ConnectRequest{Timeout: 1}, func() Message { return new(ConnectRequest) }, 1},
		{"ConnectResponse", &ConnectResponse{ProtocolVersion: 0, Timeout: 4000, SessionID: -5, Passwd: []byte("0123456789abcdef"), ReadOnly: true}, func() Message { return new(ConnectResponse) }, 1},
		{"RequestHeader", &RequestHeader{Xid: 17, Type: OpGetChildren2}, func() Message { return new(RequestHeader) }, 0},
		{"ReplyHeader", &ReplyHeader{Xid: XidNotification, Zxid: -1, Err: CodeSessionExpired}, func() Message { return new(ReplyHeader) }, 0},
		{"CreateRequest", &CreateRequest{Path: "/a/b", Data: []byte("hello"), ACL: testACL, Flags: ModeEphemeralSequential}, func() Message { return new(CreateRequest) }, 0},
		{"CreateRequest/nulls", &CreateRequest{Path: "/", Flags: ModeContainer}, func() Message { return new(CreateRequest) }, 0},
		{"CreateRequest/empties", &CreateRequest{Path: "/x", Data: []byte{}, ACL: []ACL{}}, func() Message { return new(CreateRequest) }, 0},
		{"CreateTTLRequest", &CreateTTLRequest{Path: "/t", Data: []byte{1, 2}, ACL: testACL[:1], Flags: ModePersistentWithTTL, TTL: 60000}, func() Message { return new(CreateTTLRequest) }, 0},
		{"CreateResponse", &CreateResponse{Path: "/a/b0000000001"}, func() Message { return new(CreateResponse) }, 0},
		{"Create2Response", &Create2Response{Path: "/c", Stat: testStat}, func() Message { return new(Create2Response) }, 0},
		{"DeleteRequest", &DeleteRequest{Path: "/d", Version: -1}, func() Message { return new(DeleteRequest) }, 0},
		{"PathWatchRequest", &PathWatchRequest{Path: "/w", Watch: true}, func() Message { return new(PathWatchRequest) }, 0},
		{"StatResponse", &StatResponse{Stat: testStat}, func() Message { return new(StatResponse) }, 0},
		{"GetDataResponse", &GetDataResponse{Data: []byte("v"), Stat: testStat}, func() Message { return new(GetDataResponse) }, 0},
		{"GetDataResponse/null data", &GetDataResponse{Stat: testStat}, func() Message { return new(GetDataResponse) }, 0},
		{"SetDataRequest", &SetDataRequest{Path: "/s", Data: []byte("new"), Version: 9}, func() Message { return new(SetDataRequest) }, 0},
		{"PathRequest", &PathRequest{Path: "/p"}, func() Message { return new(PathRequest) }, 0},
		{"PathResponse", &PathResponse{Path: "/p"}, func() Message { return new(PathResponse) }, 0},
		{"GetACLResponse", &GetACLResponse{ACL: testACL, Stat: testStat}, func() Message { return new(GetACLResponse) }, 0},
		{"SetACLRequest", &SetACLRequest{Path: "/acl", ACL: testACL, Version: 2}, func() Message { return new(SetACLRequest) }, 0},
		{"GetChildrenResponse", &GetChildrenResponse{Children: []string{"a", "b", "ü"}}, func() Message { return new(GetChildrenResponse) }, 0},
		{"GetChildren2Response", &GetChildren2Response{Children: []string{"x"}, Stat: testStat}, func() Message { return new(GetChildren2Response) }, 0},
		{"CheckVersionRequest", &CheckVersionRequest{Path: "/cv", Version: 12}, func() Message { return new(CheckVersionRequest) }, 0},
		{"MultiHeader", &MultiHeader{Type: OpCreate, Done: false, Err: CodeOK}, func() Message { return new(MultiHeader) }, 0},
		{"MultiHeader/done", &MultiHeader{Type: -1, Done: true, Err: -1}, func() Message { return new(MultiHeader) }, 0},
		{"ErrorResult", &ErrorResult{Err: CodeRuntimeInconsistency}, func() Message { return new(ErrorResult) }, 0},
		{"AuthPacket", &AuthPacket{Type: 0, Scheme: "digest", Auth: []byte("user:pw")}, func() Message { return new(AuthPacket) }, 0},
		{"SetWatchesRequest", &SetWatchesRequest{RelativeZxid: 99, DataWatches: []string{"/a"}, ExistWatches: []string{}, ChildWatches: []string{"/b", "/c"}}, func() Message { return new(SetWatchesRequest) }, 0},
		{"SetWatches2Request", &SetWatches2Request{RelativeZxid: 7, DataWatches: []string{"/d"}, ExistWatches: []string{"/e"}, ChildWatches: []string{}, PersistentWatches: []string{"/p"}, PersistentRecursiveWatches: []string{"/r", "/"}}, func() Message { return new(SetWatches2Request) }, 0},
		{"AddWatchRequest", &AddWatchRequest{Path: "/aw", Mode: AddWatchModePersistentRecursive}, func() Message { return new(AddWatchRequest) }, 0},
		{"RemoveWatchesRequest", &RemoveWatchesRequest{Path: "/rw", Type: WatcherTypeAny}, func() Message { return new(RemoveWatchesRequest) }, 0},
		{"GetEphemeralsResponse", &GetEphemeralsResponse{Paths: []string{"/e1", "/e2"}}, func() Message { return new(GetEphemeralsResponse) }, 0},
		{"GetAllChildrenNumberResponse", &GetAllChildrenNumberResponse{Total: 1234}, func() Message { return new(GetAllChildrenNumberResponse) }, 0},
		{"ClientInfo", &ClientInfo{AuthScheme: "ip", User: "127.0.0.1"}, func() Message { return new(ClientInfo) }, 0},
		{"WhoAmIResponse", &WhoAmIResponse{Infos: []ClientInfo{{"ip", "127.0.0.1"}, {"digest", "bob"}}}, func() Message { return new(WhoAmIResponse) }, 0},
		{"WatcherEvent", &WatcherEvent{Type: EventNodeDataChanged, State: StateSyncConnected, Path: "/we"}, func() Message { return new(WatcherEvent) }, 0},
		{"ReconfigRequest", &ReconfigRequest{JoiningServers: []byte("server.4=h:2888:3888"), LeavingServers: []byte("1"), NewMembers: nil, CurConfigID: -1}, func() Message { return new(ReconfigRequest) }, 0},
	}
}

func encode(m Message) []byte {
	var e Encoder
	m.Encode(&e)
	return e.Bytes()
}

// decodeAll decodes b into out and fails the test unless every byte is used
// without error.
func decodeAll(t testing.TB, b []byte, out Message) {
	t.Helper()
	d := NewDecoder(b)
	out.Decode(d)
	if err := d.Err(); err != nil {
		t.Fatalf("decode %T: %v", out, err)
	}
	if d.Remaining() != 0 {
		t.Fatalf("decode %T left %d bytes", out, d.Remaining())
	}
}

func TestRoundTripAll(t *testing.T) {
	for _, tc := range allMessages() {
		t.Run(tc.name, func(t *testing.T) {
			b := encode(tc.in)
			out := tc.out()
			decodeAll(t, b, out)
			if !reflect.DeepEqual(tc.in, out) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", out, tc.in)
			}
			checkBytes(t, "re-encoding", encode(out), b)
		})
	}
}

func TestTruncatedMessagesFail(t *testing.T) {
	for _, tc := range allMessages() {
		t.Run(tc.name, func(t *testing.T) {
			b := encode(tc.in)
			for cut := 0; cut < len(b)-tc.optionalTail; cut++ {
				d := NewDecoder(b[:cut])
				tc.out().Decode(d)
				if !errors.Is(d.Err(), ErrShortBuffer) {
					t.Fatalf("decoding %d of %d bytes: Err = %v, want ErrShortBuffer", cut, len(b), d.Err())
				}
			}
		})
	}
}

// TestReusedMessageIsOverwritten guards against Decode leaving stale values
// behind when a message value is reused for the next request.
func TestReusedMessageIsOverwritten(t *testing.T) {
	var r ConnectRequest
	decodeAll(t, encode(&ConnectRequest{ReadOnly: true, Passwd: []byte{1}}), &r)
	b := encode(&ConnectRequest{Passwd: []byte{1}})
	decodeAll(t, b[:len(b)-1], &r)
	if r.ReadOnly {
		t.Fatal("ReadOnly survived a frame without the flag")
	}
}

func TestGoldenBytes(t *testing.T) {
	tests := []struct {
		name string
		msg  Message
		want []byte
	}{
		{
			name: "Stat",
			msg: &Stat{Czxid: 0x0102030405060708, Mzxid: 2, Ctime: 3, Mtime: 4, Version: 5, Cversion: 6,
				Aversion: -1, EphemeralOwner: 8, DataLength: 9, NumChildren: 10, Pzxid: 11},
			want: []byte{
				0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // czxid
				0, 0, 0, 0, 0, 0, 0, 2, // mzxid
				0, 0, 0, 0, 0, 0, 0, 3, // ctime
				0, 0, 0, 0, 0, 0, 0, 4, // mtime
				0, 0, 0, 5, // version
				0, 0, 0, 6, // cversion
				0xff, 0xff, 0xff, 0xff, // aversion
				0, 0, 0, 0, 0, 0, 0, 8, // ephemeralOwner
				0, 0, 0, 9, // dataLength
				0, 0, 0, 10, // numChildren
				0, 0, 0, 0, 0, 0, 0, 11, // pzxid
			},
		},
		{
			name: "ConnectRequest",
			msg:  &ConnectRequest{ProtocolVersion: 0, LastZxidSeen: 0x10, Timeout: 30000, SessionID: 0x0102030405060708, Passwd: []byte{0xaa, 0xbb}, ReadOnly: true},
			want: []byte{
				0, 0, 0, 0, // protocolVersion
				0, 0, 0, 0, 0, 0, 0, 0x10, // lastZxidSeen
				0, 0, 0x75, 0x30, // timeOut
				1, 2, 3, 4, 5, 6, 7, 8, // sessionId
				0, 0, 0, 2, 0xaa, 0xbb, // passwd
				1, // readOnly
			},
		},
		{
			name: "ConnectResponse",
			msg:  &ConnectResponse{ProtocolVersion: 0, Timeout: 4000, SessionID: 1, Passwd: []byte{7}},
			want: []byte{
				0, 0, 0, 0, // protocolVersion
				0, 0, 0x0f, 0xa0, // timeOut
				0, 0, 0, 0, 0, 0, 0, 1, // sessionId
				0, 0, 0, 1, 7, // passwd
				0, // readOnly
			},
		},
		{
			name: "ReplyHeader",
			msg:  &ReplyHeader{Xid: 7, Zxid: 0x100000002, Err: CodeNoNode},
			want: []byte{
				0, 0, 0, 7, // xid
				0, 0, 0, 1, 0, 0, 0, 2, // zxid
				0xff, 0xff, 0xff, 0x9b, // err -101
			},
		},
		{
			name: "RequestHeader",
			msg:  &RequestHeader{Xid: XidPing, Type: OpPing},
			want: []byte{0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 11},
		},
		{
			name: "CreateRequest",
			msg: &CreateRequest{Path: "/a", Data: []byte("hi"),
				ACL: []ACL{{Perms: PermAll, ID: ID{"world", "anyone"}}}, Flags: ModeEphemeral},
			want: []byte{
				0, 0, 0, 2, '/', 'a', // path
				0, 0, 0, 2, 'h', 'i', // data
				0, 0, 0, 1, // acl count
				0, 0, 0, 0x1f, // perms
				0, 0, 0, 5, 'w', 'o', 'r', 'l', 'd', // scheme
				0, 0, 0, 6, 'a', 'n', 'y', 'o', 'n', 'e', // id
				0, 0, 0, 1, // flags
			},
		},
		{
			name: "MultiHeader done",
			msg:  &MultiHeader{Type: -1, Done: true, Err: -1},
			want: []byte{0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff},
		},
		{
			name: "WatcherEvent",
			msg:  &WatcherEvent{Type: EventNodeDeleted, State: StateSyncConnected, Path: "/z"},
			want: []byte{0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 2, '/', 'z'},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkBytes(t, "encoding", encode(tt.msg), tt.want)
			out := reflect.New(reflect.TypeOf(tt.msg).Elem()).Interface().(Message)
			decodeAll(t, tt.want, out)
			if !reflect.DeepEqual(out, tt.msg) {
				t.Fatalf("decoded %#v, want %#v", out, tt.msg)
			}
		})
	}
}

func TestConnectWithoutReadOnly(t *testing.T) {
	// Frames from clients that predate the readOnly flag, go-zookeeper among
	// them, end right after passwd.
	req := []byte{
		0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0x10,
		0, 0, 0x75, 0x30,
		1, 2, 3, 4, 5, 6, 7, 8,
		0, 0, 0, 2, 0xaa, 0xbb,
	}
	var r ConnectRequest
	decodeAll(t, req, &r)
	want := ConnectRequest{LastZxidSeen: 0x10, Timeout: 30000, SessionID: 0x0102030405060708, Passwd: []byte{0xaa, 0xbb}}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("got %#v, want %#v", r, want)
	}

	resp := encode(&ConnectResponse{Timeout: 5, SessionID: 6, Passwd: []byte{}, ReadOnly: true})
	var cr ConnectResponse
	decodeAll(t, resp[:len(resp)-1], &cr)
	if cr.ReadOnly || cr.Timeout != 5 || cr.SessionID != 6 {
		t.Fatalf("got %#v", cr)
	}
}

func TestRepliesNeverSendNullLists(t *testing.T) {
	nullCount := []byte{0xff, 0xff, 0xff, 0xff}
	emptyCount := []byte{0, 0, 0, 0}
	tests := []struct {
		name string
		msg  Message
	}{
		{"GetChildrenResponse", &GetChildrenResponse{}},
		{"GetChildren2Response", &GetChildren2Response{}},
		{"GetEphemeralsResponse", &GetEphemeralsResponse{}},
		{"GetACLResponse", &GetACLResponse{}},
		{"WhoAmIResponse", &WhoAmIResponse{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkBytes(t, "list count", encode(tt.msg)[:4], emptyCount)
		})
	}
	// Requests keep jute's null so a nil slice round-trips as nil.
	checkBytes(t, "SetWatches data count", encode(&SetWatchesRequest{})[8:12], nullCount)
	checkBytes(t, "CreateRequest acl count", encode(&CreateRequest{})[8:12], nullCount)

	// Decoding a null list from a peer still works.
	var r GetChildren2Response
	decodeAll(t, append(append([]byte{}, nullCount...), encode(&testStat)...), &r)
	if r.Children != nil || r.Stat != testStat {
		t.Fatalf("got %#v", r)
	}
}

func TestDecodeWhoAmIErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"negative", []byte{0xff, 0xff, 0xff, 0xfe}, ErrBadLength},
		{"huge", []byte{0x7f, 0, 0, 0, 0, 0, 0, 0}, ErrShortBuffer},
		{"truncated element", []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0}, ErrShortBuffer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r WhoAmIResponse
			d := NewDecoder(tt.in)
			r.Decode(d)
			if !errors.Is(d.Err(), tt.want) || r.Infos != nil {
				t.Fatalf("Err = %v, Infos = %#v", d.Err(), r.Infos)
			}
		})
	}
}
