package server

import (
	"testing"

	"github.com/hutchzk/hutch/wire"
)

func TestJavaStringHash(t *testing.T) {
	// Values of String.hashCode() in Java.
	for _, tt := range []struct {
		s    string
		want int32
	}{
		{"", 0}, {"hello", 99162322}, {"digest", -1331913276}, {"ip", 3367}, {"é€", 15587}, {"😀", 1772899}, // the last is a surrogate pair
	} {
		if got := javaStringHash(tt.s); got != tt.want {
			t.Errorf("javaStringHash(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}

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
