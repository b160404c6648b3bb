package conformance

import (
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/server"
	"github.com/hutchzk/hutch/wire"
)

var (
	diffSeeds     = flag.Int("diff.seeds", 5, "differential checker: number of seeds (1..N) TestDifferential runs")
	diffOpsN      = flag.Int("diff.ops", 2000, "differential checker: operations per seed")
	diffSeed      = flag.Uint64("diff.seed", 0, "differential checker: run only this seed (to replay a failure)")
	diffSave      = flag.Bool("diff.save", false, "differential checker: save shrunk differences as JSON under testdata/diff")
	diffMaxProbes = flag.Int("diff.probes", 400, "differential checker: most probes when shrinking one difference")
)

// startDiffZooKeeper starts the reference for differential runs. The
// container reaper is pushed out of reach: it runs on a timer, so empty
// containers and TTL nodes vanishing at its whim would make runs
// nondeterministic.
func startDiffZooKeeper(tb testing.TB) string {
	tb.Helper()
	return realzk.Start(tb, realzk.SystemProperty("znode.container.checkIntervalMs", "36000000")).Addr
}

// startDiffHutch starts hutch in-process with the same reaper setting.
func startDiffHutch(tb testing.TB) string {
	tb.Helper()
	logs := newLogBuffer()
	srv := server.New(server.Config{
		ListenAddr:             "127.0.0.1:0",
		ContainerCheckInterval: 10 * time.Hour,
		Logger:                 slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err := srv.Start(); err != nil {
		tb.Fatalf("start hutch: %v", err)
	}
	dumpOnFailure(tb, "hutch log", logs)
	tb.Cleanup(func() {
		if err := srv.Close(); err != nil {
			tb.Errorf("close hutch: %v", err)
		}
	})
	return srv.Addr().String()
}

func newDiffEnv(ref, refName, cand, candName string) *diffEnv {
	return &diffEnv{ref: ref, refN: refName, cand: cand, candN: candName, maxProbes: *diffMaxProbes, shrinkTimeout: 30 * time.Second}
}

// reportDiff shrinks a difference and reports it as a test failure with the
// minimal sequence as Go source.
func reportDiff(t *testing.T, e *diffEnv, name string, seed uint64, ops []diffOp, m *diffMismatch) {
	t.Helper()
	before := m.Index + 1
	start, probes := time.Now(), e.probes
	small, sm := e.shrink(t, ops, m)
	_, refLines, candLines, err := e.compare(small)
	if err != nil {
		t.Fatalf("replay shrunk sequence: %v", err)
	}
	t.Errorf("%s differs from %s at %s\nshrunk from %d to %d ops in %v (%d probes); minimal sequence:\n%s\n%s transcript:\n%s\n%s transcript:\n%s",
		e.candN, e.refN, m, before, len(small), time.Since(start).Round(time.Millisecond), e.probes-probes,
		diffRegressionGo(name, small), e.refN, transcriptString(refLines), e.candN, transcriptString(candLines))
	if *diffSave {
		file, err := saveDiffCase(diffCase{Name: name, Seed: seed, Note: fmt.Sprintf("%s differs from %s at op #%d", e.candN, e.refN, sm.Index), Ops: small})
		if err != nil {
			t.Errorf("save: %v", err)
		} else {
			t.Logf("saved %s", file)
		}
	}
}

func diffSeedList() []uint64 {
	if *diffSeed != 0 {
		return []uint64{*diffSeed}
	}
	seeds := make([]uint64, *diffSeeds)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

// TestDifferential generates op sequences from seeds, runs each against
// real ZooKeeper and hutch, and fails with a shrunk sequence at the first
// difference of each seed. One ZooKeeper and one hutch serve every seed,
// each seed under its own root. Replay one seed with
// -run TestDifferential -diff.seed N; run more with -diff.seeds and -diff.ops.
func TestDifferential(t *testing.T) {
	zkAddr := startDiffZooKeeper(t)
	e := newDiffEnv(zkAddr, "zookeeper", startDiffHutch(t), "hutch")
	for _, seed := range diffSeedList() {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			ops := generateDiffOps(seed, *diffOpsN)
			start := time.Now()
			m, _, _, err := e.compare(ops)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("seed %d: %d ops on both targets in %v", seed, len(ops), time.Since(start).Round(time.Millisecond))
			if m != nil {
				reportDiff(t, e, fmt.Sprintf("Seed%d_%s", seed, m.Op.Op), seed, ops, m)
			}
		})
	}
}

// TestDifferentialDeterministic runs one seed twice on the same server, for
// ZooKeeper and for hutch: any difference there is the checker's own
// nondeterminism (timing, leaked state between roots), not a bug of the
// server.
func TestDifferentialDeterministic(t *testing.T) {
	const seed, n = 7, 600
	ops := generateDiffOps(seed, n)
	for _, tg := range []struct {
		name  string
		start func(testing.TB) string
	}{{"zookeeper", startDiffZooKeeper}, {"hutch", startDiffHutch}} {
		t.Run(tg.name, func(t *testing.T) {
			addr := tg.start(t)
			e := newDiffEnv(addr, tg.name+" run 1", addr, tg.name+" run 2")
			m, _, _, err := e.compare(ops)
			if err != nil {
				t.Fatal(err)
			}
			if m != nil {
				t.Errorf("the same %d ops differ between two runs on %s: %s", n, tg.name, m)
			}
		})
	}
}

// TestDifferentialCatchesInjectedBug proves the checker finds and shrinks a
// bug: the candidate is hutch behind a proxy that drops every NodeDeleted
// notification, the reference hutch itself. The checker must report a
// difference and shrink it to the three ops that matter (create, watch,
// delete) plus at most a couple more.
func TestDifferentialCatchesInjectedBug(t *testing.T) {
	hutchAddr := startDiffHutch(t)
	proxied := startFaultProxy(t, hutchAddr, func(ev wire.WatcherEvent) bool {
		return ev.Type == wire.EventNodeDeleted
	})
	e := newDiffEnv(hutchAddr, "hutch", proxied, "hutch+fault")
	ops := generateDiffOps(1, 1000)
	m, _, _, err := e.compare(ops)
	if err != nil {
		t.Fatal(err)
	}
	if m == nil {
		t.Fatal("no difference found with NodeDeleted notifications dropped")
	}
	before := m.Index + 1
	small, sm := e.shrink(t, ops, m)
	t.Logf("injected bug found at op #%d, shrunk from %d to %d ops in %d probes:\n%s\n%s",
		m.Index, before, len(small), e.probes, sm, diffOpsGo(small, ""))
	if !strings.Contains(sm.Ref, "ev 2/") {
		t.Errorf("shrunk difference is not a missing NodeDeleted event: %s", sm)
	}
	if len(small) > 5 {
		t.Errorf("shrunk to %d ops, want at most 5", len(small))
	}
}

// TestDiffReplay replays every sequence saved under testdata/diff against
// ZooKeeper and hutch.
func TestDiffReplay(t *testing.T) {
	cases := loadDiffCases(t)
	if len(cases) == 0 {
		t.Skip("no saved sequences under " + diffTestdata)
	}
	e := newDiffEnv(startDiffZooKeeper(t), "zookeeper", startDiffHutch(t), "hutch")
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			m, refLines, candLines, err := e.compare(c.Ops)
			if err != nil {
				t.Fatal(err)
			}
			if m != nil {
				t.Errorf("%s: hutch differs from zookeeper at %s\nzookeeper:\n%s\nhutch:\n%s", c.Note, m, transcriptString(refLines), transcriptString(candLines))
			}
		})
	}
}

// checkDiffRegression runs one sequence on a fresh ZooKeeper and hutch and
// fails at the first difference. TestDiffRegression_* tests call it with
// sequences the checker shrank.
func checkDiffRegression(t *testing.T, ops []diffOp) {
	t.Helper()
	e := newDiffEnv(startDiffZooKeeper(t), "zookeeper", startDiffHutch(t), "hutch")
	m, refLines, candLines, err := e.compare(ops)
	if err != nil {
		t.Fatal(err)
	}
	if m != nil {
		t.Errorf("hutch differs from zookeeper at %s\nzookeeper:\n%s\nhutch:\n%s", m, transcriptString(refLines), transcriptString(candLines))
	}
}
