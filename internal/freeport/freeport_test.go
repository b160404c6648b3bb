package freeport

import "testing"

// TestPickOutsideEphemeralRange: ports handed out lie below the kernel's
// range for outgoing connections' source ports, so a server a test
// restarts finds its port still free; none is handed out twice.
func TestPickOutsideEphemeralRange(t *testing.T) {
	lo, _ := ephemeralPorts()
	if lo-lowestPort < 1000 {
		t.Skipf("no room below the ephemeral range (it starts at %d)", lo)
	}
	seen := map[int]bool{}
	for range 50 {
		p, err := Pick("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if p < lowestPort || p >= lo {
			t.Fatalf("Pick gave %d, want within [%d, %d)", p, lowestPort, lo)
		}
		if seen[p] {
			t.Fatalf("Pick gave %d twice", p)
		}
		seen[p] = true
		if !bindable("127.0.0.1", p) {
			t.Fatalf("port %d is not free", p)
		}
	}
}
