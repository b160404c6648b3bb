package bench

import (
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/realzk"
)

var (
	restoreZnodes = flag.Int("restore.znodes", 1_000_000, "znodes BenchmarkCompareRestore creates before restarting the servers")
	restoreRounds = flag.Int("restore.rounds", 3, "restarts of each server in BenchmarkCompareRestore")
)

// BenchmarkCompareRestore: how fast a server comes back from its data
// directory holding -restore.znodes znodes of 100 bytes, 1,000 to a
// parent. Each server is filled through go-zookeeper, then killed with
// SIGKILL and started again, in turns, timed from exec until it serves
// (srvr answers with a mode; ZooKeeper answers ruok before its database is
// loaded); after each restart the last znode created and its parent's
// child count are read back, so the state did return. hutch is one node
// with --data-dir (raft-boltdb log and snapshots, fsynced), ZooKeeper is
// standalone with its defaults (forceSync, snapCount 100,000), its JVM as
// an operator runs it: both load their newest snapshot and replay the log
// after it.
//
//	go test -run '^$' -bench CompareRestore -benchtime 1x -timeout 60m ./bench
func BenchmarkCompareRestore(b *testing.B) {
	bin := realzk.BuildHutch(b)
	servers := []*struct {
		name string
		s    *realzk.Server
		took []float64 // ms
	}{
		{name: "hutch", s: realzk.StartHutchBinary(b, bin, "--max-client-conns", "0", "--data-dir", "data")},
		{name: "zookeeper", s: realzk.Start(b, realzk.OperatorJVM(*compareHeap))},
	}
	for _, sv := range servers {
		start := time.Now()
		last := fillZnodes(b, sv.s.Addr, *restoreZnodes)
		fmt.Printf("%s: %d znodes in %v; last %s\n", sv.name, *restoreZnodes, time.Since(start).Round(time.Millisecond), last)
	}
	last := fmt.Sprintf("/restore/p%04d/n%04d", (*restoreZnodes-1)/1000, (*restoreZnodes-1)%1000)
	for b.Loop() {
		for range *restoreRounds {
			for _, sv := range servers {
				if err := sv.s.Kill(); err != nil {
					b.Fatal(err)
				}
				n, took := sv.s.Relaunch(b, realzk.Serving)
				sv.s = n
				sv.took = append(sv.took, float64(took.Microseconds())/1000)
				kids := checkRestored(b, n.Addr, last)
				fmt.Printf("%s: serving %v after exec; %s is there, %d siblings\n", sv.name, took.Round(time.Millisecond), last, kids)
			}
		}
	}
	h, z := Median(servers[0].took), Median(servers[1].took)
	fmt.Printf("restart with %d znodes, median of %d: hutch %.0f ms, zookeeper %.0f ms, hutch / zookeeper %.2f×\n",
		*restoreZnodes, len(servers[0].took), h, z, Ratio(h, z))
	b.ReportMetric(h, "hutch-ms")
	b.ReportMetric(z, "zookeeper-ms")
}

// fillZnodes creates n znodes of 100 bytes under /restore, 1,000 to a
// parent, from 4 sessions with 64 creates outstanding each, and returns
// the last one's path.
func fillZnodes(tb testing.TB, addr string, n int) string {
	tb.Helper()
	const perParent, sessions, window = 1000, 4, 64
	conns := make([]*zk.Conn, sessions)
	for i := range conns {
		c, _, err := zk.Connect([]string{addr}, 30*time.Second, zk.WithLogInfo(false))
		if err != nil {
			tb.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conns[0].Create("/restore", nil, 0, acl); err != nil {
		tb.Fatal(err)
	}
	for p := 0; p*perParent < n; p++ {
		if _, err := conns[0].Create(fmt.Sprintf("/restore/p%04d", p), nil, 0, acl); err != nil {
			tb.Fatal(err)
		}
	}
	data := make([]byte, 100)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	deadline := time.Now().Add(20 * time.Minute)
	for i := range sessions * window {
		c := conns[i%sessions]
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= n || failed.Load() != nil || time.Now().After(deadline) {
					return
				}
				if _, err := c.Create(fmt.Sprintf("/restore/p%04d/n%04d", k/perParent, k%perParent), data, 0, acl); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		tb.Fatalf("fill %s: %v", addr, err)
	}
	if int(next.Load()) < n {
		tb.Fatalf("fill %s: only %d of %d znodes in 20 minutes", addr, next.Load(), n)
	}
	return fmt.Sprintf("/restore/p%04d/n%04d", (n-1)/perParent, (n-1)%perParent)
}

// checkRestored reads path back from a fresh session and returns its
// parent's child count.
func checkRestored(tb testing.TB, addr, path string) int32 {
	tb.Helper()
	c, _, err := zk.Connect([]string{addr}, 30*time.Second, zk.WithLogInfo(false))
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.Get(path); err != nil {
		tb.Fatalf("%s after restart: get %s: %v", addr, path, err)
	}
	_, st, err := c.Exists(path[:len(path)-len("/n0000")])
	if err != nil {
		tb.Fatal(err)
	}
	return st.NumChildren
}
