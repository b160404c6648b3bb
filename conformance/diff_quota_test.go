package conformance

import (
	"flag"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/server"
)

// Quotas in the differential checker: random writes under subtrees with
// quotas, with the quota nodes themselves created, rewritten and deleted
// now and then, and the stats read often, on ZooKeeper and hutch with
// quotas enforced. Every reply is compared, so are the stats after each
// change, the QUOTAEXCEEDED refusals, and the MarshallingError of limits
// that do not parse.

var (
	diffQuotaSeeds = flag.Int("diff.quota.seeds", 3, "quota differential checker: number of seeds (1..N) TestDifferentialQuota runs")
	diffQuotaOps   = flag.Int("diff.quota.ops", 500, "quota differential checker: operations per seed")
)

// In op paths, diffQuotaRoot stands for the run's quota node,
// diffQuotaNode followed by the run's root: "@q/e/zookeeper_limits" is a
// quota on the run's /e.
const (
	diffQuotaRoot = "@q"
	diffQuotaNode = "/zookeeper/quota"
)

// diffQuotaPaths have quotas, none above another: deleting a quota that
// has another below it makes ZooKeeper forget the one below until it
// restarts, which hutch, whose quotas follow the tree, does not copy.
var diffQuotaPaths = []string{"/e", "/d/a", "/d/b"}

// diffQuotaLimits are limits the generator writes: soft, hard, both, and
// one that does not parse.
var diffQuotaLimits = []string{
	"count=3,bytes=-1=;byteHardLimit=-1;countHardLimit=-1",
	"count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=3",
	"count=-1,bytes=-1=;byteHardLimit=12;countHardLimit=-1",
	"count=-1,bytes=6=;byteHardLimit=-1;countHardLimit=-1",
	"count=2,bytes=5=;byteHardLimit=20;countHardLimit=4",
	"countHardLimit=1",
	"count=x",
}

// diffQuotaStats are stats the generator writes by hand, all parseable:
// ZooKeeper's apply path throws on stats it cannot read.
var diffQuotaStats = []string{"count=0,bytes=0", "count=5,bytes=1=;extra=2", "bytes=3"}

// generateQuotaDiffOps returns a preamble making the quota nodes' parents,
// then n ops: the usual mix, with quota node changes and stats reads
// weighted in.
func generateQuotaDiffOps(seed uint64, n int) []diffOp {
	g := newDiffGen(seed)
	ops := []diffOp{
		{Op: opCreate, Path: diffQuotaRoot},
		{Op: opCreate, Path: diffQuotaRoot + "/d"},
	}
	for _, p := range diffQuotaPaths {
		ops = append(ops, diffOp{Op: opCreate, Path: diffQuotaRoot + p})
	}
	for len(ops) < n {
		q := diffQuotaRoot + diffQuotaPaths[g.r.IntN(len(diffQuotaPaths))]
		limits, stats := q+"/zookeeper_limits", q+"/zookeeper_stats"
		var o diffOp
		switch g.pick(55, 15, 6, 6, 6, 3, 3, 6, 6) {
		case 0:
			o = g.op()
		case 1:
			o = diffOp{Op: opGetData, Path: stats}
		case 2:
			o = diffOp{Op: opGetData, Path: limits}
		case 3:
			o = diffOp{Op: opCreate, Path: limits, Data: diffQuotaLimits[g.r.IntN(len(diffQuotaLimits))]}
		case 4:
			o = diffOp{Op: opCreate, Path: stats, Data: "count=0,bytes=0"}
		case 5:
			o = diffOp{Op: opDelete, Path: []string{limits, stats}[g.r.IntN(2)], Version: -1}
		case 6:
			o = diffOp{Op: opSetData, Path: stats, Data: diffQuotaStats[g.r.IntN(len(diffQuotaStats))], Version: -1}
		case 7:
			o = diffOp{Op: opSetData, Path: limits, Data: diffQuotaLimits[g.r.IntN(len(diffQuotaLimits))], Version: -1}
		case 8:
			// Several writes under one quota in one multi: ZooKeeper checks
			// each against the usage before the multi.
			o = diffOp{Op: opMulti}
			base := q[len(diffQuotaRoot):]
			for range 2 + g.r.IntN(3) {
				sub := diffOp{Op: opCreate, Path: base + "/m" + strconv.Itoa(g.r.IntN(6))}
				if g.r.IntN(3) == 0 {
					sub = diffOp{Op: opSetData, Path: base, Version: -1}
				}
				sub.Data, sub.Null = g.data()
				o.Ops = append(o.Ops, sub)
			}
		}
		if o.Op != opAuth && o.Op != opReconnect {
			o.S = g.r.IntN(diffSessions)
		}
		ops = append(ops, o)
	}
	return ops
}

// quotaDiffCases are sequences worth running every time: what the random
// ones find only now and then.
var quotaDiffCases = map[string][]diffOp{
	// Each op of a multi is checked against the usage before the multi:
	// two creates that each fit pass together, past the hard limit.
	"multi checked against the usage before it": {
		{Op: opCreate, Path: diffQuotaRoot},
		{Op: opCreate, Path: diffQuotaRoot + "/e"},
		{Op: opCreate, Path: "/e", Data: "ab"},
		{Op: opCreate, Path: diffQuotaRoot + "/e/zookeeper_limits", Data: "count=-1,bytes=-1=;byteHardLimit=5;countHardLimit=2"},
		{Op: opCreate, Path: diffQuotaRoot + "/e/zookeeper_stats", Data: "count=0,bytes=0"},
		{Op: opMulti, Ops: []diffOp{{Op: opCreate, Path: "/e/m1", Data: "cd"}, {Op: opCreate, Path: "/e/m2", Data: "ef"}}},
		{Op: opGetData, Path: diffQuotaRoot + "/e/zookeeper_stats"},
		{Op: opMulti, Ops: []diffOp{{Op: opSetData, Path: "/e", Data: "a", Version: -1}, {Op: opCreate, Path: "/e/m3"}}},
		{Op: opMulti, Ops: []diffOp{{Op: opDelete, Path: "/e/m1", Version: -1}, {Op: opCreate, Path: "/e/m3"}}},
		{Op: opGetData, Path: diffQuotaRoot + "/e/zookeeper_stats"},
		{Op: opSetData, Path: "/e/m2", Data: "efg", Version: 7},
		{Op: opDelete, Path: "/e/m2", Version: -1},
		{Op: opSetData, Path: "/e", Data: "abc", Version: -1},
		{Op: opGetData, Path: diffQuotaRoot + "/e/zookeeper_stats"},
	},
	// Limits that do not parse fail a whole multi with MarshallingError,
	// and a single write with it.
	"unreadable limits": {
		{Op: opCreate, Path: diffQuotaRoot},
		{Op: opCreate, Path: diffQuotaRoot + "/e"},
		{Op: opCreate, Path: "/e"},
		{Op: opCreate, Path: diffQuotaRoot + "/e/zookeeper_limits", Data: "count=x"},
		{Op: opCreate, Path: diffQuotaRoot + "/e/zookeeper_stats", Data: "count=0,bytes=0"},
		{Op: opCreate, Path: "/e/x"},
		{Op: opMulti, Ops: []diffOp{{Op: opCreate, Path: "/f"}, {Op: opSetData, Path: "/e", Data: "x", Version: -1}}},
		{Op: opSetData, Path: "/e", Data: "", Version: -1}, // no change in size: not checked
		{Op: opDelete, Path: "/e/x", Version: -1},
		{Op: opGetData, Path: diffQuotaRoot + "/e/zookeeper_stats"},
	},
}

// TestDifferentialQuota runs quota sequences on ZooKeeper and hutch, both
// enforcing quotas, and fails with a shrunk sequence at the first
// difference. More: -diff.quota.seeds 40 -diff.quota.ops 1500 (about
// three minutes here, all agreeing).
func TestDifferentialQuota(t *testing.T) {
	zk := realzk.Start(t, realzk.SystemProperty("znode.container.checkIntervalMs", "36000000"),
		realzk.SystemProperty("zookeeper.enforceQuota", "true")).Addr
	hutch := startHutchConfig(t, server.Config{ContainerCheckInterval: 10 * time.Hour, EnforceQuota: true}, 0)
	e := newDiffEnv(zk, "zookeeper", hutch, "hutch")
	for name, ops := range quotaDiffCases {
		t.Run(name, func(t *testing.T) {
			m, refLines, candLines, err := e.compare(ops)
			if err != nil {
				t.Fatal(err)
			}
			if m != nil {
				t.Errorf("hutch differs from zookeeper at %s\nzookeeper:\n%s\nhutch:\n%s", m, transcriptString(refLines), transcriptString(candLines))
			}
		})
	}
	for seed := uint64(1); seed <= uint64(*diffQuotaSeeds); seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			ops := generateQuotaDiffOps(seed, *diffQuotaOps)
			start := time.Now()
			m, _, _, err := e.compare(ops)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("seed %d: %d ops on both targets in %v", seed, len(ops), time.Since(start).Round(time.Millisecond))
			if m != nil {
				reportDiff(t, e, fmt.Sprintf("Quota%d_%s", seed, m.Op.Op), seed, ops, m)
			}
		})
	}
}
