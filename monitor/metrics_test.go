package monitor

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads m's /metrics.
func scrape(tb testing.TB, m *Monitor) map[string]*dto.MetricFamily {
	tb.Helper()
	rec := httptest.NewRecorder()
	m.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return families
}

// value is a gauge's or counter's value, the first series whose labels
// include label=value when given.
func value(tb testing.TB, families map[string]*dto.MetricFamily, name string, label ...string) float64 {
	tb.Helper()
	for _, mt := range families[name].GetMetric() {
		if len(label) == 2 && !hasLabel(mt, label[0], label[1]) {
			continue
		}
		switch {
		case mt.Gauge != nil:
			return mt.Gauge.GetValue()
		case mt.Counter != nil:
			return mt.Counter.GetValue()
		}
	}
	tb.Fatalf("no %s%v", name, label)
	return 0
}

func hasLabel(mt *dto.Metric, name, value string) bool {
	for _, l := range mt.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// TestMetrics: a scrape reads one snapshot and reports what mntr does,
// the latency histograms and summaries, and on an ensemble member the
// Raft gauges.
func TestMetrics(t *testing.T) {
	d := NewDurations()
	for _, ms := range []int{1, 1, 3, 20} {
		d.Observe(ReadRequest, time.Duration(ms)*time.Millisecond)
	}
	d.Observe(WriteRequest, 7*time.Millisecond)
	src := ensemble(Leader)
	src.state.Stats.Durations = d.Read()
	m := newMonitor(t, src, Config{})
	got := scrape(t, m)
	if src.calls != 1 {
		t.Errorf("a scrape took %d snapshots, want 1", src.calls)
	}
	for name, want := range map[string]float64{
		"znode_count": 7, "bytes_received_count": 300, "num_alive_connections": 3, "avg_latency": 0.3333, "uptime": 90000,
		"synced_followers": 1, "learners": 2, "last_proposal_size": 50,
		"hutch_bytes_sent_total": 900, "hutch_txns_applied_total": 31, "hutch_watch_notifications_total": 2, "hutch_forwarded_writes_total": 0,
		"quorum_size": 2, "hutch_raft_members": 3, "hutch_raft_voters": 2, "hutch_raft_is_leader": 1, "hutch_raft_leader_id": 2,
		"hutch_raft_term": 4, "hutch_raft_commit_index": 40, "hutch_raft_log_entries": 40, "hutch_raft_first_log_index": 2,
	} {
		if v := value(t, got, name); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	if got["bytes_received_count"].GetType() != dto.MetricType_COUNTER || got["znode_count"].GetType() != dto.MetricType_GAUGE {
		t.Error("bytes_received_count is not a counter, or znode_count not a gauge, as in ZooKeeper")
	}
	for state, want := range map[string]float64{Standalone: 0, Leader: 1, Follower: 0} {
		if v := value(t, got, "hutch_server_state", "state", state); v != want {
			t.Errorf("hutch_server_state{state=%q} = %v", state, v)
		}
	}
	for _, mt := range got["hutch_request_duration_seconds"].GetMetric() {
		h := mt.GetHistogram()
		want := map[string]uint64{"read": 4, "write": 1, "ping": 0}[mt.GetLabel()[0].GetValue()]
		if h.GetSampleCount() != want || len(h.GetBucket()) != len(latencyBuckets)+1 { // and +Inf
			t.Errorf("histogram %v: %d samples in %d buckets, want %d", mt.GetLabel(), h.GetSampleCount(), len(h.GetBucket()), want)
		}
	}
	read := got["readlatency"].GetMetric()[0].GetSummary()
	if read.GetSampleCount() != 4 || math.Abs(read.GetSampleSum()-25) > 1e-9 || len(read.GetQuantile()) != 3 {
		t.Errorf("readlatency: %v", read)
	}
	if q := read.GetQuantile()[0]; q.GetQuantile() != 0.5 || q.GetValue() <= 0.5 || q.GetValue() > 2.5 {
		t.Errorf("readlatency median %v ms; the samples were 1, 1, 3 and 20", q.GetValue())
	}
	if _, ok := got["process_open_fds"]; !ok {
		t.Error("no process collector")
	}

	for name := range scrape(t, newMonitor(t, standalone(), Config{})) {
		if strings.HasPrefix(name, "hutch_raft_") || name == "quorum_size" || name == "synced_followers" {
			t.Errorf("a single node reports %s", name)
		}
	}
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
