package tree

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/hutchzk/hutch/wire"
)

func cr(path string, flags int32) *wire.CreateRequest {
	return &wire.CreateRequest{Path: path, Data: []byte("v"), ACL: open, Flags: flags}
}

func TestMultiSuccess(t *testing.T) {
	h := newHarness(t)
	h.create("/base", 0) // zxid 1
	r := h.mustOK(wire.OpMulti, &MultiRequest{Ops: []MultiOp{
		{wire.OpCreate, cr("/base/a", 0)},
		{wire.OpSetData, &wire.SetDataRequest{Path: "/base/a", Data: []byte("new"), Version: 0}}, // sees the create
		{wire.OpCreate2, cr("/base/s-", wire.ModePersistentSequential)},
		{wire.OpCheck, &wire.CheckVersionRequest{Path: "/base/a", Version: 1}},
		{wire.OpDelete, &wire.DeleteRequest{Path: "/base/s-0000000001", Version: 0}},
		{wire.OpCreate, cr("/base/s-", wire.ModePersistentSequential)},
	}})
	if r.Err != nil {
		t.Fatalf("err %v", r.Err)
	}
	const zx = 2
	st := func(czxid int64, version int32, dlen int32) wire.Stat {
		return wire.Stat{Czxid: czxid, Mzxid: zx, Pzxid: czxid, Ctime: czxid * 1000, Mtime: zx * 1000, Version: version, DataLength: dlen}
	}
	want := []OpResult{
		{Op: wire.OpCreate, Resp: &wire.Create2Response{Path: "/base/a", Stat: st(zx, 0, 1)}},
		{Op: wire.OpSetData, Resp: &wire.StatResponse{Stat: st(zx, 1, 3)}},
		{Op: wire.OpCreate, Resp: &wire.Create2Response{Path: "/base/s-0000000001", Stat: st(zx, 0, 1)}}, // create2 in a multi answers as create
		{Op: wire.OpCheck},
		{Op: wire.OpDelete},
		{Op: wire.OpCreate, Resp: &wire.Create2Response{Path: "/base/s-0000000002", Stat: st(zx, 0, 1)}},
	}
	if !reflect.DeepEqual(r.Multi, want) {
		for i := range r.Multi {
			t.Logf("%d: %+v %+v", i, r.Multi[i], r.Multi[i].Resp)
		}
		t.Fatalf("multi results differ")
	}
	wantEv := []Event{
		{Type: wire.EventNodeCreated, Path: "/base/a"}, {Type: wire.EventNodeChildrenChanged, Path: "/base"},
		{Type: wire.EventNodeDataChanged, Path: "/base/a"},
		{Type: wire.EventNodeCreated, Path: "/base/s-0000000001"}, {Type: wire.EventNodeChildrenChanged, Path: "/base"},
		{Type: wire.EventNodeDeleted, Path: "/base/s-0000000001"}, {Type: wire.EventNodeChildrenChanged, Path: "/base"},
		{Type: wire.EventNodeCreated, Path: "/base/s-0000000002"}, {Type: wire.EventNodeChildrenChanged, Path: "/base"},
	}
	if !reflect.DeepEqual(withoutACL(r.Events), wantEv) {
		t.Fatalf("events = %v", r.Events)
	}
	if s := h.stat("/base"); s.Cversion != 4 || s.NumChildren != 2 || s.Pzxid != zx {
		t.Fatalf("/base = %+v", s)
	}
	if h.tr.LastZxid() != zx {
		t.Fatalf("LastZxid %d", h.tr.LastZxid())
	}
	// An empty multi succeeds with no results.
	if r := h.mustOK(wire.OpMulti, &MultiRequest{}); len(r.Multi) != 0 || r.Events != nil {
		t.Fatalf("empty multi: %+v", r)
	}
	checkInvariants(t, h.tr)
}

func TestMultiFailureRollsBack(t *testing.T) {
	h := newHarness(t)
	h.session_(5)
	h.create("/base", 0)
	h.create("/base/keep", 0)
	h.create("/base/seq-", wire.ModePersistentSequential)
	digest := h.tr.Digest()
	snap := snapshotBytes(t, h.tr)
	count := h.tr.NodeCount()

	h.session = 5
	ops := []MultiOp{
		{wire.OpCreate, cr("/base/new", 0)},
		{wire.OpCreate, cr("/base/new/deep", 0)},
		{wire.OpCreate, cr("/base/eph", wire.ModeEphemeral)},
		{wire.OpCreateContainer, cr("/base/ctr", wire.ModeContainer)},
		{wire.OpCreate, cr("/base/seq-", wire.ModePersistentSequential)},
		{wire.OpSetData, &wire.SetDataRequest{Path: "/base/keep", Data: []byte("changed"), Version: -1}},
		{wire.OpDelete, &wire.DeleteRequest{Path: "/base/new/deep", Version: -1}},
		{wire.OpDelete, &wire.DeleteRequest{Path: "/base/seq-0000000001", Version: -1}},
		{wire.OpCheck, &wire.CheckVersionRequest{Path: "/base/keep", Version: 0}}, // version is 1 now: fails
		{wire.OpCreate, cr("/never", 0)},
		{wire.OpDelete, &wire.DeleteRequest{Path: "/nope", Version: -1}},
	}
	r := h.apply(wire.OpMulti, &MultiRequest{Ops: ops})
	if r.Err != nil {
		t.Fatalf("Result.Err = %v; a failed multi reports OK in the header", r.Err)
	}
	if r.MultiErr() != ErrBadVersion {
		t.Fatalf("MultiErr = %v", r.MultiErr())
	}
	if r.Events != nil {
		t.Fatalf("failed multi fired %v", r.Events)
	}
	for i, o := range r.Multi {
		var want OpResult
		switch {
		case i < 8:
			want = OpResult{Op: wire.OpError}
		case i == 8:
			want = OpResult{Op: wire.OpError, Err: ErrBadVersion}
		default:
			want = OpResult{Op: wire.OpError, Err: ErrRuntimeInconsistency}
		}
		if o != want {
			t.Errorf("result %d = %+v, want %+v", i, o, want)
		}
	}
	if len(r.Multi) != len(ops) {
		t.Fatalf("%d results for %d ops", len(r.Multi), len(ops))
	}
	if h.tr.Digest() != digest || h.tr.NodeCount() != count {
		t.Fatal("rollback left the tree changed")
	}
	if !bytes.Equal(snapshotBytes(t, h.tr)[:], snapWithZxid(t, snap, h.tr)) {
		t.Fatal("snapshot differs after rollback")
	}
	if got, _ := h.tr.GetEphemerals(5, "/"); len(got) != 0 {
		t.Fatalf("ephemeral index not rolled back: %v", got)
	}
	if got := h.tr.ExpiryCandidates(1 << 40); len(got) != 0 {
		t.Fatalf("container index not rolled back: %v", got)
	}
	// The sequence counter was restored too.
	h.session = 0
	if p := h.create("/base/seq-", wire.ModePersistentSequential); p != "/base/seq-0000000002" {
		t.Fatalf("sequence after rollback = %s", p)
	}
	checkInvariants(t, h.tr)
}

// snapWithZxid re-snapshots a restored copy of old with tr's lastZxid, since a
// failed multi still advances the zxid.
func snapWithZxid(tb testing.TB, old []byte, tr *Tree) []byte {
	tb.Helper()
	rt, err := Restore(bytes.NewReader(old))
	if err != nil {
		tb.Fatal(err)
	}
	rt.lastZxid = tr.lastZxid
	return snapshotBytes(tb, rt)
}

func TestMultiFirstOpFails(t *testing.T) {
	h := newHarness(t)
	r := h.apply(wire.OpMulti, &MultiRequest{Ops: []MultiOp{
		{wire.OpCreate, cr("/a/b", 0)},
		{wire.OpCreate, cr("/a", 0)},
	}})
	want := []OpResult{{Op: wire.OpError, Err: ErrNoNode}, {Op: wire.OpError, Err: ErrRuntimeInconsistency}}
	if !reflect.DeepEqual(r.Multi, want) {
		t.Fatalf("results = %+v", r.Multi)
	}
}

func TestMultiNormalization(t *testing.T) {
	cases := []struct {
		name   string
		op     MultiOp
		wantOp wire.OpCode
		owner  int64
		err    error // whole-request error
		opErr  error
	}{
		{"create flag 4 becomes createContainer", MultiOp{wire.OpCreate, cr("/x", 4)}, wire.OpCreateContainer, containerOwner, nil, nil},
		{"create2 flag 4", MultiOp{wire.OpCreate2, cr("/x", 4)}, wire.OpCreateContainer, containerOwner, nil, nil},
		{"createContainer flag 0 becomes create", MultiOp{wire.OpCreateContainer, cr("/x", 0)}, wire.OpCreate, 0, nil, nil},
		{"create2 becomes create", MultiOp{wire.OpCreate2, cr("/x", 0)}, wire.OpCreate, 0, nil, nil},
		{"create TTL flags unreadable", MultiOp{wire.OpCreate, cr("/x", 5)}, 0, 0, ErrMarshallingError, nil},
		{"create bad flags unreadable", MultiOp{wire.OpCreate, cr("/x", 9)}, 0, 0, ErrMarshallingError, nil},
		{"createTTL non-TTL mode becomes create", MultiOp{wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/x", ACL: open, Flags: 0, TTL: 10}}, wire.OpCreate, 0, nil, nil},
		{"createTTL flag 4 becomes container", MultiOp{wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/x", ACL: open, Flags: 4, TTL: 10}}, wire.OpCreateContainer, containerOwner, nil, nil},
		{"createTTL bad flags is BadArguments", MultiOp{wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/x", ACL: open, Flags: 9, TTL: 10}}, 0, 0, nil, ErrBadArguments},
		{"createTTL", MultiOp{wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/x", ACL: open, Flags: 5, TTL: 10}}, wire.OpCreateTTL, ttlOwner(10), nil, nil},
		{"read op unreadable", MultiOp{wire.OpGetData, &wire.PathWatchRequest{Path: "/"}}, 0, 0, ErrMarshallingError, nil},
		{"setACL not allowed", MultiOp{wire.OpSetACL, &wire.SetACLRequest{Path: "/", ACL: open, Version: -1}}, 0, 0, ErrMarshallingError, nil},
		{"wrong request type", MultiOp{wire.OpDelete, &wire.SetDataRequest{}}, 0, 0, ErrMarshallingError, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			r := h.apply(wire.OpMulti, &MultiRequest{Ops: []MultiOp{c.op}})
			if r.Err != c.err {
				t.Fatalf("err = %v, want %v", r.Err, c.err)
			}
			if c.err != nil {
				if r.Multi != nil {
					t.Fatal("results for an unreadable multi")
				}
				return
			}
			if r.MultiErr() != c.opErr {
				t.Fatalf("op err = %v, want %v", r.MultiErr(), c.opErr)
			}
			if c.opErr != nil {
				return
			}
			if r.Multi[0].Op != c.wantOp {
				t.Fatalf("op = %d, want %d", r.Multi[0].Op, c.wantOp)
			}
			if n := h.tr.nodes["/x"]; n.st.owner != c.owner {
				t.Fatalf("owner = %x, want %x", n.st.owner, c.owner)
			}
		})
	}
}
