package prometheus

import (
	"bytes"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parse reads a text exposition.
func parse(tb testing.TB, text string) map[string]*dto.MetricFamily {
	tb.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		tb.Fatalf("%v\n%s", err, text)
	}
	return fams
}

// ours is this package's runtime and process families as text.
func ours(tb testing.TB) string {
	tb.Helper()
	proc, err := processMetrics()
	if err != nil {
		tb.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeText(&b, families(append(goMetrics(), proc...))); err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

// theirs is the Prometheus Go client's Go and process collectors' output,
// as hutch served it before this package wrote the format itself.
func theirs(tb testing.TB) string {
	tb.Helper()
	reg := prom.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	fams, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	var b bytes.Buffer
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			tb.Fatal(err)
		}
	}
	return b.String()
}

// TestRuntimeFamiliesMatchTheGoClient: the go_ and process_ families are
// the Prometheus Go client's, family for family: the same names, help,
// types and labels, in the same order, and the same values where they do
// not move between two reads. Values that do move (the memory the runtime
// holds grows while the race detector runs) are read before and after the
// Go client's read, and its value must lie between the two.
func TestRuntimeFamiliesMatchTheGoClient(t *testing.T) {
	before := ours(t)
	want, got := theirs(t), ours(t)
	headers := func(text string) []string {
		var out []string
		for line := range strings.SplitSeq(text, "\n") {
			if strings.HasPrefix(line, "# ") {
				out = append(out, line)
			}
		}
		return out
	}
	if w, g := strings.Join(headers(want), "\n"), strings.Join(headers(got), "\n"); w != g {
		t.Errorf("HELP and TYPE lines differ:\n got:\n%s\n want:\n%s", g, w)
	}
	wf, gf, bf := parse(t, want), parse(t, got), parse(t, before)
	for name, w := range wf {
		g := gf[name]
		if g == nil {
			continue // reported above
		}
		if len(g.GetMetric()) != len(w.GetMetric()) {
			t.Errorf("%s: %d samples, want %d", name, len(g.GetMetric()), len(w.GetMetric()))
			continue
		}
		for i, wm := range w.GetMetric() {
			gm := g.GetMetric()[i]
			if labels(gm) != labels(wm) {
				t.Errorf("%s: labels %s, want %s", name, labels(gm), labels(wm))
			}
		}
	}
	// Values that hold still between the two reads.
	for name, tolerance := range map[string]float64{
		"go_info": 0, "go_sched_gomaxprocs_threads": 0, "go_gc_gogc_percent": 0, "go_gc_gomemlimit_bytes": 0,
		"process_max_fds": 0, "process_virtual_memory_max_bytes": 0, "process_start_time_seconds": 0.02,
		"go_memstats_sys_bytes": 0.2, "go_memstats_next_gc_bytes": 0.5, "go_threads": 0.5,
	} {
		w, g, b := value(wf[name]), value(gf[name]), value(bf[name])
		low, high := math.Min(b, g), math.Max(b, g)
		if w < low-tolerance*math.Abs(low)-tolerance || w > high+tolerance*math.Abs(high)+tolerance || math.IsNaN(w+g+b) {
			t.Errorf("%s = %v before and %v after, the Go client reads %v between them", name, b, g, w)
		}
	}
}

func labels(m *dto.Metric) string {
	var b strings.Builder
	for _, l := range m.GetLabel() {
		b.WriteString(l.GetName() + "=" + l.GetValue() + ",")
	}
	return b.String()
}

func value(f *dto.MetricFamily) float64 {
	if f == nil || len(f.GetMetric()) == 0 {
		return math.NaN()
	}
	m := f.GetMetric()[0]
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	}
	return math.NaN()
}

// TestAcceptsGzip: gzip is used when the scraper accepts it.
func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		accept string
		gzip   bool
	}{{"", false}, {"gzip", true}, {"deflate, gzip;q=1.0", true}, {"gzip;q=0", false}, {"identity", false}} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		if tc.accept != "" {
			r.Header.Set("Accept-Encoding", tc.accept)
		}
		if acceptsGzip(r) != tc.gzip {
			t.Errorf("Accept-Encoding %q: gzip %v", tc.accept, !tc.gzip)
		}
	}
}
