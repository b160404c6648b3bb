package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/server"
)

// TestMain removes the hutch binary realzk.BuildHutch compiled.
func TestMain(m *testing.M) { realzk.Main(m) }

// benchTick is both servers' tickTime in these tests: a session may then
// ask for a one-second timeout, so the expiry part of the sessions
// workload takes about a second, not four.
const benchTick = 500 * time.Millisecond

// startHutch runs an in-process hutch on a free loopback port, without a
// limit on connections per address.
func startHutch(tb testing.TB) *server.Server {
	tb.Helper()
	s := server.New(server.Config{
		ListenAddr:          "127.0.0.1:0",
		TickTime:            benchTick,
		MaxClientConnsPerIP: -1,
		Logger:              slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err := s.Start(); err != nil {
		tb.Fatalf("start hutch: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// tinySizes makes every workload small enough that all of them, against
// two servers, run in seconds.
var tinySizes = []string{
	"--sessions", "4", "--acquisitions", "10", "--stock", "60", "--ops", "400", "--window", "8",
	"--watchers", "8", "--fanouts", "3", "--churn", "12", "--expire", "2", "--expire-timeout", "1s",
	"--znodes", "1500", "--max-time", "60s",
}

// jsonReport is Report as read back: null (unknown) numbers are nil.
type jsonReport struct {
	Target, Against struct {
		Connect string
		PIDs    []int
	}
	Rounds    int
	Workloads []struct {
		Name, Description, Error string
		Notes                    []string
		Figures                  []struct {
			Name, Unit, Better string
			Target, Against    struct {
				Median *float64
				Rounds []*float64
			}
			Ratio *float64
		}
	}
}

// TestRunEveryWorkloadAgainstZooKeeper runs every workload, tiny, with
// hutch as the target and real ZooKeeper as --against, two rounds each,
// and checks the report: every workload with its figures for both
// servers, rates above zero, percentiles in order, ratios defined, the
// servers taking turns, and no znode left behind on either.
func TestRunEveryWorkloadAgainstZooKeeper(t *testing.T) {
	h := startHutch(t)
	zks := realzk.Start(t, realzk.TickTime(benchTick))
	hutchAddr := h.Addr().String()
	args := append([]string{"--target", hutchAddr, "--against", zks.Addr,
		"--pid", strconv.Itoa(os.Getpid()), "--against-pid", strconv.Itoa(zks.PID),
		"--rounds", "2", "--warmup=false", "--json"}, tinySizes...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := Run(ctx, args, &stdout, &stderr, false)
	t.Logf("every workload, 2 rounds × 2 servers, in %v", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var rep jsonReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("the JSON report does not read: %v\n%s", err, stdout.String())
	}
	if rep.Target.Connect != hutchAddr || rep.Against.Connect != zks.Addr || !slices.Equal(rep.Against.PIDs, []int{zks.PID}) || rep.Rounds != 2 {
		t.Errorf("report header: target %+v, against %+v, rounds %d", rep.Target, rep.Against, rep.Rounds)
	}
	var names []string
	for _, w := range rep.Workloads {
		names = append(names, w.Name)
	}
	if want := strings.Split(workloadNames(), ", "); !slices.Equal(names, want) {
		t.Fatalf("workloads %q, want %q", names, want)
	}
	// The figures each workload must report, for both servers.
	headline := map[string]string{
		"lock": "handoffs/s", "stock": "decrements/s", "read-sync": "ops/s", "write-sync": "ops/s",
		"read-pipelined": "ops/s", "write-pipelined": "ops/s", "fanout": "events/s",
		"sessions": "sessions/s", "memory": "creates/s",
	}
	required := map[string][]string{
		"lock":     {"acquire p50", "acquire p99", "acquire max"},
		"stock":    {"acquire p50"},
		"fanout":   {"fan-out p50", "fan-out max", "delivery p50"},
		"sessions": {"create p50", "close p50", "expire p50", "expire max"},
		"memory":   {"create p50", "RSS before", "RSS after", "RSS growth per znode"},
	}
	for _, w := range []string{"read-sync", "write-sync", "read-pipelined", "write-pipelined"} {
		required[w] = []string{"p50", "p90", "p99", "p99.9", "max"}
	}
	for _, w := range rep.Workloads {
		if w.Error != "" {
			t.Errorf("%s failed: %s", w.Name, w.Error)
			continue
		}
		figs := map[string]int{}
		for i, f := range w.Figures {
			figs[f.Name] = i
			for side, s := range map[string]struct {
				Median *float64
				Rounds []*float64
			}{"target": f.Target, "against": f.Against} {
				if s.Median == nil || len(s.Rounds) != 2 || s.Rounds[0] == nil || s.Rounds[1] == nil {
					t.Errorf("%s %s: %s median %v over rounds %v, want two known rounds", w.Name, f.Name, side, s.Median, s.Rounds)
					continue
				}
				// RSS may shrink as well as grow: the target's pid is this
				// test process, whose garbage collector runs meanwhile.
				if (*s.Median < 0 && f.Name != "RSS growth per znode") || math.IsInf(*s.Median, 0) {
					t.Errorf("%s %s: %s median %v", w.Name, f.Name, side, *s.Median)
				}
				if lo, hi := min(*s.Rounds[0], *s.Rounds[1]), max(*s.Rounds[0], *s.Rounds[1]); *s.Median < lo || *s.Median > hi {
					t.Errorf("%s %s: %s median %v outside its rounds %v, %v", w.Name, f.Name, side, *s.Median, lo, hi)
				}
			}
			if f.Better == "higher" && (f.Ratio == nil || *f.Ratio <= 0) {
				t.Errorf("%s %s: ratio %v, want a positive number", w.Name, f.Name, f.Ratio)
			}
		}
		for _, name := range append([]string{headline[w.Name]}, required[w.Name]...) {
			if _, ok := figs[name]; !ok {
				t.Errorf("%s: no figure %q (has %v)", w.Name, name, figs)
			}
		}
		if i, ok := figs[headline[w.Name]]; ok {
			f := w.Figures[i]
			if f.Target.Median == nil || *f.Target.Median <= 0 || f.Against.Median == nil || *f.Against.Median <= 0 {
				t.Errorf("%s: %s is not above zero on both servers", w.Name, f.Name)
			}
		}
		// Percentiles of one distribution never decrease.
		for _, prefix := range []string{"", "acquire ", "create ", "close ", "fan-out "} {
			var last float64
			for _, q := range []string{"p50", "p90", "p99", "p99.9", "max"} {
				i, ok := figs[prefix+q]
				if !ok || w.Figures[i].Target.Rounds[0] == nil {
					continue
				}
				v := *w.Figures[i].Target.Rounds[0]
				if v < last {
					t.Errorf("%s: %s%s = %v below the percentile before it (%v)", w.Name, prefix, q, v, last)
				}
				last = v
			}
		}
	}
	checkTurns(t, stderr.String(), names, hutchAddr, zks.Addr)
	for _, addr := range []string{hutchAddr, zks.Addr} {
		checkNoRoot(t, addr)
	}
}

// checkTurns reads the progress lines and checks that each workload's runs
// went target, against, target, against.
func checkTurns(t *testing.T, progress string, names []string, target, against string) {
	t.Helper()
	runLine := regexp.MustCompile(`^(\S+) · (round \d+/\d+|warm-up) · (target|against) (\S+) · measure`)
	turns := map[string][]string{}
	for line := range strings.SplitSeq(progress, "\n") {
		m := runLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		want := map[string]string{"target": target, "against": against}[m[3]]
		if m[4] != want {
			t.Errorf("progress line %q names %s as %s, want %s", line, m[4], m[3], want)
		}
		// A measure phase longer than the printer's interval is printed
		// more than once: a turn is a change of run, not a line.
		turn := m[2] + " " + m[3]
		if ts := turns[m[1]]; len(ts) == 0 || ts[len(ts)-1] != turn {
			turns[m[1]] = append(ts, turn)
		}
	}
	want := []string{"round 1/2 target", "round 1/2 against", "round 2/2 target", "round 2/2 against"}
	for _, n := range names {
		if !slices.Equal(turns[n], want) {
			t.Errorf("%s ran %q, want %q", n, turns[n], want)
		}
	}
}

// checkNoRoot fails if a benchmark root is left on the server at addr.
func checkNoRoot(t *testing.T, addr string) {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(discardLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var kids []string
	for attempt := 0; ; attempt++ {
		if kids, _, err = c.Children("/"); err == nil || attempt == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond) // the session is still being set up
	}
	if err != nil {
		t.Fatalf("list / on %s: %v", addr, err)
	}
	for _, k := range kids {
		if strings.HasPrefix(k, "hutch-bench-") {
			t.Errorf("%s: /%s left behind", addr, k)
		}
	}
}

// TestMaxTimeBoundsARun: a workload that cannot finish within --max-time
// stops there, fails with that reason, and its znodes are still deleted.
func TestMaxTimeBoundsARun(t *testing.T) {
	h := startHutch(t)
	addr := h.Addr().String()
	const maxTime = 500 * time.Millisecond
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := Run(context.Background(), []string{"--target", addr, "--rounds", "1", "--warmup=false",
		"--max-time", maxTime.String(), "--sessions", "4", "--acquisitions", "100000000", "lock"}, &stdout, &stderr, false)
	took := time.Since(start)
	if err == nil {
		t.Fatalf("a lock workload of 400 million acquisitions finished within %v:\n%s", maxTime, stdout.String())
	}
	t.Logf("%v\n%s", err, stdout.String())
	if !strings.Contains(stdout.String(), "FAILED") || !strings.Contains(stdout.String(), "not done within --max-time 500ms") {
		t.Errorf("the table does not say the run hit --max-time:\n%s", stdout.String())
	}
	// Generous for a loaded machine; an unbounded run would take hours.
	if took > 30*time.Second {
		t.Errorf("the run took %v with --max-time %v", took, maxTime)
	}
	checkNoRoot(t, addr)
}
