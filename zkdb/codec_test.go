package zkdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// sampleCommands holds one command of every shape the codec carries.
func sampleCommands() []Command {
	acl := []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "digest", ID: "u:h"}}}
	auth := []wire.ID{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: "super", ID: ""}}
	txn := func(op wire.OpCode, req any) tree.Txn {
		return tree.Txn{Session: 0x1234_5678_9abc, Auth: auth, Op: op, Req: req}
	}
	return []Command{
		{Origin: 1, Seq: 0, Conn: 7, Order: 1, Kind: KindTxn, Txn: txn(wire.OpCreate, &wire.CreateRequest{Path: "/a", Data: []byte("x"), ACL: acl, Flags: 1})},
		{Origin: 2, Seq: 1 << 40, Conn: -3, Order: 1 << 50, Kind: KindTxn, Txn: txn(wire.OpCreate2, &wire.CreateRequest{Path: "/b", Data: nil, ACL: nil})},
		{Origin: 3, Seq: 2, Kind: KindTxn, Txn: txn(wire.OpCreateContainer, &wire.CreateRequest{Path: "/c", Data: []byte{}, ACL: []wire.ACL{}, Flags: 4})},
		{Kind: KindTxn, Txn: txn(wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/t", Data: []byte("t"), ACL: acl, Flags: 5, TTL: 1000})},
		{Kind: KindTxn, Txn: txn(wire.OpDelete, &wire.DeleteRequest{Path: "/a", Version: -1})},
		{Kind: KindTxn, Txn: txn(wire.OpSetData, &wire.SetDataRequest{Path: "/a", Data: []byte("y"), Version: 3})},
		{Kind: KindTxn, Txn: txn(wire.OpSetACL, &wire.SetACLRequest{Path: "/a", ACL: acl, Version: 0})},
		{Kind: KindTxn, Txn: txn(wire.OpCheck, &wire.CheckVersionRequest{Path: "/a", Version: 7})},
		{Kind: KindTxn, Txn: txn(wire.OpMulti, &tree.MultiRequest{Ops: []tree.MultiOp{
			{Op: wire.OpCreate, Req: &wire.CreateRequest{Path: "/m", Data: []byte("m"), ACL: acl}},
			{Op: wire.OpCheck, Req: &wire.CheckVersionRequest{Path: "/m", Version: 0}},
			{Op: wire.OpSetData, Req: &wire.SetDataRequest{Path: "/m", Data: nil, Version: -1}},
			{Op: wire.OpDelete, Req: &wire.DeleteRequest{Path: "/m", Version: -1}},
		}})},
		{Kind: KindTxn, Txn: txn(wire.OpMulti, &tree.MultiRequest{})},
		{Conn: 9, Kind: KindTxn, Txn: tree.Txn{Session: 0x100000001, Op: wire.OpCreateSession, Req: &tree.CreateSession{ID: 0x100000001, Timeout: 30000, Passwd: []byte("0123456789abcdef")}}},
		{Conn: 9, Order: 4, Kind: KindTxn, Txn: tree.Txn{Session: -5, Op: wire.OpCloseSession}},
		{Kind: KindTxn, Term: 1 << 33, Txn: txn(wire.OpDeleteContainer, &wire.PathRequest{Path: "/c"})},
		{Kind: KindTxn, Txn: txn(wire.OpReconfig, &wire.ReconfigRequest{JoiningServers: []byte("j"), LeavingServers: []byte("l"), NewMembers: []byte("n"), CurConfigID: -1})},
		{Origin: 2, Seq: 5, Conn: 11, Kind: KindAttach, Timeout: 4000, Txn: tree.Txn{Session: 0x100000001}},
	}
}

// grantedCommands are writes prepared with grants instead of identities.
func grantedCommands() []Command {
	return []Command{
		{Origin: 1, Seq: 9, Conn: 7, Order: 2, Kind: KindTxn, Txn: tree.Txn{Session: 5,
			Grants: &tree.Grants{Entries: []tree.Grant{{ACL: tree.ACLDigest{1, 2, 3}, Perms: wire.PermAll}, {ACL: tree.ACLDigest{9}, Perms: wire.PermRead}}},
			Op:     wire.OpSetData, Req: &wire.SetDataRequest{Path: "/a", Data: []byte("y"), Version: -1}}},
		{Origin: 1, Seq: 10, Conn: 7, Order: 3, Kind: KindTxn, Txn: tree.Txn{Session: 5, Grants: &tree.Grants{Super: true},
			Op: wire.OpDelete, Req: &wire.DeleteRequest{Path: "/a", Version: -1}}},
		{Origin: 1, Seq: 11, Conn: 7, Order: 4, Kind: KindTxn, Txn: tree.Txn{Session: 5, Grants: &tree.Grants{Entries: []tree.Grant{}},
			Op: wire.OpCheck, Req: &wire.CheckVersionRequest{Path: "/a", Version: 0}}},
	}
}

// TestGrantsRoundTrip: grants travel with their commands, and a write
// carries them instead of its connection's identities, whose size no
// longer shows in the entry.
func TestGrantsRoundTrip(t *testing.T) {
	in := grantedCommands()
	out, err := DecodeEntry(encodeEntry(t, 5, in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out.Commands) {
		t.Fatalf("round trip changed the commands:\n%#v\n%#v", in, out.Commands)
	}
}

// TestLayout2Read: a log written before grants (layout 2, fixture made by
// the code of that time from sampleCommands) decodes as it did.
func TestLayout2Read(t *testing.T) {
	b, err := os.ReadFile("testdata/entry-layout2.bin")
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	in := sampleCommands()
	in[9].Txn.Req = &tree.MultiRequest{Ops: out.Commands[9].Txn.Req.(*tree.MultiRequest).Ops}
	if out.Time != 1700000000123 || !reflect.DeepEqual(in, out.Commands) {
		t.Fatalf("the layout-2 entry decodes differently:\n%#v\n%#v", in, out.Commands)
	}
}

func encodeEntry(tb testing.TB, time int64, cmds []Command) []byte {
	tb.Helper()
	b, err := AppendCommands(nil, cmds)
	if err != nil {
		tb.Fatal(err)
	}
	return AppendEntry(nil, time, b)
}

func TestEntryRoundTrip(t *testing.T) {
	in := sampleCommands()
	b := encodeEntry(t, 1700000000123, in)
	out, err := DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	if out.Time != 1700000000123 {
		t.Fatalf("time %d", out.Time)
	}
	// A multi decodes with an empty, non-nil op list; compare after that.
	in[9].Txn.Req = &tree.MultiRequest{Ops: out.Commands[9].Txn.Req.(*tree.MultiRequest).Ops}
	if !reflect.DeepEqual(in, out.Commands) {
		t.Fatalf("round trip changed the commands:\n%#v\n%#v", in, out.Commands)
	}
	if err := CheckCommands(b[1+len(binary.AppendVarint(nil, 1700000000123)) : len(b)-4]); err != nil {
		t.Fatalf("CheckCommands of good commands: %v", err)
	}
	if e, err := DecodeEntry(EmptyEntry); err != nil || len(e.Commands) != 0 {
		t.Fatalf("empty entry: %+v %v", e, err)
	}
}

func TestDecodedRequestsDoNotAlias(t *testing.T) {
	b := encodeEntry(t, 1, sampleCommands()[:1])
	out, err := DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 0xee
	}
	c := out.Commands[0]
	r := c.Txn.Req.(*wire.CreateRequest)
	if r.Path != "/a" || string(r.Data) != "x" || c.Txn.Auth[0].ID != "127.0.0.1" {
		t.Fatalf("decoded command changed with its input: %+v", c)
	}
}

func TestAppendCommandsRefusesNonRequests(t *testing.T) {
	bad := []Command{{Kind: KindTxn, Txn: tree.Txn{Op: wire.OpCreate, Req: "not a request"}}}
	if _, err := AppendCommands(nil, bad); err == nil {
		t.Fatal("encoded a string as a request")
	}
}

func TestDecodeCorrupt(t *testing.T) {
	good := encodeEntry(t, 42, sampleCommands())
	// Every proper prefix is incomplete.
	for n := range len(good) {
		if _, err := DecodeEntry(good[:n]); err == nil {
			t.Fatalf("prefix of %d/%d bytes decoded", n, len(good))
		}
	}
	mismatched, _ := AppendCommands(nil, []Command{{Kind: KindTxn, Txn: tree.Txn{Op: wire.OpDelete, Req: &wire.SetDataRequest{Path: "/x"}}}})
	unknownKind, _ := AppendCommands(nil, []Command{{Kind: 9, Txn: tree.Txn{Op: wire.OpCloseSession}}})
	nested, _ := AppendCommands(nil, []Command{{Kind: KindTxn, Txn: tree.Txn{Op: wire.OpMulti,
		Req: &tree.MultiRequest{Ops: []tree.MultiOp{{Op: wire.OpMulti, Req: &tree.MultiRequest{}}}}}}})
	for name, b := range map[string][]byte{
		"trailing byte":             append(append([]byte{}, good...), 0),
		"unknown version":           append([]byte{9}, good[1:]...),
		"empty entry with bytes":    {0, 0},
		"huge count":                {2, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"overlong varint":           append([]byte{2}, bytes.Repeat([]byte{0x80}, 11)...),
		"request of the wrong type": AppendEntry(nil, 0, mismatched),
		"unknown kind":              AppendEntry(nil, 0, unknownKind),
		"multi in a multi":          AppendEntry(nil, 0, nested),
	} {
		if _, err := DecodeEntry(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: decoded (err %v)", name, err)
		}
	}
}

// legacyEntry is an entry as written before entries carried checksums.
func legacyEntry(tb testing.TB, time int64, cmds []Command) []byte {
	tb.Helper()
	b, err := AppendCommands(nil, cmds)
	if err != nil {
		tb.Fatal(err)
	}
	return append(binary.AppendVarint([]byte{entryV2}, time), b...)
}

// TestLegacyEntriesStillRead: entries written before checksums (tag 2),
// still in a log after an upgrade, decode as they did.
func TestLegacyEntriesStillRead(t *testing.T) {
	in := sampleCommands()
	old, err := DecodeEntry(legacyEntry(t, 77, in))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := DecodeEntry(encodeEntry(t, 77, in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(old, cur) {
		t.Fatalf("a legacy entry decodes differently:\n%#v\n%#v", old, cur)
	}
	if err := CheckEntry(legacyEntry(t, 77, in)); err != nil {
		t.Fatalf("CheckEntry of a legacy entry: %v", err)
	}
}

// TestEveryChangedByteCaught: any one byte of a checked entry changed, to
// any other value, fails its decode: never a different batch, never a
// skip. Issue 26 saw a changed byte of a value served as data, and a
// changed length byte skipped.
func TestEveryChangedByteCaught(t *testing.T) {
	good := encodeEntry(t, 1700000000123, sampleCommands())
	if err := CheckEntry(good); err != nil {
		t.Fatalf("CheckEntry of a good entry: %v", err)
	}
	b := append([]byte{}, good...)
	for i := range b {
		for _, v := range []byte{b[i] ^ 0x01, b[i] ^ 0x80, b[i] + 1, 0, 0xff, entryV2} {
			if v == good[i] {
				continue
			}
			b[i] = v
			if _, err := DecodeEntry(b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d changed %#x -> %#x decoded (err %v)", i, good[i], v, err)
			}
			if i > 0 && CheckEntry(b) == nil {
				t.Fatalf("byte %d changed %#x -> %#x passes CheckEntry", i, good[i], v)
			}
			b[i] = good[i]
		}
	}
	// The tag: no single flipped bit makes a checked entry a legacy or an
	// empty one.
	for bit := range 8 {
		if tag := entryChecked ^ 1<<bit; tag == entryV2 || tag == entryEmpty {
			t.Fatalf("one bit turns the checked tag into %#x", tag)
		}
	}
}

func FuzzDecodeEntry(f *testing.F) {
	all := sampleCommands()
	all = append(all, grantedCommands()...)
	for i := range all {
		f.Add(encodeEntry(f, int64(i), all[i:i+1]))
	}
	if old, err := os.ReadFile("testdata/entry-layout2.bin"); err == nil {
		f.Add(old)
	}
	f.Add(encodeEntry(f, -1, all))
	f.Add(legacyEntry(f, -1, all))
	f.Add([]byte{})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := DecodeEntry(data)
		if err != nil || len(out.Commands) == 0 {
			return
		}
		// Whatever decodes re-encodes, and the re-encoding is a fixed point.
		b1 := encodeEntry(t, out.Time, out.Commands)
		out2, err := DecodeEntry(b1)
		if err != nil {
			t.Fatalf("decode of re-encoding: %v", err)
		}
		if !reflect.DeepEqual(out, out2) {
			t.Fatalf("round trip changed the entry:\n%#v\n%#v", out, out2)
		}
		if b2 := encodeEntry(t, out2.Time, out2.Commands); !bytes.Equal(b1, b2) {
			t.Fatal("re-encoding is not stable")
		}
	})
}
