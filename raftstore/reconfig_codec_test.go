package raftstore

import (
	"reflect"
	"testing"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// FuzzDecodeReconfigCall: any bytes decode without panicking, and a call
// that decodes encodes back to what decodes the same.
func FuzzDecodeReconfigCall(f *testing.F) {
	f.Add(encodeReconfigCall(reconfigCall{
		cmd: zkdb.Command{Origin: 2, Seq: 77, Conn: -3, Txn: tree.Txn{Session: 1 << 56,
			Auth: []wire.ID{{Scheme: "digest", ID: "super:D/InIHSb7yEEbrWz8b9l71RjZJU="}, {Scheme: "ip", ID: "127.0.0.1"}}}},
		body: []byte{0, 0, 0, 1, 'x'}, operator: true}))
	f.Add([]byte{})
	f.Add([]byte{1, 1, 1, 1, 0, 200, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, ok := decodeReconfigCall(b)
		if !ok {
			return
		}
		again, ok := decodeReconfigCall(encodeReconfigCall(c))
		if !ok || !reflect.DeepEqual(again, c) {
			t.Fatalf("decoded %+v, re-encoded and decoded %+v (%v)", c, again, ok)
		}
	})
}
