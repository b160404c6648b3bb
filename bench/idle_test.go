package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
)

// BenchmarkIdleEnsemble measures what an idle three-member ensemble costs:
// the CPU time its processes use over idleFor with no client connected,
// once settled (start-up work done, and hutch's quiet timing in place,
// raftstore.DefaultQuietAfter), as a share of one core, for hutch and for
// a ZooKeeper quorum (its JVMs as an operator runs them), one after the
// other.
//
//	go test -run '^$' -bench IdleEnsemble -benchtime 1x ./bench
func BenchmarkIdleEnsemble(b *testing.B) {
	const settle, idleFor = 25 * time.Second, 30 * time.Second
	measure := func(name string, servers []*realzk.Server) {
		time.Sleep(settle) // let start-up work (elections, JIT) finish
		before := cpuOf(b, servers)
		time.Sleep(idleFor)
		used := cpuOf(b, servers) - before
		share := used.Seconds() / idleFor.Seconds() * 100
		fmt.Printf("%s: %.2f%% of one core (%v of CPU in %v, three processes)\n", name, share, used.Round(time.Millisecond), idleFor)
		b.ReportMetric(share, name+"-%core")
	}
	hutch := startHutchEnsemble(b, realzk.BuildHutch(b), 3)
	measure("hutch", hutch)
	for _, s := range hutch {
		_ = s.Stop()
	}
	zks := realzk.StartEnsemble(b, 3, realzk.OperatorJVM(*compareHeap))
	measure("zookeeper", zks)
}

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
