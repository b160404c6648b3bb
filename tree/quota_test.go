package tree

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/hutchzk/hutch/quota"
	"github.com/hutchzk/hutch/wire"
)

// setQuota makes the nodes zkCli's setquota makes for path, in its order:
// the parents under /zookeeper/quota, the limits, then the stats, which
// the tree counts afresh.
func (h *harness) setQuota(path, limits string) {
	h.tb.Helper()
	q := quotaPath
	for _, part := range splitComponents(path) {
		q += "/" + part
		if _, ok := h.tr.Stat(q); !ok {
			h.mustOK(wire.OpCreate, &wire.CreateRequest{Path: q, ACL: open})
		}
	}
	h.mustOK(wire.OpCreate, &wire.CreateRequest{Path: q + "/" + quotaLimitNode, Data: []byte(limits), ACL: open})
	h.mustOK(wire.OpCreate, &wire.CreateRequest{Path: q + "/" + quotaStatNode, Data: []byte("count=0,bytes=0"), ACL: open})
}

func splitComponents(p string) []string {
	var out []string
	for _, c := range bytes.Split([]byte(p), []byte("/")) {
		if len(c) > 0 {
			out = append(out, string(c))
		}
	}
	return out
}

func (h *harness) stats(path string) string {
	h.tb.Helper()
	data, _, err := h.tr.GetData(quotaPath+path+"/"+quotaStatNode, nil)
	if err != nil {
		h.tb.Fatalf("stats of %s: %v", path, err)
	}
	return string(data)
}

func (h *harness) wantStats(path, want string) {
	h.tb.Helper()
	if got := h.stats(path); got != want {
		h.tb.Fatalf("stats of %s = %q, want %q", path, got, want)
	}
	checkInvariants(h.tb, h.tr)
}

func createReq(path, data string) *wire.CreateRequest {
	return &wire.CreateRequest{Path: path, Data: []byte(data), ACL: open}
}

// TestQuotaStatsFollowEveryChange walks the stats of a quota through
// every kind of change DataTree counts: creates (all node kinds), deletes,
// setData, a session's ephemerals going, a multi, and changes outside the
// subtree or under a deeper quota.
func TestQuotaStatsFollowEveryChange(t *testing.T) {
	h := newHarness(t)
	h.mustOK(wire.OpCreate, createReq("/a", "abc"))
	h.mustOK(wire.OpCreate, createReq("/a/b", "12345"))
	h.mustOK(wire.OpCreate, createReq("/ab", "not under /a"))
	h.setQuota("/a", "count=10,bytes=-1=;byteHardLimit=-1;countHardLimit=-1")
	h.wantStats("/a", "count=2,bytes=8") // counted afresh when the stats node appeared

	h.mustOK(wire.OpCreate, createReq("/a/c", "xy"))
	h.wantStats("/a", "count=3,bytes=10")
	h.mustOK(wire.OpCreate, &wire.CreateRequest{Path: "/a/c/n", ACL: open}) // null data
	h.wantStats("/a", "count=4,bytes=10")
	h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: "/a/b", Data: []byte("1"), Version: -1})
	h.wantStats("/a", "count=4,bytes=6")
	h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: "/a", Data: nil, Version: -1})
	h.wantStats("/a", "count=4,bytes=3")
	h.mustOK(wire.OpDelete, &wire.DeleteRequest{Path: "/a/c/n", Version: -1})
	h.wantStats("/a", "count=3,bytes=3")
	h.mustOK(wire.OpCreate, createReq("/ab/x", "outside"))
	h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: "/ab", Data: []byte("z"), Version: -1})
	h.wantStats("/a", "count=3,bytes=3")

	// Ephemerals, sequential nodes, containers and TTL nodes count too.
	h.session_(0x100)
	h.session = 0x100
	h.mustOK(wire.OpCreate, &wire.CreateRequest{Path: "/a/e", Data: []byte("eph"), ACL: open, Flags: wire.ModeEphemeral})
	h.mustOK(wire.OpCreate, &wire.CreateRequest{Path: "/a/s-", Data: []byte("s"), ACL: open, Flags: wire.ModePersistentSequential})
	h.mustOK(wire.OpCreateContainer, &wire.CreateRequest{Path: "/a/k", Data: []byte("kk"), ACL: open, Flags: wire.ModeContainer})
	h.mustOK(wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/a/t", Data: []byte("t"), ACL: open, Flags: wire.ModePersistentWithTTL, TTL: 1000})
	h.wantStats("/a", "count=7,bytes=10")
	h.mustOK(wire.OpCloseSession, nil)
	h.wantStats("/a", "count=6,bytes=7")

	// A multi counts each of its ops; a failed one counts nothing.
	h.mustOK(wire.OpMulti, &MultiRequest{Ops: []MultiOp{
		{Op: wire.OpCreate, Req: createReq("/a/m", "mmmm")},
		{Op: wire.OpSetData, Req: &wire.SetDataRequest{Path: "/a/m", Data: []byte("m"), Version: -1}},
		{Op: wire.OpDelete, Req: &wire.DeleteRequest{Path: "/a/k", Version: -1}},
	}})
	h.wantStats("/a", "count=6,bytes=6")
	before := h.tr.Digest()
	r := h.apply(wire.OpMulti, &MultiRequest{Ops: []MultiOp{
		{Op: wire.OpCreate, Req: createReq("/a/n", "nnnn")},
		{Op: wire.OpDelete, Req: &wire.DeleteRequest{Path: "/a/nope", Version: -1}},
	}})
	if r.MultiErr() != ErrNoNode {
		t.Fatalf("failing multi: %v", r.MultiErr())
	}
	h.wantStats("/a", "count=6,bytes=6")
	if h.tr.Digest() != before {
		t.Fatal("a failed multi changed the digest")
	}

	// A deeper quota takes over its subtree: /a no longer counts it.
	h.mustOK(wire.OpCreate, createReq("/a/b/deep", "d"))
	h.wantStats("/a", "count=7,bytes=7")
	h.setQuota("/a/b", "count=-1,bytes=100=;byteHardLimit=-1;countHardLimit=-1")
	h.wantStats("/a/b", "count=2,bytes=2")
	h.mustOK(wire.OpCreate, createReq("/a/b/deeper", "dd"))
	h.wantStats("/a/b", "count=3,bytes=4")
	h.wantStats("/a", "count=7,bytes=7")

	// Removing the limits stops the counting; the stats node stays as it was.
	h.mustOK(wire.OpDelete, &wire.DeleteRequest{Path: quotaPath + "/a/b/" + quotaLimitNode, Version: -1})
	h.mustOK(wire.OpCreate, createReq("/a/b/last", "l"))
	h.wantStats("/a/b", "count=3,bytes=4")
	h.wantStats("/a", "count=8,bytes=8")
}

// TestQuotaStatsNodeWrites: the stats node is an ordinary node a client
// may write; the tree adds to whatever it holds, keeping keys it does not
// know, and leaves alone data it cannot read. The stats update changes
// neither the stats node's version nor its mzxid.
func TestQuotaStatsNodeWrites(t *testing.T) {
	h := newHarness(t)
	h.mustOK(wire.OpCreate, createReq("/q", ""))
	h.setQuota("/q", "count=5")
	statsNode := quotaPath + "/q/" + quotaStatNode
	h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: statsNode, Data: []byte("count=40,bytes=2=;extra=9"), Version: -1})
	st := h.stat(statsNode)
	h.mustOK(wire.OpCreate, createReq("/q/x", "abc"))
	h.wantStats("/q", "count=41,bytes=5=;extra=9")
	after := h.stat(statsNode)
	if after.Version != st.Version || after.Mzxid != st.Mzxid || after.DataLength != int32(len("count=41,bytes=5=;extra=9")) {
		t.Fatalf("stats node stat %+v after the update, %+v before", after, st)
	}
	h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: statsNode, Data: []byte("garbage"), Version: -1})
	h.mustOK(wire.OpCreate, createReq("/q/y", "abc"))
	h.wantStats("/q", "garbage")
}

func TestQuotaIndex(t *testing.T) {
	h := newHarness(t)
	for _, p := range []string{"/a", "/a/b", "/a/b/c", "/x", "/x/ ", "/x/ /y"} {
		h.mustOK(wire.OpCreate, createReq(p, ""))
	}
	h.setQuota("/a/b", "count=1")
	// A blank component is left out of the key, as PathTrie splits.
	h.mustOK(wire.OpCreate, createReq(quotaPath+"/x", ""))
	h.mustOK(wire.OpCreate, createReq(quotaPath+"/x/ ", ""))
	h.mustOK(wire.OpCreate, createReq(quotaPath+"/x/ /y", ""))
	h.mustOK(wire.OpCreate, createReq(quotaPath+"/x/ /y/"+quotaLimitNode, ""))
	// startsWith("/zookeeper/quota"): /zookeeper/quotaZ/... is a quota on /Z.
	h.mustOK(wire.OpCreate, createReq("/zookeeper/quotaZ", ""))
	h.mustOK(wire.OpCreate, createReq("/zookeeper/quotaZ/"+quotaLimitNode, ""))
	// Limits straight under /zookeeper/quota would be the root's: never counted.
	h.mustOK(wire.OpCreate, createReq(quotaPath+"/"+quotaLimitNode, ""))
	for path, want := range map[string]string{
		"/": "", "/a": "", "/a/b": "/a/b", "/a/b/c": "/a/b", "/a/bc": "", "/x/y": "/x/y",
		"/x/ /y": "/x/y", "/x/ /y/z": "/x/y", "/Z/1": "/Z", "/zookeeper/quota/a/b": "",
	} {
		if got := h.tr.quotaPrefix(path); got != want {
			t.Errorf("quotaPrefix(%q) = %q, want %q", path, got, want)
		}
	}
	checkInvariants(t, h.tr)
	// The index comes back with a restored snapshot.
	tr, err := Restore(bytes.NewReader(snapshotBytes(t, h.tr)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tr.quotas, h.tr.quotas) {
		t.Fatalf("restored index %v, want %v", tr.quotas, h.tr.quotas)
	}
	checkInvariants(t, tr)
}

// TestQuotaEnforced covers ZooKeeperServer.checkQuota: soft limits are
// reported and let through, hard limits refuse with QUOTAEXCEEDED, in
// ZooKeeper's order of checks, and nothing is checked unless enforced.
func TestQuotaEnforced(t *testing.T) {
	h := newHarness(t)
	h.mustOK(wire.OpCreate, createReq("/a", "12"))
	h.setQuota("/a", "count=2,bytes=4=;byteHardLimit=6;countHardLimit=3")

	// Not enforced: no limit applies, nothing is reported.
	r := h.mustOK(wire.OpCreate, createReq("/a/x", "345678"))
	if r.Quota != nil {
		t.Fatalf("reported %v without enforcement", r.Quota)
	}
	h.wantStats("/a", "count=2,bytes=8")

	h.tr.EnforceQuota()
	// Count: soft 2 passed (reported), hard 3 not; bytes: 8 is already
	// over the hard 6, but an empty create adds no bytes, so only the
	// count is checked.
	r = h.mustOK(wire.OpCreate, &wire.CreateRequest{Path: "/a/y", ACL: open})
	// The hard count limit is set, so it is the one compared: 3 <= 3.
	if r.Quota != nil {
		t.Fatalf("reported %v, want nothing (hard limit 3 not passed)", r.Quota)
	}
	h.wantStats("/a", "count=3,bytes=8")
	r = h.apply(wire.OpCreate, &wire.CreateRequest{Path: "/a/z", ACL: open})
	want := []quota.Exceeded{{Path: "/a", Current: 4, Limit: 3, Hard: true}}
	if r.Err != ErrQuotaExceeded || !reflect.DeepEqual(r.Quota, want) {
		t.Fatalf("create past the hard count: %v %v, want QUOTAEXCEEDED %v", r.Err, r.Quota, want)
	}
	if ToCode(r.Err) != -125 {
		t.Fatalf("code %d", ToCode(r.Err))
	}
	h.wantStats("/a", "count=3,bytes=8")

	// Errors ZooKeeper finds first: node exists, no parent.
	if r := h.apply(wire.OpCreate, createReq("/a/x", "")); r.Err != ErrNodeExists {
		t.Fatalf("existing node: %v", r.Err)
	}
	// setData: the quota is checked before the version.
	if r := h.apply(wire.OpSetData, &wire.SetDataRequest{Path: "/a/x", Data: []byte("1234567"), Version: 9}); r.Err != ErrQuotaExceeded {
		t.Fatalf("setData past the hard bytes with a bad version: %v", r.Err)
	}
	// Shrinking is checked too (ZooKeeper compares the new total): 8-1=7 > 6.
	if r := h.apply(wire.OpSetData, &wire.SetDataRequest{Path: "/a/x", Data: []byte("34567"), Version: -1}); r.Err != ErrQuotaExceeded {
		t.Fatalf("setData to 7 bytes of 6: %v", r.Err)
	}
	h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: "/a/x", Data: []byte("3"), Version: -1})
	h.wantStats("/a", "count=3,bytes=3")
	// Equal size: no byte check at all.
	h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: "/a/x", Data: []byte("4"), Version: -1})

	// Soft limits only: reported, let through.
	h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: quotaPath + "/a/" + quotaLimitNode, Data: []byte("count=2,bytes=4"), Version: -1})
	r = h.mustOK(wire.OpCreate, createReq("/a/z", "55"))
	want = []quota.Exceeded{{Path: "/a", Current: 4, Limit: 2}, {Path: "/a", Bytes: true, Current: 5, Limit: 4}}
	if !reflect.DeepEqual(r.Quota, want) {
		t.Fatalf("soft limits reported %v, want %v", r.Quota, want)
	}
	h.wantStats("/a", "count=4,bytes=5")

	// Limits that do not read as a StatsTrack: MarshallingError, as
	// ZooKeeper's PrepRequestProcessor answers an unexpected exception.
	h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: quotaPath + "/a/" + quotaLimitNode, Data: []byte("count"), Version: -1})
	if r := h.apply(wire.OpCreate, createReq("/a/w", "")); r.Err != ErrMarshallingError {
		t.Fatalf("unreadable limits: %v", r.Err)
	}
	// Deletes are never checked.
	h.mustOK(wire.OpDelete, &wire.DeleteRequest{Path: "/a/z", Version: -1})
	checkInvariants(t, h.tr)
}

// TestQuotaEnforcedInMulti: every op of a multi is checked against the
// usage before the multi, as ZooKeeper's prep checks them all against the
// committed tree; a refused op fails the multi with QUOTAEXCEEDED and
// undoes the stats.
func TestQuotaEnforcedInMulti(t *testing.T) {
	h := newHarness(t)
	h.mustOK(wire.OpCreate, createReq("/a", ""))
	h.setQuota("/a", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=2")
	h.tr.EnforceQuota()
	// Usage 1 before: each create alone would make 2, so both pass.
	h.mustOK(wire.OpMulti, &MultiRequest{Ops: []MultiOp{
		{Op: wire.OpCreate, Req: createReq("/a/1", "")},
		{Op: wire.OpCreate, Req: createReq("/a/2", "")},
	}})
	h.wantStats("/a", "count=3,bytes=0")
	r := h.apply(wire.OpMulti, &MultiRequest{Ops: []MultiOp{
		{Op: wire.OpDelete, Req: &wire.DeleteRequest{Path: "/a/1", Version: -1}},
		{Op: wire.OpCreate, Req: createReq("/a/3", "")},
	}})
	if !errors.Is(r.MultiErr(), ErrQuotaExceeded) {
		t.Fatalf("multi past the hard count: %v", r.MultiErr())
	}
	if r.Multi[0].Err != nil || r.Multi[1].Err != ErrQuotaExceeded {
		t.Fatalf("results %+v", r.Multi)
	}
	h.wantStats("/a", "count=3,bytes=0")
	if _, ok := h.tr.Stat("/a/1"); !ok {
		t.Fatal("the failed multi's delete was not undone")
	}
}

// TestQuotaSnapshotKeepsStats: a restored tree has the stats as they were
// and goes on counting and enforcing.
func TestQuotaSnapshotKeepsStats(t *testing.T) {
	h := newHarness(t)
	h.mustOK(wire.OpCreate, createReq("/a", "1"))
	h.setQuota("/a", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=2")
	h.mustOK(wire.OpCreate, createReq("/a/b", "22"))
	tr, err := Restore(bytes.NewReader(snapshotBytes(t, h.tr)))
	if err != nil {
		t.Fatal(err)
	}
	tr.EnforceQuota()
	h.tr = tr
	h.wantStats("/a", "count=2,bytes=3")
	if r := h.apply(wire.OpCreate, createReq("/a/c", "")); r.Err != ErrQuotaExceeded {
		t.Fatalf("restored tree: %v, want QUOTAEXCEEDED", r.Err)
	}
	h.mustOK(wire.OpDelete, &wire.DeleteRequest{Path: "/a/b", Version: -1})
	h.wantStats("/a", "count=1,bytes=1")
}

// TestQuotaUnreadableLimitsFailWholeMulti: limits that do not parse make
// ZooKeeper's prep throw outside a multi's per-op errors, so the whole
// multi is answered MarshallingError, with no results, and undone.
func TestQuotaUnreadableLimitsFailWholeMulti(t *testing.T) {
	h := newHarness(t)
	h.mustOK(wire.OpCreate, createReq("/a", ""))
	h.setQuota("/a", "count=x")
	h.tr.EnforceQuota()
	before := h.tr.Digest()
	r := h.apply(wire.OpMulti, &MultiRequest{Ops: []MultiOp{
		{Op: wire.OpCreate, Req: createReq("/b", "")},
		{Op: wire.OpSetData, Req: &wire.SetDataRequest{Path: "/a", Data: []byte("x"), Version: -1}},
	}})
	if r.Err != ErrMarshallingError || r.Multi != nil || r.Events != nil {
		t.Fatalf("multi over unreadable limits: %+v", r)
	}
	if h.tr.Digest() != before || h.tr.LastZxid() != h.zxid {
		t.Fatal("the refused multi changed the tree or did not take its zxid")
	}
	checkInvariants(t, h.tr)
}

// TestRecountQuotas: what ZooKeeper's setupQuota makes of stats written by
// hand and of a quota nested by hand, when a snapshot is loaded.
func TestRecountQuotas(t *testing.T) {
	h := newHarness(t)
	for _, p := range []string{"/a", "/a/b", "/a/b/c", "/x"} {
		h.mustOK(wire.OpCreate, createReq(p, "12"))
	}
	h.setQuota("/a", "count=9")
	h.setQuota("/x", "count=9")
	h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: quotaPath + "/x/" + quotaStatNode, Data: []byte("count=77,bytes=1=;extra=1"), Version: -1})
	// A nested quota made by hand: the stats of /a stop counting below /a/b.
	h.mustOK(wire.OpCreate, createReq(quotaPath+"/a/b", ""))
	h.mustOK(wire.OpCreate, createReq(quotaPath+"/a/b/"+quotaLimitNode, "count=9"))
	h.mustOK(wire.OpCreate, createReq(quotaPath+"/a/b/"+quotaStatNode, ""))
	h.mustOK(wire.OpCreate, createReq("/a/b/d", "345"))
	h.wantStats("/a", "count=3,bytes=6")
	h.wantStats("/a/b", "count=3,bytes=7")
	h.tr.RecountQuotas()
	h.wantStats("/a", "count=4,bytes=9") // the whole subtree again
	h.wantStats("/a/b", "count=3,bytes=7")
	h.wantStats("/x", "count=1,bytes=2")
}
