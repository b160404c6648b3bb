package raftstore

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// sampleEntries holds one entry of every shape the codec carries.
func sampleEntries() []Entry {
	acl := []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "digest", ID: "u:h"}}}
	auth := []wire.ID{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: "super", ID: ""}}
	txn := func(op wire.OpCode, req any) tree.Txn {
		return tree.Txn{Time: 1700000000123, Session: 0x1234_5678_9abc, Auth: auth, Op: op, Req: req}
	}
	return []Entry{
		{Origin: 1, Seq: 0, Txn: txn(wire.OpCreate, &wire.CreateRequest{Path: "/a", Data: []byte("x"), ACL: acl, Flags: 1})},
		{Origin: 2, Seq: 1 << 40, Txn: txn(wire.OpCreate2, &wire.CreateRequest{Path: "/b", Data: nil, ACL: nil})},
		{Origin: 3, Seq: 2, Txn: txn(wire.OpCreateContainer, &wire.CreateRequest{Path: "/c", Data: []byte{}, ACL: []wire.ACL{}, Flags: 4})},
		{Txn: txn(wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/t", Data: []byte("t"), ACL: acl, Flags: 5, TTL: 1000})},
		{Txn: txn(wire.OpDelete, &wire.DeleteRequest{Path: "/a", Version: -1})},
		{Txn: txn(wire.OpSetData, &wire.SetDataRequest{Path: "/a", Data: []byte("y"), Version: 3})},
		{Txn: txn(wire.OpSetACL, &wire.SetACLRequest{Path: "/a", ACL: acl, Version: 0})},
		{Txn: txn(wire.OpCheck, &wire.CheckVersionRequest{Path: "/a", Version: 7})},
		{Txn: txn(wire.OpMulti, &tree.MultiRequest{Ops: []tree.MultiOp{
			{Op: wire.OpCreate, Req: &wire.CreateRequest{Path: "/m", Data: []byte("m"), ACL: acl}},
			{Op: wire.OpCheck, Req: &wire.CheckVersionRequest{Path: "/m", Version: 0}},
			{Op: wire.OpSetData, Req: &wire.SetDataRequest{Path: "/m", Data: nil, Version: -1}},
			{Op: wire.OpDelete, Req: nil},
		}})},
		{Txn: txn(wire.OpMulti, &tree.MultiRequest{Ops: []tree.MultiOp{}})},
		{Txn: tree.Txn{Session: 0x100000001, Op: wire.OpCreateSession, Req: &tree.CreateSession{ID: 0x100000001, Timeout: 30000, Passwd: []byte("0123456789abcdef")}}},
		{Txn: tree.Txn{Session: -5, Op: wire.OpCloseSession}},
		{Txn: txn(wire.OpDeleteContainer, &wire.PathRequest{Path: "/c"})},
		{Txn: txn(wire.OpReconfig, &wire.ReconfigRequest{JoiningServers: "j", LeavingServers: "l", NewMembers: "n", CurConfigID: -1})},
		{Origin: 9, Seq: 99, Txn: tree.Txn{Op: wire.OpSync, Req: &wire.PathRequest{Path: "/"}}},
		{Origin: 2, Txn: tree.Txn{Op: wire.OpPing, Req: &Touch{Sessions: []int64{1, -1, 0x100000001}}}},
		{Origin: 2, Txn: tree.Txn{Op: wire.OpPing, Req: &Touch{Sessions: []int64{}}}},
	}
}

func TestBatchRoundTrip(t *testing.T) {
	all := sampleEntries()
	cases := map[string][]Entry{"empty": {}, "all": all}
	for i, e := range all {
		cases[e.Txn.Op.String()+"#"+string(rune('a'+i))] = []Entry{e}
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := EncodeBatch(nil, in)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			out, err := DecodeBatch(b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if len(in) == 0 && len(out) == 0 {
				return
			}
			if !reflect.DeepEqual(in, out) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", out, in)
			}
		})
	}
}

// TestTypedNilRequests: a typed nil request encodes like a missing one (the
// tree treats both alike) instead of panicking, and decodes as nil.
func TestTypedNilRequests(t *testing.T) {
	for _, e := range []Entry{
		{Txn: tree.Txn{Op: wire.OpPing, Req: (*Touch)(nil)}},
		{Txn: tree.Txn{Op: wire.OpCreate, Req: (*wire.CreateRequest)(nil)}},
		{Txn: tree.Txn{Op: wire.OpMulti, Req: (*tree.MultiRequest)(nil)}},
		{Txn: tree.Txn{Op: wire.OpCreateSession, Req: (*tree.CreateSession)(nil)}},
	} {
		b, err := EncodeBatch(nil, []Entry{e})
		if err != nil {
			t.Fatalf("op %v: encode: %v", e.Txn.Op, err)
		}
		out, err := DecodeBatch(b)
		if err != nil || out[0].Txn.Req != nil || out[0].Txn.Op != e.Txn.Op {
			t.Fatalf("op %v: decoded %+v, %v", e.Txn.Op, out, err)
		}
	}
}

func TestDecodeBatchDoesNotAlias(t *testing.T) {
	b, _ := EncodeBatch(nil, sampleEntries()[:1])
	out, err := DecodeBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 0xff
	}
	r := out[0].Txn.Req.(*wire.CreateRequest)
	if r.Path != "/a" || string(r.Data) != "x" || out[0].Txn.Auth[0].ID != "127.0.0.1" {
		t.Fatalf("decoded entry changed with its input: %+v", out[0])
	}
}

func TestEncodeBatchRefusesMismatchedRequests(t *testing.T) {
	for name, e := range map[string]Entry{
		"delete with setData":  {Txn: tree.Txn{Op: wire.OpDelete, Req: &wire.SetDataRequest{}}},
		"unknown op with req":  {Txn: tree.Txn{Op: wire.OpGetData, Req: &wire.PathRequest{}}},
		"multi op mismatched":  {Txn: tree.Txn{Op: wire.OpMulti, Req: &tree.MultiRequest{Ops: []tree.MultiOp{{Op: wire.OpCheck, Req: &wire.DeleteRequest{}}}}}},
		"multi with wrong req": {Txn: tree.Txn{Op: wire.OpMulti, Req: &wire.PathRequest{}}},
	} {
		if _, err := EncodeBatch(nil, []Entry{e}); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
}

func TestDecodeBatchCorrupt(t *testing.T) {
	good, _ := EncodeBatch(nil, sampleEntries())
	// Every proper prefix is incomplete.
	for n := range len(good) {
		if _, err := DecodeBatch(good[:n]); err == nil {
			t.Fatalf("prefix of %d/%d bytes decoded", n, len(good))
		}
	}
	for name, b := range map[string][]byte{
		"trailing byte":       append(append([]byte{}, good...), 0),
		"huge count":          {0xff, 0xff, 0xff, 0xff, 0x0f},
		"overlong varint":     bytes.Repeat([]byte{0x80}, 11),
		"unknown op with req": {1, 0, 0, 0, 0, 0, 2 * 50, 1},
		"nested multi":        nestedMulti(),
	} {
		if _, err := DecodeBatch(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// nestedMulti builds a batch whose multi contains a multi, which the
// decoder refuses.
func nestedMulti() []byte {
	inner := []byte{0} // empty multi body: count 0
	op := append([]byte{2 * 14, byte(len(inner) + 1)}, inner...)
	outer := append([]byte{1}, op...) // count 1, then the inner op
	b := []byte{1, 0, 0, 0, 0, 0, 2 * 14, byte(len(outer) + 1)}
	return append(b, outer...)
}

func FuzzDecodeBatch(f *testing.F) {
	all := sampleEntries()
	for i := range all {
		b, _ := EncodeBatch(nil, all[i:i+1])
		f.Add(b)
	}
	b, _ := EncodeBatch(nil, all)
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte{0})
	f.Add(nestedMulti())
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := DecodeBatch(data)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes, and the re-encoding is a fixed point.
		b1, err := EncodeBatch(nil, out)
		if err != nil {
			t.Fatalf("re-encode of decoded batch: %v", err)
		}
		out2, err := DecodeBatch(b1)
		if err != nil {
			t.Fatalf("decode of re-encoding: %v", err)
		}
		if !reflect.DeepEqual(out, out2) {
			t.Fatalf("round trip changed the batch:\n%#v\n%#v", out, out2)
		}
		b2, _ := EncodeBatch(nil, out2)
		if !bytes.Equal(b1, b2) {
			t.Fatal("re-encoding is not stable")
		}
	})
}
