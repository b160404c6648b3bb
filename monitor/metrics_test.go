package monitor

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMetrics: Metrics reads one snapshot and reports what mntr does,
// hutch's own counters, the latency histograms and summaries, and on an
// ensemble member the Raft gauges. (The Prometheus exposition of the same
// fixtures is TestMetricsExposition's.)
func TestMetrics(t *testing.T) {
	var d Durations
	for _, ms := range []int{1, 1, 3, 20} {
		d.Observe(ReadRequest, time.Duration(ms)*time.Millisecond)
	}
	d.Observe(WriteRequest, 7*time.Millisecond)
	src := ensemble(Leader)
	src.state.Stats.Durations = d.Read()
	m := newMonitor(t, src, Config{})
	got := m.Metrics()
	if src.calls != 1 {
		t.Errorf("Metrics took %d snapshots, want 1", src.calls)
	}
	find := func(name string, labels ...string) Metric {
		t.Helper()
		i := slices.IndexFunc(got, func(mt Metric) bool { return mt.Name == name && slices.Equal(mt.Labels, labels) })
		if i < 0 {
			t.Fatalf("no metric %s%v", name, labels)
		}
		return got[i]
	}
	for _, want := range []struct {
		name  string
		typ   MetricType
		value float64
		label []string
	}{
		{"avg_latency", GaugeMetric, 0.3333, nil},
		{"bytes_received_count", CounterMetric, 300, nil},
		{"hutch_bytes_sent_total", CounterMetric, 900, nil},
		{"hutch_raft_is_leader", GaugeMetric, 1, nil},
		{"hutch_raft_log_entries", GaugeMetric, 40, nil},
		{"hutch_raft_members", GaugeMetric, 3, nil},
		{"hutch_raft_term", GaugeMetric, 4, nil},
		{"hutch_server_state", GaugeMetric, 0, []string{"state", "follower"}},
		{"hutch_server_state", GaugeMetric, 1, []string{"state", "leader"}},
		{"hutch_server_state", GaugeMetric, 0, []string{"state", "observer"}},
		{"hutch_server_state", GaugeMetric, 0, []string{"state", "read-only"}},
		{"hutch_txns_applied_total", CounterMetric, 31, nil},
		{"learners", GaugeMetric, 2, nil},
		{"quorum_size", GaugeMetric, 2, nil},
		{"synced_followers", GaugeMetric, 1, nil},
		{"uptime", GaugeMetric, 90000, nil},
		{"znode_count", GaugeMetric, 7, nil},
	} {
		mt := find(want.name, want.label...)
		if mt.Type != want.typ || mt.Value != want.value || mt.Help == "" {
			t.Errorf("%s%v: %v %v (help %q), want %v %v", want.name, want.label, mt.Type, mt.Value, mt.Help, want.typ, want.value)
		}
	}
	for kind, n := range map[string]uint64{"read": 4, "write": 1, "ping": 0} {
		h := find("hutch_request_duration_seconds", "kind", kind)
		if h.Type != HistogramMetric || h.Count != n || len(h.Buckets) != len(latencyBuckets) {
			t.Errorf("histogram %s: %d samples in %d buckets, want %d", kind, h.Count, len(h.Buckets), n)
		}
	}
	read := find("readlatency")
	if read.Type != SummaryMetric || read.Count != 4 || math.Abs(read.Sum-25) > 1e-9 || len(read.Quantiles) != 3 {
		t.Errorf("readlatency: %+v", read)
	}
	// The samples were 1, 1, 3 and 20ms: the median is in the bucket up
	// to 1ms, the 99th percentile in the one from 10 to 25ms.
	if q := read.Quantiles; math.Abs(q[0].Value-1) > 1e-9 || q[2].Value <= 10 || q[2].Value > 25 {
		t.Errorf("readlatency quantiles %v", q)
	}

	for _, mt := range newMonitor(t, standalone(), Config{}).Metrics() {
		if strings.HasPrefix(mt.Name, "hutch_raft_") || mt.Name == "quorum_size" || mt.Name == "synced_followers" {
			t.Errorf("a single node reports %s", mt.Name)
		}
	}
}

// TestDurations: a sample lands in the bucket whose bound is the first at
// or above it (bounds inclusive, as Prometheus's), past the last bound
// only in the count; a copy read while samples are recorded never has a
// bucket above its count; Observe allocates nothing.
func TestDurations(t *testing.T) {
	var d Durations
	d.Observe(ReadRequest, 100*time.Microsecond) // exactly the first bound
	d.Observe(ReadRequest, 101*time.Microsecond)
	d.Observe(ReadRequest, time.Minute)
	h := d.Read()[ReadRequest]
	if h.Count != 3 || h.Cumulative[0] != 1 || h.Cumulative[1] != 2 || h.Cumulative[len(latencyBuckets)-1] != 2 {
		t.Errorf("buckets %v, count %d", h.Cumulative, h.Count)
	}
	if math.Abs(h.Sum-60.000201) > 1e-9 {
		t.Errorf("sum %v", h.Sum)
	}
	if n := testing.AllocsPerRun(100, func() { d.Observe(WriteRequest, time.Millisecond) }); n != 0 {
		t.Errorf("Observe allocates %v times", n)
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
					d.Observe(PingRequest, time.Duration(i%5000)*time.Microsecond)
				}
			}
		})
	}
	for range 200 {
		h := d.Read()[PingRequest]
		if !slices.IsSorted(h.Cumulative) || h.Cumulative[len(h.Cumulative)-1] > h.Count {
			t.Fatalf("inconsistent copy: %v of %d", h.Cumulative, h.Count)
		}
	}
	close(stop)
	wg.Wait()
}

func TestHistogramQuantile(t *testing.T) {
	// hist spreads counts over the first buckets; the rest of the
	// samples lie past the last bound.
	hist := func(total uint64, counts ...uint64) Histogram {
		h := Histogram{Count: total, Cumulative: make([]uint64, len(latencyBuckets))}
		var sum uint64
		for i := range h.Cumulative {
			if i < len(counts) {
				sum += counts[i]
			}
			h.Cumulative[i] = sum
		}
		return h
	}
	for _, tc := range []struct {
		name string
		h    Histogram
		q    float64
		want float64
	}{
		{"empty", hist(0), 0.5, math.NaN()},
		{"all in the first bucket", hist(10, 10), 0.5, 0.00005},
		{"middle of the second bucket", hist(20, 10, 10), 0.75, 0.000175},
		{"top of the first bucket", hist(20, 10, 10), 0.5, 0.0001},
		{"beyond the last bound", hist(5), 0.99, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.h.quantile(tc.q)
			if math.Abs(got-tc.want) > 1e-12 && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
				t.Errorf("quantile %v = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

// metricValue is the value of m's metric name (the first sample).
func metricValue(tb testing.TB, m *Monitor, name string) float64 {
	tb.Helper()
	for _, mt := range m.Metrics() {
		if mt.Name == name {
			return mt.Value
		}
	}
	tb.Fatalf("no metric %s", name)
	return 0
}
