package monitor

import (
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
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

// gauges are the expected exposition of some of the leader fixture's
// gauges and counters: ZooKeeper's, from the mntr list, and hutch's own.
const gauges = `# HELP avg_latency ZooKeeper's avg_latency, as mntr reports it.
# TYPE avg_latency gauge
avg_latency 0.3333
# HELP bytes_received_count ZooKeeper's bytes_received_count, as mntr reports it.
# TYPE bytes_received_count counter
bytes_received_count 300
# HELP hutch_bytes_sent_total Bytes written to clients (replies and notifications).
# TYPE hutch_bytes_sent_total counter
hutch_bytes_sent_total 900
# HELP hutch_raft_is_leader 1 on the Raft leader, 0 elsewhere.
# TYPE hutch_raft_is_leader gauge
hutch_raft_is_leader 1
# HELP hutch_raft_log_entries Entries in this node's log: last_log_index - first_log_index + 1.
# TYPE hutch_raft_log_entries gauge
hutch_raft_log_entries 40
# HELP hutch_raft_members Members of the Raft configuration, voters or not.
# TYPE hutch_raft_members gauge
hutch_raft_members 3
# HELP hutch_raft_term Current Raft term.
# TYPE hutch_raft_term gauge
hutch_raft_term 4
# HELP hutch_server_state 1 for this node's role (mntr's server_state), 0 for the others.
# TYPE hutch_server_state gauge
hutch_server_state{state="follower"} 0
hutch_server_state{state="leader"} 1
hutch_server_state{state="standalone"} 0
# HELP hutch_txns_applied_total Transactions applied to this node's state.
# TYPE hutch_txns_applied_total counter
hutch_txns_applied_total 31
# HELP learners ZooKeeper's learners, as mntr reports it.
# TYPE learners gauge
learners 2
# HELP quorum_size Voting members of the ensemble (ZooKeeper's quorum_size).
# TYPE quorum_size gauge
quorum_size 2
# HELP synced_followers ZooKeeper's synced_followers, as mntr reports it.
# TYPE synced_followers gauge
synced_followers 1
# HELP uptime ZooKeeper's uptime, as mntr reports it.
# TYPE uptime gauge
uptime 90000
# HELP znode_count ZooKeeper's znode_count, as mntr reports it.
# TYPE znode_count gauge
znode_count 7
`

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
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{m})
	names := regexp.MustCompile(`(?m)^# TYPE (\S+)`).FindAllStringSubmatch(gauges, -1)
	var list []string
	for _, n := range names {
		list = append(list, n[1])
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(gauges), list...); err != nil {
		t.Error(err)
	}
	if src.calls != 1 {
		t.Errorf("a scrape took %d snapshots, want 1", src.calls)
	}

	got := scrape(t, m)
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
	// The samples were 1, 1, 3 and 20ms: the median is in the bucket up
	// to 1ms, the 99th percentile in the one from 10 to 25ms.
	if q := read.GetQuantile(); math.Abs(q[0].GetValue()-1) > 1e-9 || q[2].GetValue() <= 10 || q[2].GetValue() > 25 {
		t.Errorf("readlatency quantiles %v", q)
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
