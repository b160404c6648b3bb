package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
)

// BenchmarkIdleEnsemble measures what an idle three-member ensemble costs:
// the CPU time its processes use with no client connected, as a share of
// one core, for hutch and for a ZooKeeper quorum (its JVMs as an operator
// runs them). Both run at once, settle (start-up work done, JIT warm,
// hutch's quiet timing in place: raftstore.DefaultQuietAfter), and are
// then measured over the same idleRounds windows; each figure is the
// median of the windows, and the ratio is hutch / ZooKeeper.
//
//	go test -run '^$' -bench IdleEnsemble -benchtime 1x ./bench
func BenchmarkIdleEnsemble(b *testing.B) {
	const settle, window, idleRounds = 25 * time.Second, 15 * time.Second, 3
	hutch := startHutchEnsemble(b, realzk.BuildHutch(b), 3)
	zks := realzk.StartEnsemble(b, 3, realzk.OperatorJVM(*compareHeap))
	time.Sleep(settle) // let start-up work (elections, JIT) finish
	var hutchShares, zkShares []float64
	for round := range idleRounds {
		h0, z0 := cpuOf(b, hutch), cpuOf(b, zks)
		time.Sleep(window) // measuring what idle processes use meanwhile
		h, z := share(cpuOf(b, hutch)-h0, window), share(cpuOf(b, zks)-z0, window)
		fmt.Printf("window %d/%d (%v): hutch %.2f%%, zookeeper %.2f%% of one core (three processes each)\n", round+1, idleRounds, window, h, z)
		hutchShares, zkShares = append(hutchShares, h), append(zkShares, z)
	}
	h, z := Median(hutchShares), Median(zkShares)
	fmt.Printf("idle, median of %d windows: hutch %.2f%%, zookeeper %.2f%% of one core, hutch / zookeeper %.2f\n", idleRounds, h, z, Ratio(h, z))
	b.ReportMetric(h, "hutch-%core")
	b.ReportMetric(z, "zookeeper-%core")
}

// share is CPU time used over a window as a percentage of one core.
func share(used, window time.Duration) float64 { return used.Seconds() / window.Seconds() * 100 }

// cpuOf sums the user and system CPU time of the servers' processes.
func cpuOf(b *testing.B, servers []*realzk.Server) time.Duration {
	b.Helper()
	var sum time.Duration
	for _, s := range servers {
		cpu, err := processCPU(s.PID)
		if err != nil {
			b.Fatal(err)
		}
		sum += cpu
	}
	return sum
}
