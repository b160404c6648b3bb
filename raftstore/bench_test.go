package raftstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/hutchzk/hutch/zkdb"
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

// BenchmarkFollowerWrite times one write at a time proposed on a follower
// of a three-node cluster with its log on disk, from the forward until
// the follower's own state has applied it: the path of a lone client
// write, or a lock handoff, through a follower.
func BenchmarkFollowerWrite(b *testing.B) {
	nodes := startCluster(b, 3, func(c *Config) {
		c.DataDir = b.TempDir()
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
	})
	leader := waitLeader(b, 5*time.Second, nodes...)
	f := followers(nodes, leader)[0]
	seen := make(chan uint64, 16)
	f.app.mu.Lock()
	f.app.seen = seen
	f.app.mu.Unlock()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		cmd := createCommand(f.cfg.NodeID, fmt.Sprintf("/fw%d", i))
		cmd.Seq = uint64(i + 1)
		enc := encode(b, []zkdb.Command{cmd})
		start := time.Now()
		if err := f.Forward(context.Background(), enc); err != nil {
			b.Fatal(err)
		}
		timeout := time.After(10 * time.Second)
	wait:
		for {
			select {
			case seq := <-seen:
				if seq == cmd.Seq {
					break wait
				}
			case <-timeout:
				b.Fatalf("write %d not applied on the follower within 10s", i)
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
