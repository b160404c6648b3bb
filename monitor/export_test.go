package monitor

import (
	"testing"
	"time"

	"github.com/hutchzk/hutch/membership"
)

// MetricsFixture is a monitor over the fixture of a node in mode
// ("leader", "follower" or "standalone") that has answered four reads (1, 1, 3
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
	state, err := membership.ParseState(mode)
	if err != nil {
		tb.Fatal(err)
	}
	src := standalone()
	if state != Standalone {
		src = ensemble(state)
	}
	src.state.Stats.Durations = d.Read()
	return newMonitor(tb, src, Config{})
}
