package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
)

// The side-by-side runs behind docs/performance.md: hutch bench's own
// workloads, rounds alternating between hutch and ZooKeeper 3.8 started
// here, ZooKeeper's JVM run as an operator would (realzk.OperatorJVM).
// They print hutch bench's tables; b.N is ignored (run with -benchtime 1x).
var (
	compareArgs = flag.String("compare.args", "", "extra hutch bench flags for the Compare benchmarks, e.g. \"--rounds 5\"")
	compareHeap = flag.String("compare.heap", "2g", "ZooKeeper's JVM heap in the Compare benchmarks")
	// compareDataIn puts both ensembles' data on another file system: on
	// tmpfs (/dev/shm) an fsync costs nothing, and the comparison is of
	// what the servers do around their disks.
	compareDataIn = flag.String("compare.datain", "", "keep both ensembles' data directories under this directory in BenchmarkCompareEnsemble (e.g. /dev/shm, to take the disk out of the comparison); default: the test's temporary directory")
	// compareLogStore picks the ensemble members' log store, e.g. "wal",
	// to measure the disk's share of a replicated write.
	compareLogStore = flag.String("compare.logstore", "", "the log store of the hutch members in BenchmarkCompareEnsemble (default: hutch's own)")
)

// runBench runs hutch bench with args and fails b if a workload failed.
func runBench(b *testing.B, args ...string) {
	b.Helper()
	args = append(args, strings.Fields(*compareArgs)...)
	fmt.Printf("\n$ hutch bench %s\n", strings.Join(args, " "))
	if err := Run(context.Background(), args, os.Stdout, os.Stderr, false); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCompareSingle: one in-memory hutch (the binary, no flags but
// its address) against a standalone ZooKeeper with forceSync=no, so
// neither waits for a disk: every workload but memory, the synchronous
// ones again with one session, the fan-out with 1,000 watchers, then
// memory on fresh servers of each.
//
//	go test -run '^$' -bench CompareSingle -benchtime 1x -timeout 60m ./bench
func BenchmarkCompareSingle(b *testing.B) {
	bin := realzk.BuildHutch(b)
	start := func() (hutch, zk *realzk.Server) {
		zk = realzk.Start(b, realzk.OperatorJVM(*compareHeap), realzk.SystemProperty("zookeeper.forceSync", "no"))
		hutch = realzk.StartHutchBinary(b, bin, "--max-client-conns", "0") // as realzk's ZooKeeper: maxClientCnxns=0
		return hutch, zk
	}
	hutch, zk := start()
	pids := []string{"--pid", strconv.Itoa(hutch.PID), "--against-pid", strconv.Itoa(zk.PID)}
	runBench(b, append([]string{"--target", hutch.Addr, "--against", zk.Addr},
		append(pids, "lock", "stock", "read-sync", "write-sync", "read-pipelined", "write-pipelined", "fanout", "sessions")...)...)
	// A lone session: the latency of one request at a time.
	runBench(b, append([]string{"--target", hutch.Addr, "--against", zk.Addr, "--sessions", "1"},
		append(pids, "read-sync", "write-sync")...)...)
	// The goal's fan-out: a thousand watchers (sessions given longer to
	// ping, a thousand of them sharing two cores with both servers).
	runBench(b, append([]string{"--target", hutch.Addr, "--against", zk.Addr, "--watchers", "1000", "--session-timeout", "30s"},
		append(pids, "fanout")...)...)
	_ = hutch.Stop()
	_ = zk.Stop()

	hutch, zk = start()
	runBench(b, "--target", hutch.Addr, "--pid", strconv.Itoa(hutch.PID),
		"--against", zk.Addr, "--against-pid", strconv.Itoa(zk.PID),
		"--rounds", "1", "--warmup=false", "memory")
}

// BenchmarkCompareEnsemble: three hutch processes (raft-boltdb logs in
// data directories on this machine's disk, fsynced) against a
// three-server ZooKeeper quorum (its transaction log fsynced, as by
// default): synchronous writes from 16 and 256 sessions spread over the
// members, and one session writing through a follower.
//
//	go test -run '^$' -bench CompareEnsemble -benchtime 1x -timeout 60m ./bench
func BenchmarkCompareEnsemble(b *testing.B) {
	bin := realzk.BuildHutch(b)
	zkOpts := []realzk.Option{realzk.OperatorJVM(*compareHeap)}
	if *compareDataIn != "" {
		zkOpts = append(zkOpts, realzk.DataIn(*compareDataIn))
	}
	zks := realzk.StartEnsemble(b, 3, zkOpts...)
	hutches := startHutchEnsemble(b, bin, 3)
	connect := func(ss []*realzk.Server) string {
		var addrs []string
		for _, s := range ss {
			addrs = append(addrs, s.Addr)
		}
		return strings.Join(addrs, ",")
	}
	follower := func(ss []*realzk.Server) string {
		for _, s := range ss {
			if realzk.Mode(s.Addr, 2*time.Second) == "follower" {
				return s.Addr
			}
		}
		b.Fatal("no follower")
		return ""
	}
	// Every member's CPU counts: server CPU per write is the ensemble's.
	pids := func(ss []*realzk.Server) string {
		var ids []string
		for _, s := range ss {
			ids = append(ids, strconv.Itoa(s.PID))
		}
		return strings.Join(ids, ",")
	}
	for _, sessions := range []string{"16", "256"} {
		runBench(b, "--target", connect(hutches), "--pid", pids(hutches), "--against", connect(zks), "--against-pid", pids(zks),
			"--sessions", sessions, "write-sync")
	}
	runBench(b, "--target", follower(hutches), "--pid", pids(hutches), "--against", follower(zks), "--against-pid", pids(zks),
		"--sessions", "1", "--ops", "5000", "write-sync")
}

// startHutchEnsemble runs n hutch processes as one Raft ensemble, each
// with a data directory, and returns once one of them leads.
func startHutchEnsemble(b *testing.B, bin string, n int) []*realzk.Server {
	b.Helper()
	base := b.TempDir()
	if *compareDataIn != "" {
		dir, err := os.MkdirTemp(*compareDataIn, "hutch-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		base = dir
	}
	secret := filepath.Join(base, "secret")
	if err := os.WriteFile(secret, []byte("compare ensemble secret"), 0o600); err != nil {
		b.Fatal(err)
	}
	var peers []string
	raft := make([]string, n)
	for i := range n {
		raft[i] = "127.0.0.1:" + strconv.Itoa(realzk.FreePort(b))
		peers = append(peers, fmt.Sprintf("%d=%s", i+1, raft[i]))
	}
	servers := make([]*realzk.Server, n)
	for i := range n {
		servers[i] = realzk.StartHutchBinary(b, bin, "--id", strconv.Itoa(i+1), "--raft-listen", raft[i],
			"--peers", strings.Join(peers, ","), "--data-dir", filepath.Join(base, strconv.Itoa(i+1)),
			"--peer-secret-file", secret, "--max-client-conns", "0", "--log-store", *compareLogStore)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, s := range servers {
			if realzk.Mode(s.Addr, time.Second) == "leader" {
				return servers
			}
		}
		if time.Now().After(deadline) {
			b.Fatal("no hutch member leads 30s after start")
		}
		time.Sleep(100 * time.Millisecond) // polling other processes
	}
}
