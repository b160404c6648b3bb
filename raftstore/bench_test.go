package raftstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
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
	for _, store := range LogStores {
		b.Run(store, func(b *testing.B) { benchmarkFollowerWrite(b, store) })
	}
}

func benchmarkFollowerWrite(b *testing.B, store string) {
	nodes := startCluster(b, 3, func(c *Config) {
		c.DataDir = b.TempDir()
		c.LogStore = store
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

// BenchmarkFollowerWriters: writers sessions on the followers of a
// three-node cluster each write one command at a time (forward, then
// wait until their follower applied it), for writes/s with each log
// store, and how many writes share an append: the entries per append on
// the leader and on the followers (each entry here is one write).
func BenchmarkFollowerWriters(b *testing.B) {
	for _, store := range append([]string{"memory"}, LogStores...) {
		for _, writers := range []int{16, 64} {
			b.Run(fmt.Sprintf("%s/writers=%d", store, writers), func(b *testing.B) { benchmarkFollowerWriters(b, store, writers) })
		}
	}
}

func benchmarkFollowerWriters(b *testing.B, store string, writers int) {
	counts := map[uint64]*countedLogs{}
	nodes := startCluster(b, 3, func(c *Config) {
		if store != "memory" {
			c.DataDir = b.TempDir()
			c.LogStore = store
		}
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
		counted := &countedLogs{}
		counts[c.NodeID] = counted
		c.wrapLogs = func(l raft.LogStore) raft.LogStore { counted.LogStore = l; return counted }
	})
	leader := waitLeader(b, 5*time.Second, nodes...)
	fs := followers(nodes, leader)
	perAppend := func(ns ...*node) float64 {
		var appends, entries int64
		for _, n := range ns {
			appends += counts[n.cfg.NodeID].appends.Load()
			entries += counts[n.cfg.NodeID].entries.Load()
		}
		return float64(entries) / float64(max(appends, 1))
	}
	for _, c := range counts {
		c.appends.Store(0)
		c.entries.Store(0)
	}
	type waiter struct {
		seq  uint64
		done chan struct{}
	}
	var mu sync.Mutex
	waiting := map[uint64]chan struct{}{}
	for _, f := range fs {
		seen := make(chan uint64, 4096)
		f.app.mu.Lock()
		f.app.seen = seen
		f.app.mu.Unlock()
		go func() {
			for seq := range seen {
				mu.Lock()
				if ch := waiting[seq]; ch != nil {
					close(ch)
					delete(waiting, seq)
				}
				mu.Unlock()
			}
		}()
	}
	var next atomic.Uint64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		f := fs[w%len(fs)]
		wg.Go(func() {
			for next.Add(1) <= uint64(b.N) {
				seq := next.Load()<<8 | uint64(w)
				cmd := createCommand(f.cfg.NodeID, fmt.Sprintf("/w%d-%d", w, seq))
				cmd.Seq = seq
				ch := make(chan struct{})
				mu.Lock()
				waiting[seq] = ch
				mu.Unlock()
				if err := f.Forward(context.Background(), encode(b, []zkdb.Command{cmd})); err != nil {
					b.Error(err)
					return
				}
				select {
				case <-ch:
				case <-time.After(10 * time.Second):
					b.Error("write not applied within 10s")
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
	b.ReportMetric(perAppend(leader), "leader-entries/append")
	b.ReportMetric(perAppend(fs...), "follower-entries/append")
}

// countedLogs counts appends and the entries they carry.
type countedLogs struct {
	raft.LogStore
	appends, entries atomic.Int64
}

func (c *countedLogs) StoreLog(l *raft.Log) error { return c.StoreLogs([]*raft.Log{l}) }

func (c *countedLogs) StoreLogs(ls []*raft.Log) error {
	c.appends.Add(1)
	c.entries.Add(int64(len(ls)))
	return c.LogStore.StoreLogs(ls)
}

// IsMonotonic passes on raft.MonotonicLogStore.
func (c *countedLogs) IsMonotonic() bool {
	m, ok := c.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// BenchmarkLogAppend times one stage of a replicated write alone: storing
// one entry of a lone write (a create of 100 bytes) in each log store as
// the server opens it, one append at a time, as Raft stores it on the
// leader and again on each follower before it answers. The kinds take
// turns append by append, so a machine whose load comes and goes weighs
// on each alike. A kind's p50, twice (leader, then follower, in series),
// is the disk's floor under a lone write (BenchmarkFollowerWrite).
func BenchmarkLogAppend(b *testing.B) {
	stores := make([]*logStore, len(LogStores))
	for k, kind := range LogStores {
		store, err := openLogStore(b.TempDir(), kind, testLogger())
		if err != nil {
			b.Fatal(err)
		}
		defer store.close()
		stores[k] = store
	}
	cmd := createCommand(1, "/append")
	data := zkdb.AppendEntry(nil, 1, encode(b, []zkdb.Command{cmd}))
	lat := make([][]time.Duration, len(stores))
	b.ResetTimer()
	for i := range b.N {
		for k, store := range stores {
			start := time.Now()
			if err := store.logs.StoreLogs([]*raft.Log{{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: data}}); err != nil {
				b.Fatal(err)
			}
			lat[k] = append(lat[k], time.Since(start))
		}
	}
	b.StopTimer()
	for k, kind := range LogStores {
		slices.Sort(lat[k])
		b.ReportMetric(float64(lat[k][len(lat[k])/2].Microseconds())/1000, kind+"-p50-ms")
		b.ReportMetric(float64(lat[k][len(lat[k])*99/100].Microseconds())/1000, kind+"-p99-ms")
	}
}

// BenchmarkFollowerWriteStages takes a lone write through a follower apart,
// one write at a time on a three-node cluster with its logs on disk
// (seglog, the default). From the forward (t0), in series:
//
//   - leader-append: the leader's log store returned (the frame's trip,
//     Raft's batching, the leader's write; with seglog its fsync runs
//     beside the stages after this one, parallel.go);
//   - follower-append: this follower's log store returned (the entry's
//     trip to it and its fsync);
//   - leader-apply: the leader applied it (the append's answer, the
//     commit, the FSM);
//   - follower-apply: this follower applied it (the commit notice, then
//     its own apply);
//
// and beside them forward: the leader's answer to the forward (Forward
// returns), which travels while the leader appends, and leader-sync: from
// leader-append until the leader's syncer has made the write durable
// (seglog's parallel appends), which runs beside follower-append: where
// the members share a disk, the two fsyncs contend. Each is reported as
// the p50 of its own duration, and the total's p50 and p99; the log
// store's own p50 (BenchmarkLogAppend) twice is the disk's floor under
// the total.
//
// Its second run adds 2 ms to each fsync of this follower's (before the
// sync of an append it makes durable before Raft hears of it), as a
// member on a slower disk than the others: the follower applies a
// noticed entry once written, so its own sync is off its client's path
// and the total should not grow by the delay.
func BenchmarkFollowerWriteStages(b *testing.B) {
	for _, delay := range []time.Duration{0, 2 * time.Millisecond} {
		b.Run(fmt.Sprintf("follower-sync-delay=%v", delay), func(b *testing.B) {
			benchmarkFollowerWriteStages(b, delay)
		})
	}
}

func benchmarkFollowerWriteStages(b *testing.B, delay time.Duration) {
	var (
		mu     sync.Mutex
		armed  bool
		stored = map[uint64]time.Time{} // node → when its first store after t0 returned
		synced = map[uint64]time.Time{} // node → when its first sync after t0 returned
		slow   atomic.Uint64            // the node whose syncs wait delay
	)
	nodes := startCluster(b, 3, func(c *Config) {
		c.DataDir = b.TempDir()
		id := c.NodeID
		c.beforeStoreSync = func() {
			if slow.Load() == id {
				time.Sleep(delay)
			}
		}
		c.onStored = func(uint64) {
			now := time.Now()
			mu.Lock()
			if _, ok := stored[id]; armed && !ok {
				stored[id] = now
			}
			mu.Unlock()
		}
		c.afterSync = func() {
			now := time.Now()
			mu.Lock()
			if _, ok := synced[id]; armed && !ok {
				synced[id] = now
			}
			mu.Unlock()
		}
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
	})
	leader := waitLeader(b, 5*time.Second, nodes...)
	f := followers(nodes, leader)[0]
	if delay > 0 {
		slow.Store(f.cfg.NodeID)
	}
	applied := func(n *node) chan time.Time {
		ch := make(chan time.Time, 16)
		n.app.mu.Lock()
		n.app.onApplied = func(uint64) {
			select {
			case ch <- time.Now():
			default:
			}
		}
		n.app.mu.Unlock()
		return ch
	}
	leaderApplied, followerApplied := applied(leader), applied(f)
	stages := []string{"forward", "leader-append", "follower-append", "leader-apply", "follower-apply"}
	lat := make([][]time.Duration, len(stages))
	var total, leaderSync []time.Duration
	skipped := 0
	b.ResetTimer()
	for i := range b.N {
		cmd := createCommand(f.cfg.NodeID, fmt.Sprintf("/st%d", i))
		enc := encode(b, []zkdb.Command{cmd})
		mu.Lock()
		clear(stored)
		clear(synced)
		armed = true
		mu.Unlock()
		t0 := time.Now()
		if err := f.Forward(context.Background(), enc); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		var tl, tf time.Time
		for _, w := range []struct {
			ch chan time.Time
			at *time.Time
		}{{leaderApplied, &tl}, {followerApplied, &tf}} {
			select {
			case *w.at = <-w.ch:
			case <-time.After(10 * time.Second):
				b.Fatalf("write %d not applied within 10s", i)
			}
		}
		mu.Lock()
		armed = false
		ls, fs := stored[leader.cfg.NodeID], stored[f.cfg.NodeID]
		lsync := synced[leader.cfg.NodeID]
		mu.Unlock()
		// The whole write counts whatever the order of its stages; since
		// a follower applies a noticed entry once written, its store may
		// return after its apply, and such a write is the quick kind.
		total = append(total, tf.Sub(t0))
		if ls.IsZero() || fs.IsZero() || ls.After(fs) || fs.After(tf) {
			// A snapshot, or the stores' order not what a lone write's
			// is: not a sample of the stages in series.
			skipped++
			continue
		}
		// The forward's answer travels back while the leader appends:
		// it is timed on its own; the rest are in series.
		lat[0] = append(lat[0], t1.Sub(t0))
		prev := t0
		for k, m := range []time.Time{ls, fs, tl, tf} {
			lat[k+1] = append(lat[k+1], m.Sub(prev))
			prev = m
		}
		if !lsync.IsZero() {
			leaderSync = append(leaderSync, lsync.Sub(ls))
		}
	}
	b.StopTimer()
	p := func(d []time.Duration, q int) float64 {
		if len(d) == 0 {
			return 0 // every sample skipped (b.N 1)
		}
		slices.Sort(d)
		return float64(d[len(d)*q/100].Microseconds()) / 1000
	}
	for k, name := range stages {
		b.ReportMetric(p(lat[k], 50), name+"-p50-ms")
	}
	b.ReportMetric(p(leaderSync, 50), "leader-sync-p50-ms")
	b.ReportMetric(p(total, 50), "total-p50-ms")
	b.ReportMetric(p(total, 99), "total-p99-ms")
	b.ReportMetric(float64(skipped), "skipped")
}
