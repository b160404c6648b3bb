package tree

import (
	"bytes"
	"testing"

	"github.com/hutchzk/hutch/wire"
)

var fuzzPaths = []string{
	"/", "/a", "/a/b", "/a/b/c", "/b", "/b/a", "/c", "/a/", "", "bad",
	"/zookeeper", "/zookeeper/x", "/zookeeper/config", "/a/s-0000000000",
	"/a/s-0000000001", "/0000000000", "/a/.", "/a\x00", "/\xff", "/a/b/",
	"/zookeeper/quota/a", "/zookeeper/quota/a/zookeeper_limits", "/zookeeper/quota/a/zookeeper_stats",
	"/zookeeper/quota/zookeeper_stats",
}

// fuzzQuotaData are values for quota nodes: limits, stats and garbage.
var fuzzQuotaData = []string{
	"count=2,bytes=-1=;byteHardLimit=-1;countHardLimit=-1",
	"count=-1,bytes=-1=;byteHardLimit=3;countHardLimit=2",
	"count=0,bytes=0", "count=5", "count", "",
}

var fuzzAuths = [][]wire.ID{nil, {aliceID}, {superID}, {localIP}, {bobID, localIP}}

var fuzzACLs = [][]wire.ACL{
	open,
	{{Perms: wire.PermAll, ID: aliceID}},
	{{Perms: wire.PermAll, ID: wire.ID{Scheme: "auth"}}},
	{{Perms: wire.PermRead, ID: wire.ID{Scheme: "world", ID: "anyone"}}},
	{{Perms: wire.PermAll, ID: wire.ID{Scheme: "ip", ID: "10.0.0.0/8"}}},
	nil,
	{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "nobody"}}},
}

var fuzzTTLs = []int64{-1, 0, 1, 1000, MaxTTL, MaxTTL + 1}

type fuzzSrc struct{ b []byte }

func (s *fuzzSrc) next() int {
	if len(s.b) == 0 {
		return 0
	}
	v := s.b[0]
	s.b = s.b[1:]
	return int(v)
}

func (s *fuzzSrc) pick(n int) int { return s.next() % n }

func (s *fuzzSrc) path() string { return fuzzPaths[s.pick(len(fuzzPaths))] }

func (s *fuzzSrc) subOp() (wire.OpCode, any) {
	path, data := s.path(), []byte{byte(s.next())}
	switch s.pick(5) {
	case 0:
		data = nil
	case 1:
		data = []byte(fuzzQuotaData[s.pick(len(fuzzQuotaData))])
	}
	version := int32(s.pick(4) - 1)
	flags := int32(s.pick(9) - 1)
	acl := fuzzACLs[s.pick(len(fuzzACLs))]
	switch s.pick(7) {
	case 0:
		return wire.OpCreate, &wire.CreateRequest{Path: path, Data: data, ACL: acl, Flags: flags}
	case 1:
		return wire.OpCreate2, &wire.CreateRequest{Path: path, Data: data, ACL: acl, Flags: flags}
	case 2:
		return wire.OpCreateContainer, &wire.CreateRequest{Path: path, Data: data, ACL: acl, Flags: flags}
	case 3:
		return wire.OpCreateTTL, &wire.CreateTTLRequest{Path: path, Data: data, ACL: acl, Flags: flags, TTL: fuzzTTLs[s.pick(len(fuzzTTLs))]}
	case 4:
		return wire.OpDelete, &wire.DeleteRequest{Path: path, Version: version}
	case 5:
		return wire.OpSetData, &wire.SetDataRequest{Path: path, Data: data, Version: version}
	default:
		return wire.OpCheck, &wire.CheckVersionRequest{Path: path, Version: version}
	}
}

// txn decodes one transaction; zxid and time advance monotonically.
func (s *fuzzSrc) txn(zxid int64) *Txn {
	txn := &Txn{Zxid: zxid, Time: zxid * 100, Session: int64(s.pick(4)), Auth: fuzzAuths[s.pick(len(fuzzAuths))]}
	switch s.pick(12) {
	case 0:
		txn.Op, txn.Req = wire.OpCreateSession, &CreateSession{ID: txn.Session, Timeout: 1000}
	case 1:
		txn.Op = wire.OpCloseSession
	case 2:
		txn.Op, txn.Req = wire.OpDeleteContainer, &wire.PathRequest{Path: s.path()}
	case 3:
		txn.Op = wire.OpSetACL
		txn.Req = &wire.SetACLRequest{Path: s.path(), ACL: fuzzACLs[s.pick(len(fuzzACLs))], Version: int32(s.pick(3) - 1)}
	case 4, 5:
		req := &MultiRequest{}
		for n := s.pick(5); n > 0; n-- {
			op, r := s.subOp()
			req.Ops = append(req.Ops, MultiOp{Op: op, Req: r})
		}
		txn.Op, txn.Req = wire.OpMulti, req
	default:
		txn.Op, txn.Req = s.subOp()
	}
	return txn
}

func runFuzz(tb testing.TB, data []byte) *Tree {
	tb.Helper()
	tr := New()
	src := &fuzzSrc{b: data}
	if src.pick(2) == 1 {
		tr.EnforceQuota()
	}
	for zxid := int64(1); len(src.b) > 0 && zxid < 400; zxid++ {
		txn := src.txn(zxid)
		before := tr.Digest()
		r := tr.Apply(txn)
		failed := r.Err != nil || r.MultiErr() != nil
		if failed && (tr.Digest() != before || r.Events != nil) {
			tb.Fatalf("txn %d (op %d) failed (%v/%v) but changed the tree or fired events", zxid, txn.Op, r.Err, r.MultiErr())
		}
		if txn.Op == wire.OpMulti && r.Err == nil {
			if len(r.Multi) != len(txn.Req.(*MultiRequest).Ops) {
				tb.Fatalf("multi result count %d", len(r.Multi))
			}
		}
		if tr.LastZxid() != zxid {
			tb.Fatalf("LastZxid %d != %d", tr.LastZxid(), zxid)
		}
		checkInvariants(tb, tr)
		// Reads must never panic, whatever the path or auth.
		p, auth := src.path(), fuzzAuths[src.pick(len(fuzzAuths))]
		tr.GetData(p, auth)
		tr.GetChildren(p, auth)
		tr.GetACL(p, auth)
		tr.Exists(p)
		tr.ExistsACL(p, auth)
		tr.AllChildrenNumber(p, auth)
		tr.GetEphemerals(txn.Session, p)
		tr.ExpiryCandidates(zxid * 100)
	}
	return tr
}

func FuzzApply(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 6, 0, 1, 0, 0, 0, 0, 0, 6, 0, 2, 0, 1, 0, 1, 0})
	f.Add(bytes.Repeat([]byte{7, 3, 1, 9, 4, 2, 5, 1, 0, 8, 6, 11}, 20))
	f.Add(bytes.Repeat([]byte{4, 2, 0, 3, 1, 1, 1, 5, 0, 0, 4, 0, 2}, 30))
	f.Add([]byte("the quick brown fox jumps over the lazy dog, repeatedly: the quick brown fox"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := runFuzz(t, data)
		snap := snapshotBytes(t, tr)
		rt, err := Restore(bytes.NewReader(snap))
		if err != nil {
			t.Fatalf("Restore: %v", err)
		}
		checkInvariants(t, rt)
		if rt.Digest() != tr.Digest() || !bytes.Equal(snapshotBytes(t, rt), snap) {
			t.Fatal("snapshot round trip changed the tree")
		}
		// Determinism: the same txns give byte-identical state.
		if again := runFuzz(t, data); !bytes.Equal(snapshotBytes(t, again), snap) {
			t.Fatal("replay diverged")
		}
	})
}
