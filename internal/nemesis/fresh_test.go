package nemesis

import (
	"testing"
	"time"
)

// TestFreshCheck: a read is frozen when it misses a value acknowledged
// more than the bound before it began, and wrong when it returns one
// never sent.
func TestFreshCheck(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w := &freshWorkload{bound: time.Second, sent: 5}
	for v := 1; v <= 5; v++ {
		w.acked = append(w.acked, tickAck{value: v, at: t0.Add(time.Duration(v) * time.Second)})
	}
	w.reads = []freshRead{
		{start: t0.Add(3500 * time.Millisecond), value: 2}, // misses 3 (acked 0.5s before): within the bound
		{start: t0.Add(4500 * time.Millisecond), value: 2}, // misses 3 acked 1.5s before: frozen
		{start: t0.Add(6 * time.Second), value: 5},
		{start: t0.Add(6 * time.Second), value: 7},        // never sent
		{start: t0.Add(6 * time.Second), bad: `"x"`},      // not a counter
		{start: t0.Add(500 * time.Millisecond), value: 0}, // before any ack
	}
	res := w.check()
	if res.reads != 6 || res.frozen != 1 || res.wrong != 2 {
		t.Fatalf("reads %d frozen %d wrong %d, want 6 1 2: %v", res.reads, res.frozen, res.wrong, res.details)
	}
	if res.worst != 1500*time.Millisecond {
		t.Fatalf("stalest %v, want 1.5s", res.worst)
	}
}
