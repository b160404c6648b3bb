package tree

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/hutchzk/hutch/wire"
)

// richTree builds a tree with every kind of node and state a snapshot must carry.
func richTree(tb testing.TB) *Tree {
	tb.Helper()
	h := newHarness(tb)
	h.session_(0x11)
	h.session_(0x22)
	h.auth = []wire.ID{aliceID}
	h.createACL("/secure", 0, []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "auth"}}})
	h.auth = nil
	h.create("/q", 0)
	for i := 0; i < 5; i++ {
		h.create("/q/item-", wire.ModePersistentSequential)
	}
	h.mustOK(wire.OpDelete, &wire.DeleteRequest{Path: "/q/item-0000000002", Version: -1})
	h.session = 0x11
	h.create("/q/eph", wire.ModeEphemeral)
	h.session = 0x22
	h.create("/eph2", wire.ModeEphemeralSequential)
	h.session = 0
	h.create("/c", wire.ModeContainer)
	h.create("/c/kid", 0)
	h.mustOK(wire.OpDelete, &wire.DeleteRequest{Path: "/c/kid", Version: -1})
	h.mustOK(wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/ttl", ACL: open, Flags: 5, TTL: 100})
	h.mustOK(wire.OpCreate, &wire.CreateRequest{Path: "/nil", Data: nil, ACL: open})
	h.mustOK(wire.OpCreate, &wire.CreateRequest{Path: "/empty", Data: []byte{}, ACL: open})
	h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: "/q", Data: bytes.Repeat([]byte("x"), 70000), Version: -1})
	h.mustOK(wire.OpSetACL, &wire.SetACLRequest{Path: "/q", ACL: []wire.ACL{{Perms: 31, ID: wire.ID{Scheme: "ip", ID: "10.0.0.0/8"}}}, Version: -1})
	h.create("/日本", 0)
	h.mustOK(wire.OpCreate, &wire.CreateRequest{Path: "/日本/", ACL: open, Flags: 2})
	h.zxid += 10
	h.mustOK(wire.OpCheck, &wire.CheckVersionRequest{Path: "/", Version: -1})
	return h.tr
}

func TestSnapshotRoundTrip(t *testing.T) {
	tr := richTree(t)
	snap := snapshotBytes(t, tr)
	rt, err := Restore(bytes.NewReader(snap))
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	checkInvariants(t, rt)
	if rt.Digest() != tr.Digest() || rt.LastZxid() != tr.LastZxid() || rt.NodeCount() != tr.NodeCount() {
		t.Fatalf("digest/zxid/count differ")
	}
	if !bytes.Equal(snapshotBytes(t, rt), snap) {
		t.Fatal("second snapshot differs")
	}
	if !reflect.DeepEqual(rt.Sessions(), tr.Sessions()) {
		t.Fatal("sessions differ")
	}
	for _, id := range tr.Sessions() {
		a1, b1, _ := tr.Session(id)
		a2, b2, _ := rt.Session(id)
		if a1 != a2 || !bytes.Equal(b1, b2) {
			t.Fatalf("session %x differs", id)
		}
		e1, _ := tr.GetEphemerals(id, "/")
		e2, _ := rt.GetEphemerals(id, "/")
		if !reflect.DeepEqual(e1, e2) || len(e1) != 1 {
			t.Fatalf("ephemerals differ: %v %v", e1, e2)
		}
	}
	for _, now := range []int64{0, 1 << 20, 1 << 40} {
		if !reflect.DeepEqual(tr.ExpiryCandidates(now), rt.ExpiryCandidates(now)) {
			t.Fatalf("candidates differ at %d", now)
		}
	}
	for p, n := range tr.nodes {
		m := rt.nodes[p]
		if m == nil || n.stat() != m.stat() || !reflect.DeepEqual(n.acl, m.acl) ||
			!bytes.Equal(n.data, m.data) || (n.data == nil) != (m.data == nil) {
			t.Fatalf("%s differs after restore", p)
		}
	}
	// Sequence state survives: the next sequential name continues.
	r := rt.Apply(&Txn{Zxid: 100, Auth: []wire.ID{superID}, Op: wire.OpCreate, Req: &wire.CreateRequest{Path: "/q/item-", ACL: open, Flags: 2}})
	if r.Err != nil || r.Resp.(*wire.Create2Response).Path != "/q/item-0000000006" {
		t.Fatalf("sequence after restore: %+v", r)
	}
}

func TestSnapshotFreshTree(t *testing.T) {
	tr := New()
	rt, err := Restore(bytes.NewReader(snapshotBytes(t, tr)))
	if err != nil || rt.Digest() != tr.Digest() || rt.NodeCount() != 5 {
		t.Fatalf("fresh round trip: %v", err)
	}
}

func TestRestoreRejectsCorruption(t *testing.T) {
	snap := snapshotBytes(t, richTree(t))
	for n := 0; n < len(snap); n += 1 + n/64 {
		if _, err := Restore(bytes.NewReader(snap[:n])); err == nil {
			t.Fatalf("truncated at %d accepted", n)
		} else if !errors.Is(err, io.ErrUnexpectedEOF) && err != errCorrupt {
			t.Fatalf("truncated at %d: unexpected error %v", n, err)
		}
	}
	// Flipping any byte must be detected (the trailing CRC covers what the
	// structure checks and the digest do not).
	for i := 0; i < len(snap); i += 1 + i/128 {
		bad := bytes.Clone(snap)
		bad[i] ^= 0x41
		if _, err := Restore(bytes.NewReader(bad)); err == nil {
			t.Fatalf("flipped byte %d accepted", i)
		}
	}
	if _, err := Restore(bytes.NewReader(append(bytes.Clone(snap[:len(snap)-1]), snap[len(snap)-1]^1))); err != errCorrupt {
		t.Fatalf("bad digest: %v", err)
	}
}

type failWriter struct{ left int }

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		return 0, errors.New("disk full")
	}
	w.left -= len(p)
	return len(p), nil
}

func TestWriteSnapshotPropagatesErrors(t *testing.T) {
	tr := richTree(t)
	if err := tr.WriteSnapshot(&failWriter{left: 100}); err == nil {
		t.Fatal("write error swallowed")
	}
}
