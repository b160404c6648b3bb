package monitor

import (
	"testing"
	"time"
)

// MetricsFixture is a monitor over the fixture of a node in mode
// (Leader, Follower or Standalone) that has answered four reads (1, 1, 3
// and 20 ms), a write (7 ms) and a ping (30 s), for the tests of
// package monitor_test.
func MetricsFixture(tb testing.TB, mode string) *Monitor {
	tb.Helper()
	var d Durations
	for _, ms := range []int{1, 1, 3, 20} {
		d.Observe(ReadRequest, time.Duration(ms)*time.Millisecond)
	}
	d.Observe(WriteRequest, 7*time.Millisecond)
	d.Observe(PingRequest, 30*time.Second)
	src := standalone()
	if mode != Standalone {
		src = ensemble(mode)
	}
	src.state.Stats.Durations = d.Read()
	return newMonitor(tb, src, Config{})
}
