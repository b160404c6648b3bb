package tree

import (
	"reflect"
	"testing"

	"github.com/hutchzk/hutch/wire"
)

func TestNewMatchesFreshServer(t *testing.T) {
	tr := New()
	want := map[string]wire.Stat{
		"/":                 {Cversion: -1, NumChildren: 1},
		"/zookeeper":        {Cversion: -2, NumChildren: 2},
		"/zookeeper/quota":  {},
		"/zookeeper/config": {Aversion: -1},
	}
	for p, ws := range want {
		s, ok := tr.Stat(p)
		if !ok || s != ws {
			t.Errorf("stat %s = %+v, %v; want %+v", p, s, ok, ws)
		}
		data, _, err := tr.GetData(p, nil)
		if err != nil || data == nil || len(data) != 0 {
			t.Errorf("data %s = %v, %v; want empty non-nil", p, data, err)
		}
	}
	acl, _, _ := tr.GetACL("/zookeeper/config", nil)
	if !reflect.DeepEqual(acl, []wire.ACL{{Perms: wire.PermRead, ID: wire.ID{Scheme: "world", ID: "anyone"}}}) {
		t.Errorf("config acl = %+v", acl)
	}
	acl, _, _ = tr.GetACL("/", nil)
	if !reflect.DeepEqual(acl, open) {
		t.Errorf("root acl = %+v", acl)
	}
	if tr.NodeCount() != 5 {
		t.Errorf("NodeCount = %d, want 5 (ZooKeeper's zk_znode_count)", tr.NodeCount())
	}
	if n, _ := tr.AllChildrenNumber("/", nil); n != 3 {
		t.Errorf("AllChildrenNumber(/) = %d, want 3", n)
	}
	if tr.LastZxid() != 0 {
		t.Errorf("LastZxid = %d", tr.LastZxid())
	}
	checkInvariants(t, tr)
}

func TestCreateStat(t *testing.T) {
	h := newHarness(t)
	r := h.mustOK(wire.OpCreate2, &wire.CreateRequest{Path: "/a", Data: []byte("hello"), ACL: open})
	want := wire.Stat{Czxid: 1, Mzxid: 1, Pzxid: 1, Ctime: 1000, Mtime: 1000, DataLength: 5}
	if got := r.Resp.(*wire.Create2Response); got.Path != "/a" || got.Stat != want {
		t.Fatalf("create2 resp = %+v, want /a %+v", got, want)
	}
	// Root: one create (stored cversion 1) with two children → visible 0.
	if s := h.stat("/"); s.Cversion != 0 || s.Pzxid != 1 || s.NumChildren != 2 || s.Mzxid != 0 {
		t.Fatalf("root after create = %+v", s)
	}
	if h.tr.LastZxid() != 1 {
		t.Fatalf("LastZxid = %d", h.tr.LastZxid())
	}
	checkInvariants(t, h.tr)
}

func TestStatBookkeeping(t *testing.T) {
	h := newHarness(t)
	h.create("/p", 0)                                                             // zxid 1
	h.create("/p/c1", 0)                                                          // 2
	h.create("/p/c2", 0)                                                          // 3
	if s := h.stat("/p"); s.Cversion != 2 || s.Pzxid != 3 || s.NumChildren != 2 { // creates count
		t.Fatalf("after 2 creates: %+v", s)
	}
	h.mustOK(wire.OpDelete, &wire.DeleteRequest{Path: "/p/c1", Version: -1}) // 4
	if s := h.stat("/p"); s.Cversion != 3 || s.Pzxid != 4 || s.NumChildren != 1 || s.Mzxid != 1 {
		t.Fatalf("after delete: %+v", s)
	}
	// The sequence counter counts creates only: deletes do not advance it.
	if p := h.create("/p/s-", wire.ModePersistentSequential); p != "/p/s-0000000002" { // 5
		t.Fatalf("sequential = %s", p)
	}
	if s := h.stat("/p"); s.Cversion != 4 {
		t.Fatalf("visible cversion = %d, want 4", s.Cversion)
	}

	r := h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: "/p/c2", Data: []byte("xyz"), Version: 0}) // 6
	want := wire.Stat{Czxid: 3, Mzxid: 6, Pzxid: 3, Ctime: 3000, Mtime: 6000, Version: 1, DataLength: 3}
	if got := r.Resp.(*wire.StatResponse).Stat; got != want {
		t.Fatalf("setData stat = %+v, want %+v", got, want)
	}
	if s := h.stat("/p"); s.Mzxid != 1 || s.Pzxid != 5 {
		t.Fatalf("setData touched parent: %+v", s)
	}
	r = h.mustOK(wire.OpSetACL, &wire.SetACLRequest{Path: "/p/c2", ACL: open, Version: 0}) // 7
	want.Aversion = 1
	if got := r.Resp.(*wire.StatResponse).Stat; got != want {
		t.Fatalf("setACL stat = %+v, want %+v (mzxid unchanged)", got, want)
	}
	h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: "/p/c2", Data: nil, Version: -1}) // 8
	if d, s, _ := h.tr.GetData("/p/c2", nil); d != nil || s.DataLength != 0 || s.Version != 2 {
		t.Fatalf("nil data: %v %+v", d, s)
	}
	if h.mustOK(wire.OpCheck, &wire.CheckVersionRequest{Path: "/p/c2", Version: 2}).Resp != nil {
		t.Fatal("check has a response body")
	}
	checkInvariants(t, h.tr)
}

func TestSequentialNames(t *testing.T) {
	h := newHarness(t)
	h.create("/q", 0)
	steps := []struct {
		path  string
		flags int32
		want  string
	}{
		{"/q/job-", wire.ModePersistentSequential, "/q/job-0000000000"},
		{"/q/job-", wire.ModePersistentSequential, "/q/job-0000000001"},
		{"/q/", wire.ModePersistentSequential, "/q/0000000002"}, // trailing slash allowed
		{"/q/x", 0, "/q/x"},
		{"/q/job-", wire.ModePersistentSequential, "/q/job-0000000004"},
		{"/", wire.ModePersistentSequential, "/0000000001"}, // root: /q was create #0
	}
	for _, s := range steps {
		if got := h.create(s.path, s.flags); got != s.want {
			t.Fatalf("create %s = %s, want %s", s.path, got, s.want)
		}
	}
	// A failed create does not consume a sequence number.
	if r := h.apply(wire.OpCreate, &wire.CreateRequest{Path: "/q/a\x01-", ACL: open, Flags: 2}); r.Err != ErrBadArguments {
		t.Fatalf("invalid sequential = %v", r.Err)
	}
	if got := h.create("/q/job-", 2); got != "/q/job-0000000005" {
		t.Fatalf("after failure = %s", got)
	}
	checkInvariants(t, h.tr)
}

func TestCreateModes(t *testing.T) {
	h := newHarness(t)
	h.session_(0x1234)
	h.session = 0x1234
	cases := []struct {
		name      string
		op        wire.OpCode
		flags     int32
		ttl       int64
		wantOwner int64 // stored
		visible   int64
		err       error
	}{
		{"persistent", wire.OpCreate, 0, -1, 0, 0, nil},
		{"ephemeral", wire.OpCreate, 1, -1, 0x1234, 0x1234, nil},
		{"ephemeralSeq", wire.OpCreate2, 3, -1, 0x1234, 0x1234, nil},
		{"container", wire.OpCreateContainer, 4, -1, containerOwner, 0, nil},
		{"containerOpFlag0", wire.OpCreateContainer, 0, -1, containerOwner, 0, nil},
		{"createFlag4IsPersistent", wire.OpCreate, 4, -1, 0, 0, nil},
		{"ttl", wire.OpCreateTTL, 5, 5000, ttlOwner(5000), 0, nil},
		{"ttlSeq", wire.OpCreateTTL, 6, MaxTTL, ttlOwner(MaxTTL), 0, nil},
		{"ttlZero", wire.OpCreateTTL, 5, 0, 0, 0, ErrBadArguments},
		{"ttlTooBig", wire.OpCreateTTL, 5, MaxTTL + 1, 0, 0, ErrBadArguments},
		{"ttlFlagsViaCreate", wire.OpCreate, 5, -1, 0, 0, ErrBadArguments},
		{"createTTLNonTTLMode", wire.OpCreateTTL, 0, 100, 0, 0, ErrBadArguments},
		{"createTTLNonTTLModeNegative", wire.OpCreateTTL, 0, -1, 0, 0, ErrBadArguments},
		{"badFlags", wire.OpCreate, 7, -1, 0, 0, ErrBadArguments},
		{"negativeFlags", wire.OpCreate, -1, -1, 0, 0, ErrBadArguments},
	}
	for i, c := range cases {
		path := "/n" + string(rune('a'+i))
		var req any = &wire.CreateRequest{Path: path, ACL: open, Flags: c.flags}
		if c.op == wire.OpCreateTTL {
			req = &wire.CreateTTLRequest{Path: path, ACL: open, Flags: c.flags, TTL: c.ttl}
		}
		r := h.apply(c.op, req)
		if r.Err != c.err {
			t.Errorf("%s: err = %v, want %v", c.name, r.Err, c.err)
			continue
		}
		if c.err != nil {
			if r.Resp != nil || r.Events != nil {
				t.Errorf("%s: failed txn has resp/events", c.name)
			}
			continue
		}
		resp := r.Resp.(*wire.Create2Response)
		n := h.tr.nodes[resp.Path]
		if n.st.owner != c.wantOwner || resp.Stat.EphemeralOwner != c.visible {
			t.Errorf("%s: owner stored %x visible %x; want %x %x", c.name, n.st.owner, resp.Stat.EphemeralOwner, c.wantOwner, c.visible)
		}
	}
	checkInvariants(t, h.tr)
}

func TestEvents(t *testing.T) {
	h := newHarness(t)
	ev := func(typ wire.EventType, p string) Event { return Event{Type: typ, Path: p} }
	cases := []struct {
		op   wire.OpCode
		req  any
		want []Event
	}{
		{wire.OpCreate, &wire.CreateRequest{Path: "/a", ACL: open}, []Event{ev(wire.EventNodeCreated, "/a"), ev(wire.EventNodeChildrenChanged, "/")}},
		{wire.OpCreate, &wire.CreateRequest{Path: "/a/b", ACL: open}, []Event{ev(wire.EventNodeCreated, "/a/b"), ev(wire.EventNodeChildrenChanged, "/a")}},
		{wire.OpSetData, &wire.SetDataRequest{Path: "/a/b", Version: -1}, []Event{ev(wire.EventNodeDataChanged, "/a/b")}},
		{wire.OpSetACL, &wire.SetACLRequest{Path: "/a/b", ACL: open, Version: -1}, nil},
		{wire.OpCheck, &wire.CheckVersionRequest{Path: "/a/b", Version: -1}, nil},
		{wire.OpDelete, &wire.DeleteRequest{Path: "/a/b", Version: -1}, []Event{ev(wire.EventNodeDeleted, "/a/b"), ev(wire.EventNodeChildrenChanged, "/a")}},
		{wire.OpDelete, &wire.DeleteRequest{Path: "/a", Version: -1}, []Event{ev(wire.EventNodeDeleted, "/a"), ev(wire.EventNodeChildrenChanged, "/")}},
		{wire.OpDelete, &wire.DeleteRequest{Path: "/a", Version: -1}, nil}, // fails: NoNode
	}
	for i, c := range cases {
		r := h.apply(c.op, c.req)
		if !reflect.DeepEqual(withoutACL(r.Events), c.want) {
			t.Errorf("step %d: events = %v, want %v (err %v)", i, r.Events, c.want, r.Err)
		}
	}
}

func TestUnknownOpAndBadRequests(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		op  wire.OpCode
		req any
		err error
	}{
		{wire.OpGetData, &wire.PathRequest{Path: "/"}, ErrUnimplemented},
		{wire.OpReconfig, nil, ErrReconfigDisabled},
		{wire.OpCreate, &wire.SetDataRequest{}, ErrMarshallingError},
		{wire.OpCreate, (*wire.CreateRequest)(nil), ErrMarshallingError},
		{wire.OpMulti, nil, ErrMarshallingError},
		{wire.OpCreateSession, nil, ErrMarshallingError},
		{wire.OpDeleteContainer, nil, ErrMarshallingError},
	}
	for _, c := range cases {
		if r := h.apply(c.op, c.req); r.Err != c.err {
			t.Errorf("op %d: err = %v, want %v", c.op, r.Err, c.err)
		}
	}
	if h.tr.LastZxid() != int64(len(cases)) {
		t.Errorf("failed txns must still advance LastZxid: %d", h.tr.LastZxid())
	}
}

// TestErrorPrecedence pins the order in which PrepRequestProcessor checks
// things; each case has more than one problem and expects the first.
func TestErrorPrecedence(t *testing.T) {
	noCreate := []wire.ACL{{Perms: wire.PermAll &^ wire.PermCreate, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
	readOnly := []wire.ACL{{Perms: wire.PermRead, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
	noRead := []wire.ACL{{Perms: wire.PermAll &^ wire.PermRead, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
	setup := func(h *harness) {
		h.session_(7)
		h.create("/a", 0)
		h.auth = []wire.ID{superID} // to populate nodes we cannot write to
		h.createACL("/locked", 0, noCreate)
		h.createACL("/locked/child", 0, open)
		h.createACL("/ro", 0, readOnly)
		h.createACL("/ro/kid", 0, open)
		h.createACL("/nr", 0, noRead)
		h.auth = nil
		h.session = 7
		h.create("/eph", wire.ModeEphemeral)
		h.session = 0
		h.create("/full", 0)
		h.create("/full/x", 0)
	}
	create := func(path string, flags int32, acl []wire.ACL) *wire.CreateRequest {
		return &wire.CreateRequest{Path: path, ACL: acl, Flags: flags}
	}
	cases := []struct {
		name    string
		session int64
		op      wire.OpCode
		req     any
		err     error
	}{
		{"flags before session", 99, wire.OpCreate, create("bad", 9, nil), ErrBadArguments},
		{"session before path shape", 99, wire.OpCreate, create("bad", 1, nil), ErrSessionExpired},
		{"path shape before ACL", 0, wire.OpCreate, create("bad", 0, nil), ErrBadArguments},
		{"NUL before ACL", 0, wire.OpCreate, create("/a\x00", 0, nil), ErrBadArguments},
		{"ACL before parent", 0, wire.OpCreate, create("/nope/x", 0, nil), ErrInvalidACL},
		{"parent missing", 0, wire.OpCreate, create("/nope/x", 0, open), ErrNoNode},
		{"relative parent is NoNode", 0, wire.OpCreate, create("/a/../b", 0, open), ErrNoNode},
		{"trailing slash missing parent", 0, wire.OpCreate, create("/nope/", 0, open), ErrNoNode},
		{"NoAuth before NodeExists", 0, wire.OpCreate, create("/locked/child", 0, open), ErrNoAuth},
		{"NoAuth before invalid path", 0, wire.OpCreate, create("/locked/.", 0, open), ErrNoAuth},
		{"invalid path after parent", 0, wire.OpCreate, create("/a/", 0, open), ErrBadArguments},
		{"dot component", 0, wire.OpCreate, create("/.", 0, open), ErrBadArguments},
		{"control char", 0, wire.OpCreate, create("/a\x01", 0, open), ErrBadArguments},
		{"invalid before exists", 0, wire.OpCreate, create("/a/b\u0085", 0, open), ErrBadArguments},
		{"exists", 0, wire.OpCreate, create("/a", 0, open), ErrNodeExists},
		{"root exists", 0, wire.OpCreate, create("/", 0, open), ErrNodeExists},
		{"ephemeral parent", 0, wire.OpCreate, create("/eph/x", 0, open), ErrNoChildrenForEphemerals},
		{"world must be anyone", 0, wire.OpCreate, create("/b", 0, []wire.ACL{{Perms: 31, ID: wire.ID{Scheme: "world", ID: "someone"}}}), ErrInvalidACL},
		{"ephemeral unknown session", 99, wire.OpCreate, create("/b", 1, open), ErrSessionExpired},

		{"delete root", 0, wire.OpDelete, &wire.DeleteRequest{Path: "/", Version: -1}, ErrBadArguments},
		{"delete /zookeeper", 0, wire.OpDelete, &wire.DeleteRequest{Path: "/zookeeper", Version: -1}, ErrBadArguments},
		{"delete /zookeeper/config", 0, wire.OpDelete, &wire.DeleteRequest{Path: "/zookeeper/config", Version: -1}, ErrBadArguments},
		{"delete empty", 0, wire.OpDelete, &wire.DeleteRequest{Path: "", Version: -1}, ErrBadArguments},
		{"delete relative", 0, wire.OpDelete, &wire.DeleteRequest{Path: "a", Version: -1}, ErrBadArguments},
		{"delete trailing slash", 0, wire.OpDelete, &wire.DeleteRequest{Path: "/a/", Version: -1}, ErrNoNode},
		{"delete parent missing", 0, wire.OpDelete, &wire.DeleteRequest{Path: "/nope/x", Version: 5}, ErrNoNode},
		{"delete NoAuth before NoNode", 0, wire.OpDelete, &wire.DeleteRequest{Path: "/ro/missing", Version: -1}, ErrNoAuth},
		{"delete NoAuth", 0, wire.OpDelete, &wire.DeleteRequest{Path: "/ro/kid", Version: -1}, ErrNoAuth},
		{"delete BadVersion before NotEmpty", 0, wire.OpDelete, &wire.DeleteRequest{Path: "/full", Version: 3}, ErrBadVersion},
		{"delete NotEmpty", 0, wire.OpDelete, &wire.DeleteRequest{Path: "/full", Version: 0}, ErrNotEmpty},

		{"setData invalid path", 0, wire.OpSetData, &wire.SetDataRequest{Path: "/nope/", Version: -1}, ErrBadArguments},
		{"setData missing", 0, wire.OpSetData, &wire.SetDataRequest{Path: "/nope", Version: 9}, ErrNoNode},
		{"setData NoAuth before BadVersion", 0, wire.OpSetData, &wire.SetDataRequest{Path: "/ro", Version: 9}, ErrNoAuth},
		{"setData config is read-only", 0, wire.OpSetData, &wire.SetDataRequest{Path: "/zookeeper/config", Version: -1}, ErrNoAuth},
		{"setData BadVersion", 0, wire.OpSetData, &wire.SetDataRequest{Path: "/a", Version: 9}, ErrBadVersion},

		{"setACL invalid path", 0, wire.OpSetACL, &wire.SetACLRequest{Path: "//", ACL: nil, Version: -1}, ErrBadArguments},
		{"setACL ACL before NoNode", 0, wire.OpSetACL, &wire.SetACLRequest{Path: "/nope", ACL: nil, Version: -1}, ErrInvalidACL},
		{"setACL missing", 0, wire.OpSetACL, &wire.SetACLRequest{Path: "/nope", ACL: open, Version: -1}, ErrNoNode},
		{"setACL NoAuth", 0, wire.OpSetACL, &wire.SetACLRequest{Path: "/ro", ACL: open, Version: 7}, ErrNoAuth},
		{"setACL BadVersion", 0, wire.OpSetACL, &wire.SetACLRequest{Path: "/a", ACL: open, Version: 7}, ErrBadVersion},

		{"check invalid path", 0, wire.OpCheck, &wire.CheckVersionRequest{Path: "/a/", Version: 0}, ErrBadArguments},
		{"check missing", 0, wire.OpCheck, &wire.CheckVersionRequest{Path: "/nope", Version: 0}, ErrNoNode},
		{"check needs READ", 0, wire.OpCheck, &wire.CheckVersionRequest{Path: "/nr", Version: 9}, ErrNoAuth},
		{"check BadVersion", 0, wire.OpCheck, &wire.CheckVersionRequest{Path: "/a", Version: 9}, ErrBadVersion},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			setup(h)
			before := h.tr.Digest()
			h.session = c.session
			r := h.apply(c.op, c.req)
			if r.Err != c.err {
				t.Fatalf("err = %v, want %v", r.Err, c.err)
			}
			if h.tr.Digest() != before || r.Events != nil {
				t.Fatalf("failed txn changed the tree or fired events")
			}
		})
	}
}

func TestSuperBypassesACL(t *testing.T) {
	h := newHarness(t)
	none := []wire.ACL{{Perms: 0, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
	h.createACL("/x", 0, none) // perms 0 is accepted, as in ZooKeeper
	if r := h.apply(wire.OpCreate, &wire.CreateRequest{Path: "/x/y", ACL: open}); r.Err != ErrNoAuth {
		t.Fatalf("without super: %v", r.Err)
	}
	h.auth = []wire.ID{superID}
	h.mustOK(wire.OpCreate, &wire.CreateRequest{Path: "/x/y", ACL: open})
	h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: "/zookeeper/config", Version: -1})
	if _, _, err := h.tr.GetData("/x", []wire.ID{superID}); err != nil {
		t.Fatalf("super read: %v", err)
	}
}

func TestEphemeralsAndCloseSession(t *testing.T) {
	h := newHarness(t)
	h.session_(0x100)
	h.session_(0x200)
	h.create("/d", 0)
	h.session = 0x100
	h.create("/e1", wire.ModeEphemeral)
	h.create("/d/e2", wire.ModeEphemeral)
	h.create("/d/s-", wire.ModeEphemeralSequential)
	h.session = 0x200
	h.create("/d/other", wire.ModeEphemeral)

	got, _ := h.tr.GetEphemerals(0x100, "/")
	if want := []string{"/d/e2", "/d/s-0000000001", "/e1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("GetEphemerals = %v, want %v", got, want)
	}
	for prefix, want := range map[string][]string{
		"":       {"/d/e2", "/d/s-0000000001", "/e1"},
		"  / ":   {"/d/e2", "/d/s-0000000001", "/e1"},
		"/d":     {"/d/e2", "/d/s-0000000001"},
		"/d/s":   {"/d/s-0000000001"},
		"/e":     {"/e1"},
		" /d":    {}, // the filter uses the untrimmed prefix
		"/zzz":   {},
		"/d\xff": {},
	} {
		if got, err := h.tr.GetEphemerals(0x100, prefix); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("GetEphemerals(%q) = %v, %v; want %v", prefix, got, err, want)
		}
	}
	if got, _ := h.tr.GetEphemerals(0x999, "/"); got == nil || len(got) != 0 {
		t.Errorf("unknown session: %v", got)
	}

	h.session = 0x100
	r := h.mustOK(wire.OpCloseSession, nil)
	zx := h.zxid
	want := []Event{
		{Type: wire.EventNodeDeleted, Path: "/d/e2"}, {Type: wire.EventNodeChildrenChanged, Path: "/d"},
		{Type: wire.EventNodeDeleted, Path: "/d/s-0000000001"}, {Type: wire.EventNodeChildrenChanged, Path: "/d"},
		{Type: wire.EventNodeDeleted, Path: "/e1"}, {Type: wire.EventNodeChildrenChanged, Path: "/"},
	}
	if !reflect.DeepEqual(withoutACL(r.Events), want) {
		t.Fatalf("close events = %v", r.Events)
	}
	if s := h.stat("/d"); s.NumChildren != 1 || s.Pzxid != zx || s.Cversion != 5 {
		t.Fatalf("/d after close: %+v", s)
	}
	if _, _, ok := h.tr.Session(0x100); ok {
		t.Fatal("session still registered")
	}
	if ids := h.tr.Sessions(); !reflect.DeepEqual(ids, []int64{0x200}) {
		t.Fatalf("Sessions = %v", ids)
	}
	if to, pw, ok := h.tr.Session(0x200); !ok || to != 30000 || string(pw) != "pw" {
		t.Fatalf("Session(0x200) = %d %q %v", to, pw, ok)
	}
	// The closed session can no longer create ephemerals.
	if r := h.apply(wire.OpCreate, &wire.CreateRequest{Path: "/late", ACL: open, Flags: 1}); r.Err != ErrSessionExpired {
		t.Fatalf("ephemeral after close: %v", r.Err)
	}
	// Closing an unknown session is a successful no-op.
	h.session = 0x777
	if r := h.apply(wire.OpCloseSession, nil); r.Err != nil || r.Events != nil {
		t.Fatalf("close unknown: %+v", r)
	}
	checkInvariants(t, h.tr)
}

func TestCreateSessionRejectsImpossibleIDs(t *testing.T) {
	h := newHarness(t)
	for _, id := range []int64{0, containerOwner, ttlOwner(5), -1, extendedMask | 0x0000010000000000} {
		if r := h.apply(wire.OpCreateSession, &CreateSession{ID: id}); r.Err != ErrBadArguments {
			t.Errorf("session %x: %v", uint64(id), r.Err)
		}
	}
	for _, id := range []int64{1, 0x7f00000000000001, -0x0200000000000000} { // top byte 0xfe is fine
		if r := h.apply(wire.OpCreateSession, &CreateSession{ID: id}); r.Err != nil {
			t.Errorf("session %x: %v", uint64(id), r.Err)
		}
	}
}

// TestCreateSessionKeepsAnExistingSession: a createSession for an id in use
// (minted again by a server whose clock went back) is refused as an error
// txn that takes its zxid and changes nothing: the session keeps its
// timeout, password and ephemerals.
func TestCreateSessionKeepsAnExistingSession(t *testing.T) {
	const id = 0x0100000000000001
	h := newHarness(t)
	h.session_(id) // timeout 30000, password "pw"
	h.session = id
	h.create("/e", wire.ModeEphemeral)
	before := h.tr.Digest()

	r := h.apply(wire.OpCreateSession, &CreateSession{ID: id, Timeout: 4000, Passwd: []byte("stranger")})
	if r.Err != ErrSessionExists || r.Events != nil {
		t.Fatalf("second create of %#x: %+v, want ErrSessionExists", id, r)
	}
	if h.tr.LastZxid() != h.zxid {
		t.Fatalf("last zxid %d, want %d: the refusal takes its zxid", h.tr.LastZxid(), h.zxid)
	}
	if to, pw, ok := h.tr.Session(id); !ok || to != 30000 || string(pw) != "pw" {
		t.Fatalf("session after the refused create: timeout %d password %q (%v), want 30000 \"pw\"", to, pw, ok)
	}
	if got := h.tr.EphemeralsBySession()[id]; !reflect.DeepEqual(got, []string{"/e"}) {
		t.Fatalf("ephemerals after the refused create: %v", got)
	}
	if h.tr.Digest() != before {
		t.Fatal("the refused create changed the tree's digest")
	}
	checkInvariants(t, h.tr)
}

func TestContainersAndTTL(t *testing.T) {
	h := newHarness(t)                                                                            // time = zxid*1000
	h.create("/c", wire.ModeContainer)                                                            // 1
	h.mustOK(wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/t", ACL: open, Flags: 5, TTL: 500}) // 2, mtime 2000
	h.mustOK(wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/tk", ACL: open, Flags: 5, TTL: 1})  // 3
	h.create("/tk/kid", 0)                                                                        // 4
	h.create("/p", 0)                                                                             // 5

	if got := h.tr.ExpiryCandidates(2500); len(got) != 0 {
		t.Fatalf("at 2500: %v (new container and TTL not yet expired)", got)
	}
	if got := h.tr.ExpiryCandidates(2501); !reflect.DeepEqual(got, []string{"/t"}) {
		t.Fatalf("at 2501: %v", got)
	}
	h.create("/c/x", 0)                                                     // 6
	h.mustOK(wire.OpDelete, &wire.DeleteRequest{Path: "/c/x", Version: -1}) // 7
	if got := h.tr.ExpiryCandidates(2501); !reflect.DeepEqual(got, []string{"/c", "/t"}) {
		t.Fatalf("after container used: %v", got)
	}
	// setData refreshes mtime and so the TTL.
	h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: "/t", Version: -1}) // 8, mtime 8000
	if got := h.tr.ExpiryCandidates(8500); !reflect.DeepEqual(got, []string{"/c"}) {
		t.Fatalf("after touch: %v", got)
	}

	dc := func(p string) error { return h.apply(wire.OpDeleteContainer, &wire.PathRequest{Path: p}).Err }
	if err := dc("/tk"); err != ErrNotEmpty {
		t.Fatalf("TTL with child: %v", err)
	}
	if err := dc("/p"); err != ErrBadVersion {
		t.Fatalf("persistent: %v", err)
	}
	if err := dc("/nope"); err != ErrNoNode {
		t.Fatalf("missing: %v", err)
	}
	if err := dc("/"); err != ErrBadArguments {
		t.Fatalf("root: %v", err)
	}
	r := h.apply(wire.OpDeleteContainer, &wire.PathRequest{Path: "/c"})
	if r.Err != nil || !reflect.DeepEqual(withoutACL(r.Events), []Event{{Type: wire.EventNodeDeleted, Path: "/c"}, {Type: wire.EventNodeChildrenChanged, Path: "/"}}) {
		t.Fatalf("delete container: %+v", r)
	}
	if err := dc("/t"); err != nil {
		t.Fatalf("delete ttl: %v", err)
	}
	// Unlike ZooKeeper, the TTL is checked again by the transaction's own
	// time: a delete decided early (by a fast clock, or twice) is refused.
	h.mustOK(wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/t5", ACL: open, Flags: 5, TTL: 5000})
	for i := 0; ; i++ {
		_, st, _ := h.tr.GetData("/t5", nil)
		err := dc("/t5")
		due := h.zxid*1000-st.Mtime > 5000
		if due && err != nil || !due && err != ErrBadVersion {
			t.Fatalf("delete of a TTL node %dms old: %v", h.zxid*1000-st.Mtime, err)
		}
		if due {
			break
		}
		if i > 10 {
			t.Fatal("the TTL node never came due")
		}
	}
	checkInvariants(t, h.tr)
}

// TestDeleteContainerRechecksUse: the leader scans for empty containers
// that have had a child and proposes their deletion; if the container is
// deleted and created again before that delete applies, the new container
// (cversion 0, never used) stays, as ZooKeeper's scan would leave it. The
// same delete applied to the container the scan saw removes it.
func TestDeleteContainerRechecksUse(t *testing.T) {
	h := newHarness(t)
	h.create("/c", wire.ModeContainer)
	h.create("/c/x", 0)
	h.mustOK(wire.OpDelete, &wire.DeleteRequest{Path: "/c/x", Version: -1})
	if got := h.tr.ExpiryCandidates(h.zxid * 1000); !reflect.DeepEqual(got, []string{"/c"}) {
		t.Fatalf("candidates %v, want [/c]", got)
	}
	// Between the scan and the apply a client deletes and re-creates it.
	h.mustOK(wire.OpDelete, &wire.DeleteRequest{Path: "/c", Version: -1})
	h.create("/c", wire.ModeContainer)
	created := h.stat("/c").Czxid

	if r := h.apply(wire.OpDeleteContainer, &wire.PathRequest{Path: "/c"}); r.Err != ErrBadVersion || r.Events != nil {
		t.Fatalf("delete of a never-used container: %+v, want ErrBadVersion", r)
	}
	if st := h.stat("/c"); st.Czxid != created {
		t.Fatalf("/c czxid %d, want %d", st.Czxid, created)
	}
	// Once it has had a child it goes.
	h.create("/c/y", 0)
	h.mustOK(wire.OpDelete, &wire.DeleteRequest{Path: "/c/y", Version: -1})
	if r := h.apply(wire.OpDeleteContainer, &wire.PathRequest{Path: "/c"}); r.Err != nil {
		t.Fatalf("delete of a used, empty container: %v", r.Err)
	}
	if _, ok := h.tr.Stat("/c"); ok {
		t.Fatal("used, empty container still there")
	}
	checkInvariants(t, h.tr)
}
