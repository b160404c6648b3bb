package monitor

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/hutchzk/hutch/membership"
)

// Metrics, served at /metrics as ZooKeeper's PrometheusMetricsProvider
// serves them on metricsProvider.httpPort. Every value is read at scrape
// time from one snapshot, the one mntr reads, so the two agree and a
// scrape costs the request path nothing: the request latencies too are
// recorded into Durations with a lock-free Observe and copied into the
// snapshot.
//
// This package says which metrics there are and what they hold (Metrics),
// in plain values; how they are exposed is a MetricsProvider's business,
// plugged in by whoever serves them (package monitor/prometheus, which
// the hutch command plugs in, as ZooKeeper's metricsProvider.className
// names a class). So a program that embeds a server, or a test that
// imports hutchtest, does not link a metrics library it never serves.

// MetricsProvider makes the /metrics handler of a monitor.
type MetricsProvider func(*Monitor) http.Handler

// MetricType is the kind of a Metric, as Prometheus's.
type MetricType int

// The kinds of metric.
const (
	GaugeMetric MetricType = iota
	CounterMetric
	HistogramMetric
	SummaryMetric
)

// Metric is one sample of one metric: a gauge's or counter's Value, a
// histogram's Buckets, or a summary's Quantiles (with Count and Sum).
type Metric struct {
	Name, Help string
	Type       MetricType
	// Labels are the sample's label pairs: name, value, name, value...
	Labels []string
	Value  float64
	Count  uint64
	Sum    float64
	// Buckets are a histogram's cumulative counts by upper bound, the
	// +Inf bucket (Count) left out.
	Buckets []Bucket
	// Quantiles are a summary's values by quantile (NaN when empty).
	Quantiles []Quantile
}

// Bucket is one cumulative histogram bucket.
type Bucket struct {
	UpperBound float64
	Count      uint64
}

// Quantile is one summary quantile.
type Quantile struct{ Q, Value float64 }

// Logger is where a metrics provider reports what it cannot serve.
func (m *Monitor) Logger() *slog.Logger { return m.cfg.Logger }

// zkCounters are the mntr keys ZooKeeper exports as counters; the others
// are gauges, as ZooKeeper registers them.
var zkCounters = map[string]bool{"bytes_received_count": true}

// emitter adds one gauge or counter: name, help, type, value and label
// pairs.
type emitter func(name, help string, t MetricType, v float64, labels ...string)

// Metrics reads one snapshot and returns every metric the node has now.
// They change with the node's role (a leader has more).
func (m *Monitor) Metrics() []Metric {
	var out []Metric
	emit := func(name, help string, t MetricType, v float64, labels ...string) {
		out = append(out, Metric{Name: name, Help: help, Type: t, Value: v, Labels: labels})
	}
	v := m.take(PartStats | PartReplication)
	st := v.Stats

	// ZooKeeper's gauges, from mntr's own list so that the two agree.
	for _, kv := range monitorValues(v) {
		n, ok := metricNumber(kv.value)
		if !ok {
			continue // version, server_state
		}
		t := GaugeMetric
		if zkCounters[kv.key] {
			t = CounterMetric
		}
		emit(kv.key, "ZooKeeper's "+kv.key+", as mntr reports it.", t, n)
	}
	emit("hutch_bytes_sent_total", "Bytes written to clients (replies and notifications).", CounterMetric, float64(st.BytesSent))
	emit("hutch_txns_applied_total", "Transactions applied to this node's state.", CounterMetric, float64(st.Txns))
	emit("hutch_watch_notifications_total", "Watch notifications sent to this node's clients.", CounterMetric, float64(st.Notifications))
	emit("hutch_forwarded_writes_total", "Writes this node handed to another node, the Raft leader.", CounterMetric, float64(st.Forwarded))
	out = appendLatency(out, st.Durations)
	viewers, lost := m.hub.counts()
	emit("hutch_trace_viewers", "Event trace streams open (/trace, the live view's trace panel).", GaugeMetric, float64(viewers))
	emit("hutch_trace_dropped_total", "Trace events a stream's filter kept but it did not get: over its rate, or behind.", CounterMetric, float64(lost))
	emit("hutch_ui_pages_total", "Live view pages and panel redraws served.", CounterMetric, float64(m.pages.Load()))
	if b := m.src.Trace(); b != nil {
		if h := b.History(); h != nil {
			hs := h.Stats()
			emit("hutch_trace_history_events", "Trace events in the window the server keeps (--trace-history).", GaugeMetric, float64(hs.Events))
			emit("hutch_trace_history_bytes", "Bytes the trace's window holds (at most --trace-history-bytes).", GaugeMetric, float64(hs.Bytes))
			emit("hutch_trace_history_evicted_total", "Trace events that left the window, oldest first.", CounterMetric, float64(hs.Evicted))
		}
	}

	for _, mode := range []membership.State{membership.Standalone, membership.Leading, membership.Following, membership.Observing, membership.ReadOnly} {
		emit("hutch_server_state", "1 for this node's role (mntr's server_state), 0 for the others.",
			GaugeMetric, boolFloat(v.Mode == mode), "state", mode.String())
	}
	if v.Replication.Raft != nil {
		collectRaft(v, emit)
	}
	return out
}

// appendLatency adds the request-latency histograms, and ZooKeeper's
// readlatency and updatelatency summaries (milliseconds, quantiles 0.5,
// 0.9 and 0.99) estimated from them over the server's lifetime.
func appendLatency(out []Metric, durations [requestKinds]Histogram) []Metric {
	for k, h := range durations {
		buckets := make([]Bucket, len(h.Cumulative))
		for i, n := range h.Cumulative {
			buckets[i] = Bucket{latencyBuckets[i], n}
		}
		out = append(out, Metric{Name: "hutch_request_duration_seconds",
			Help: "Time from reading a request to queueing its reply, by kind: read, write (anything else but a ping) or ping.",
			Type: HistogramMetric, Labels: []string{"kind", requestKindNames[k]}, Count: h.Count, Sum: h.Sum, Buckets: buckets})
	}
	for _, s := range []struct {
		name string
		kind RequestKind
	}{{"readlatency", ReadRequest}, {"updatelatency", WriteRequest}} {
		h := durations[s.kind]
		var quantiles []Quantile
		for _, q := range []float64{0.5, 0.9, 0.99} {
			quantiles = append(quantiles, Quantile{q, h.quantile(q) * 1000})
		}
		out = append(out, Metric{Name: s.name,
			Help: "ZooKeeper's " + s.name + " in milliseconds; quantiles estimated from hutch_request_duration_seconds since start.",
			Type: SummaryMetric, Count: h.Count, Sum: h.Sum * 1000, Quantiles: quantiles})
	}
	return out
}

// collectRaft reports the Raft node: ZooKeeper's quorum_size and hutch's
// own hutch_raft_* gauges.
func collectRaft(v *view, emit emitter) {
	r := v.Replication
	voters := 0
	for _, mem := range r.Members {
		if mem.Voter {
			voters++
		}
	}
	number := func(key string) uint64 {
		n, _ := strconv.ParseUint(r.Raft[key], 10, 64)
		return n
	}
	gauge := func(name, help string, v float64) { emit("hutch_raft_"+name, help, GaugeMetric, v) }
	emit("quorum_size", "Voting members of the ensemble (ZooKeeper's quorum_size).", GaugeMetric, float64(voters))
	gauge("members", "Members of the Raft configuration, voters or not.", float64(len(r.Members)))
	gauge("voters", "Voting members of the Raft configuration.", float64(voters))
	gauge("is_leader", "1 on the Raft leader, 0 elsewhere.", boolFloat(v.Mode.Leads()))
	gauge("leader_id", "Node id of the leader this node knows; 0 when it knows none.", float64(r.LeaderID))
	gauge("term", "Current Raft term.", float64(r.Term))
	gauge("commit_index", "Highest log index known to be committed.", float64(number("commit_index")))
	gauge("applied_index", "Highest log index Raft has handed to the state machine.", float64(number("applied_index")))
	gauge("fsm_applied_index", "Highest log index applied to this node's state.", float64(number("fsm_applied_index")))
	last, first := number("last_log_index"), number("first_log_index")
	gauge("last_log_index", "Highest index in this node's log.", float64(last))
	gauge("first_log_index", "Lowest index still in this node's log (older entries are compacted into a snapshot).", float64(first))
	entries := 0.0
	if first > 0 && last >= first {
		entries = float64(last - first + 1)
	}
	gauge("log_entries", "Entries in this node's log: last_log_index - first_log_index + 1.", entries)
	gauge("last_snapshot_index", "Log index the newest snapshot covers.", float64(number("last_snapshot_index")))
	if ms := number("last_snapshot_unix_ms"); ms > 0 {
		gauge("last_snapshot_age_seconds", "Seconds since the newest snapshot was written.",
			v.Taken.Sub(time.UnixMilli(int64(ms))).Seconds())
	}
	if !r.LastContact.IsZero() {
		gauge("last_contact_seconds", "Seconds since this follower last heard from the leader.", v.Taken.Sub(r.LastContact).Seconds())
	}
	if r.DataDir != "" {
		gauge("log_bytes", "Size of the Raft log and stable store on disk.", float64(number("log_bytes")))
	}
}

// metricNumber reads an mntr value as a number; false for text.
func metricNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
