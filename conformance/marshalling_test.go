package conformance

import (
	"encoding/binary"
	"testing"

	"github.com/hutchzk/hutch/wire"
)

// rawBody is a request body given byte for byte.
type rawBody []byte

func (b rawBody) Encode(e *wire.Encoder) { e.Raw(b) }

// Decode is never used: rawBody is only sent.
func (rawBody) Decode(*wire.Decoder) {}

// TestUndecodableBodies sends requests whose bodies do not decode (a
// string or buffer length running past the end of the frame, a body cut
// short) and records what each server answers on that xid, whether a
// zxid was used, and whether the connection carries on.
func TestUndecodableBodies(t *testing.T) {
	// A path whose length prefix claims 1000 bytes but 3 follow.
	longPath := binary.BigEndian.AppendUint32(nil, 1000)
	longPath = append(longPath, "/ab"...)
	cases := []struct {
		name string
		op   wire.OpCode
		body rawBody
	}{
		{"getData path past frame", wire.OpGetData, longPath},
		{"exists path past frame", wire.OpExists, longPath},
		{"getChildren2 path past frame", wire.OpGetChildren2, longPath},
		{"create path past frame", wire.OpCreate, longPath},
		{"setData path past frame", wire.OpSetData, longPath},
		{"delete path past frame", wire.OpDelete, longPath},
		{"create cut after path", wire.OpCreate, rawBody(append(binary.BigEndian.AppendUint32(nil, 2), "/x"...))},
		{"getData empty body", wire.OpGetData, rawBody{}},
		{"setData data length past frame", wire.OpSetData, rawBody(binary.BigEndian.AppendUint32(append(binary.BigEndian.AppendUint32(nil, 2), "/x"...), 500))},
	}
	forEachTarget(t, func(t *testing.T, addr string, l *ledger) {
		c, err := dialDiff(addr, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.abandon()
		h, _, err := c.call(wire.OpCreate, &wire.CreateRequest{Path: "/x", Data: []byte("v"), ACL: []wire.ACL{{Perms: 31, ID: wire.ID{Scheme: "world", ID: "anyone"}}}})
		if err != nil || h.Err != wire.CodeOK {
			t.Fatalf("create /x: %v %v", h.Err, err)
		}
		base := h.Zxid
		for _, tc := range cases {
			c.xid++
			xid := c.xid
			if err := c.send(xid, tc.op, tc.body); err != nil {
				t.Fatalf("%s: send: %v", tc.name, err)
			}
			h, _, err := c.await(xid)
			if err != nil {
				l.record("%s: no reply (%v)", tc.name, err)
				c, err = dialDiff(addr, 0, nil)
				if err != nil {
					t.Fatal(err)
				}
				continue
			}
			l.record("%s: xid ok=%v err=%d zxid=base%+d", tc.name, h.Xid == xid, h.Err, h.Zxid-base)
			// The connection carries on: a read and a write both work.
			g, _, err := c.call(wire.OpExists, &wire.PathWatchRequest{Path: "/x"})
			l.record("%s: then exists err=%d (%v)", tc.name, g.Err, err != nil)
			w, _, err := c.call(wire.OpSetData, &wire.SetDataRequest{Path: "/x", Data: []byte("w"), Version: -1})
			l.record("%s: then setData err=%d zxid=base%+d (%v)", tc.name, w.Err, w.Zxid-base, err != nil)
			if err == nil {
				base = w.Zxid
			}
		}
	})
}
