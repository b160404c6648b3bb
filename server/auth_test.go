package server

import (
	"testing"

	"github.com/hutchzk/hutch/wire"
)

func TestJavaSetOrderIsStableWithinABucket(t *testing.T) {
	ids := []wire.ID{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: "digest", ID: "a:1"}, {Scheme: "digest", ID: "b:2"}}
	again := append([]wire.ID(nil), ids...)
	javaSetOrder(ids)
	javaSetOrder(again)
	for i := range ids {
		if ids[i] != again[i] {
			t.Fatalf("order not deterministic: %v vs %v", ids, again)
		}
	}
}
