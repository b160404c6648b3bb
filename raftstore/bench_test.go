package raftstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// BenchmarkPropose measures committed batches per second with up to 128
// proposals in flight, on one in-memory node and on a loopback cluster.
func BenchmarkPropose(b *testing.B) {
	for _, size := range []int{1, 3} {
		for _, batch := range []int{1, 64} {
			name := fmt.Sprintf("nodes=%d/batch=%d", size, batch)
			b.Run(name, func(b *testing.B) {
				var leader *node
				if size == 1 {
					leader = openNode(b, testConfig(1), newTestApp())
					waitLeader(b, 5*time.Second, leader)
				} else {
					// Saturating two or three nodes on a few cores can starve
					// heartbeats; roomier timeouts keep the leader in place.
					nodes := startCluster(b, size, func(c *Config) {
						c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
					})
					leader = waitLeader(b, 5*time.Second, nodes...)
				}
				entries := encode(b, createBatch(1, "/bench/", batch))
				const window = 128
				inflight := make([]raft.ApplyFuture, 0, window)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if len(inflight) == window {
						if err := inflight[0].Error(); err != nil {
							b.Fatal(err)
						}
						inflight = inflight[1:]
					}
					inflight = append(inflight, leader.append(entries))
				}
				for _, f := range inflight {
					if err := f.Error(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "entries/s")
			})
		}
	}
}
