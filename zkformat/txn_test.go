package zkformat

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// entry encodes a log entry's body: header, then whatever rec writes.
func entry(t wire.OpCode, rec func(e *wire.Encoder)) []byte {
	var e wire.Encoder
	e.Int64(0x42) // session
	e.Int32(7)    // cxid
	e.Int64(0x100000005)
	e.Int64(1700000000000)
	e.Int32(int32(t))
	if rec != nil {
		rec(&e)
	}
	return append([]byte(nil), e.Bytes()...)
}

func digest(e *wire.Encoder) { e.Int32(2); e.Int64(12345) }

// TestDecodeEntryShapes: the record shapes of 3.4 to 3.9 logs, each with
// and without the digest 3.6 added.
func TestDecodeEntryShapes(t *testing.T) {
	open := []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
	createV0 := func(e *wire.Encoder) {
		e.String("/a")
		e.Buffer([]byte("d"))
		e.Int32(1)
		open[0].Encode(e)
		e.Bool(true)
	}
	cases := []struct {
		name   string
		body   []byte
		check  func(rec any) bool
		digest bool
	}{
		{"create, 3.4+", entry(wire.OpCreate, func(e *wire.Encoder) { createV0(e); e.Int32(3) }),
			func(r any) bool { c := r.(*CreateTxn); return c.ParentCVersion == 3 && c.Ephemeral && c.Path == "/a" }, false},
		{"create before 3.3, no parentCVersion", entry(wire.OpCreate, createV0),
			func(r any) bool { return r.(*CreateTxn).ParentCVersion == -1 }, false},
		{"create with a digest", entry(wire.OpCreate, func(e *wire.Encoder) { createV0(e); e.Int32(3); digest(e) }),
			func(r any) bool { return r.(*CreateTxn).ParentCVersion == 3 }, true},
		{"closeSession before 3.6, no record", entry(wire.OpCloseSession, nil),
			func(r any) bool { return !r.(*CloseSessionTxn).Listed }, false},
		{"closeSession without its paths, with a digest", entry(wire.OpCloseSession, digest),
			func(r any) bool { return !r.(*CloseSessionTxn).Listed }, true},
		{"closeSession with its paths and a digest", entry(wire.OpCloseSession, func(e *wire.Encoder) { e.StringVector([]string{"/e"}); digest(e) }),
			func(r any) bool { c := r.(*CloseSessionTxn); return c.Listed && len(c.Paths) == 1 }, true},
		{"reconfig", entry(wire.OpReconfig, func(e *wire.Encoder) { e.String("/zookeeper/config"); e.Buffer([]byte("server.1=x")); e.Int32(-1) }),
			func(r any) bool { return r.(*SetDataTxn).Path == "/zookeeper/config" }, false},
		{"createTTL", entry(wire.OpCreateTTL, func(e *wire.Encoder) {
			e.String("/t")
			e.Buffer(nil)
			e.Int32(1)
			open[0].Encode(e)
			e.Int32(4)
			e.Int64(60000)
		}), func(r any) bool { c := r.(*CreateTTLTxn); return c.TTL == 60000 && c.Data == nil }, false},
		{"deleteContainer", entry(wire.OpDeleteContainer, func(e *wire.Encoder) { e.String("/c") }),
			func(r any) bool { return r.(*DeleteTxn).Path == "/c" }, false},
		{"error", entry(wire.OpError, func(e *wire.Encoder) { e.Int32(-101) }),
			func(r any) bool { return r.(*ErrorTxn).Err == -101 }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, rec, dig, err := DecodeEntry(c.body)
			if err != nil {
				t.Fatal(err)
			}
			if h.Zxid != 0x100000005 || h.Session != 0x42 || !c.check(rec) || (dig != nil) != c.digest {
				t.Fatalf("header %+v record %+v digest %+v", h, rec, dig)
			}
		})
	}
	if _, _, _, err := DecodeEntry(entry(42, nil)); !errors.Is(err, ErrUnknownTxn) {
		t.Fatalf("type 42: %v", err)
	}
	if _, _, _, err := DecodeEntry(entry(wire.OpSetData, func(e *wire.Encoder) { e.String("/a"); e.Int32(1) })); err == nil {
		t.Fatal("a cut setData decoded")
	}
}

// TestSnapshotTrailers: a snapshot as 3.4/3.5 end it (no digest), as 3.6
// to 3.8 (a digest) and as 3.9 (a digest, then the last zxid) reads back
// with what it holds.
func TestSnapshotTrailers(t *testing.T) {
	z := int64(0x1234)
	for _, c := range []struct {
		name   string
		digest *ZxidDigest
		last   *int64
	}{{"3.4", nil, nil}, {"3.8", &ZxidDigest{Zxid: z, Version: 2, Digest: 99}, nil}, {"3.9", &ZxidDigest{Zxid: z, Version: 2, Digest: 99}, &z}} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewSnapshotWriter(&buf)
			if err := w.Begin([]Session{{ID: 5, Timeout: 3000}}, [][]wire.ACL{OpenACL}); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"/", "/a"} {
				if err := w.Node(p, []byte(p), OpenACL, tree.StoredStat{Czxid: 1}); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.End(c.digest, c.last); err != nil {
				t.Fatal(err)
			}
			var h countingHandler
			tr, err := ReadSnapshot(bytes.NewReader(buf.Bytes()), &h)
			if err != nil || h.nodes != 2 || h.sessions != 1 {
				t.Fatalf("%v: %d nodes %d sessions", err, h.nodes, h.sessions)
			}
			if (tr.Digest == nil) != (c.digest == nil) || tr.HasLastZxid != (c.last != nil) || (c.last != nil && tr.LastZxid != z) {
				t.Fatalf("trailer %+v", tr)
			}
		})
	}
}
