package tree

import (
	"testing"

	"github.com/hutchzk/hutch/wire"
)

// TestSizeCounters checks the incremental counters against a walk of the
// tree after creates, data changes, deletes and a failed multi.
func TestSizeCounters(t *testing.T) {
	tr := New()
	walk := func() (size int64, eph int) {
		for p, n := range tr.nodes {
			size += int64(len(p) + len(n.data))
			if kindOf(n.st.owner) == kindEphemeral {
				eph++
			}
		}
		return
	}
	check := func(step string) {
		t.Helper()
		size, eph := walk()
		if tr.ApproximateDataSize() != size || tr.EphemeralCount() != eph {
			t.Fatalf("%s: counters size=%d ephemerals=%d, walk size=%d ephemerals=%d", step, tr.ApproximateDataSize(), tr.EphemeralCount(), size, eph)
		}
	}
	check("fresh")
	zxid := int64(0)
	apply := func(session int64, op wire.OpCode, req any) Result {
		zxid++
		return tr.Apply(&Txn{Zxid: zxid, Session: session, Op: op, Req: req})
	}
	const s = 0x100
	if r := apply(s, wire.OpCreateSession, &CreateSession{ID: s, Timeout: 30000, Passwd: make([]byte, 16)}); r.Err != nil {
		t.Fatal(r.Err)
	}
	apply(s, wire.OpCreate, &wire.CreateRequest{Path: "/a", Data: []byte("hello"), ACL: openACL})
	apply(s, wire.OpCreate, &wire.CreateRequest{Path: "/a/e", Data: []byte("x"), ACL: openACL, Flags: 1})
	check("creates")
	apply(s, wire.OpSetData, &wire.SetDataRequest{Path: "/a", Data: []byte("a longer value"), Version: -1})
	check("setData")
	// A multi whose second op fails is rolled back, counters included.
	apply(s, wire.OpMulti, &MultiRequest{Ops: []MultiOp{
		{Op: wire.OpSetData, Req: &wire.SetDataRequest{Path: "/a", Data: []byte("z"), Version: -1}},
		{Op: wire.OpCreate, Req: &wire.CreateRequest{Path: "/a/e2", Data: []byte("yy"), ACL: openACL, Flags: 1}},
		{Op: wire.OpDelete, Req: &wire.DeleteRequest{Path: "/missing", Version: -1}},
	}})
	check("rolled-back multi")
	apply(s, wire.OpCloseSession, nil)
	check("session closed")
	if tr.EphemeralCount() != 0 {
		t.Fatalf("ephemerals after close: %d", tr.EphemeralCount())
	}
}
