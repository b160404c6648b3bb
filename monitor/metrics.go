package monitor

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Prometheus metrics, served at /metrics as ZooKeeper's
// PrometheusMetricsProvider serves them on metricsProvider.httpPort. Every
// value is read at scrape time from one snapshot, the one mntr reads, so
// the two agree and a scrape costs the request path nothing: the request
// latencies too are recorded into Durations with a lock-free Observe and
// copied into the snapshot.

// MetricsHandler serves /metrics: the collector over this monitor's
// Source, and client_golang's Go runtime and process collectors (memory,
// goroutines, open and maximum file descriptors), in a registry of its
// own, never the global default: one process may run many servers.
func (m *Monitor) MetricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collector{m},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      slogErrorLog{m},
		ErrorHandling: promhttp.ContinueOnError,
	}))
	return mux
}

// slogErrorLog hands promhttp's errors to the monitor's logger.
type slogErrorLog struct{ m *Monitor }

func (l slogErrorLog) Println(v ...any) { l.m.cfg.Logger.Warn("metrics", "err", fmt.Sprint(v...)) }

// zkCounters are the mntr keys ZooKeeper exports as counters; the others
// are gauges, as ZooKeeper registers them.
var zkCounters = map[string]bool{"bytes_received_count": true}

// collector reads one snapshot per scrape. Its metrics change with the
// node's role (a leader has more), so it describes none in advance: the
// registry checks them as they are collected.
type collector struct{ m *Monitor }

func (collector) Describe(chan<- *prometheus.Desc) {}

// emitter sends one metric: name, help, type, value and label pairs.
type emitter func(name, help string, t prometheus.ValueType, v float64, labels ...string)

func (c collector) Collect(ch chan<- prometheus.Metric) {
	emit := func(name, help string, t prometheus.ValueType, v float64, labels ...string) {
		var names, values []string
		for i := 0; i+1 < len(labels); i += 2 {
			names, values = append(names, labels[i]), append(values, labels[i+1])
		}
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, names, nil), t, v, values...)
	}
	v := c.m.take(PartStats | PartReplication)
	st := v.Stats

	// ZooKeeper's gauges, from mntr's own list so that the two agree.
	for _, kv := range monitorValues(v) {
		n, ok := metricNumber(kv.value)
		if !ok {
			continue // version, server_state
		}
		t := prometheus.GaugeValue
		if zkCounters[kv.key] {
			t = prometheus.CounterValue
		}
		emit(kv.key, "ZooKeeper's "+kv.key+", as mntr reports it.", t, n)
	}
	emit("hutch_bytes_sent_total", "Bytes written to clients (replies and notifications).", prometheus.CounterValue, float64(st.BytesSent))
	emit("hutch_txns_applied_total", "Transactions applied to this node's state.", prometheus.CounterValue, float64(st.Txns))
	emit("hutch_watch_notifications_total", "Watch notifications sent to this node's clients.", prometheus.CounterValue, float64(st.Notifications))
	emit("hutch_forwarded_writes_total", "Writes this node handed to another node, the Raft leader.", prometheus.CounterValue, float64(st.Forwarded))
	collectLatency(ch, st.Durations)
	viewers, lost := c.m.hub.counts()
	emit("hutch_trace_viewers", "Event trace streams open (/trace, the live view's trace panel).", prometheus.GaugeValue, float64(viewers))
	emit("hutch_trace_dropped_total", "Trace events a stream's filter kept but it did not get: over its rate, or behind.", prometheus.CounterValue, float64(lost))
	emit("hutch_ui_pages_total", "Live view pages and panel redraws served.", prometheus.CounterValue, float64(c.m.pages.Load()))

	for _, mode := range []string{Standalone, Leader, Follower} {
		emit("hutch_server_state", "1 for this node's role (mntr's server_state), 0 for the others.",
			prometheus.GaugeValue, boolFloat(v.Mode == mode), "state", mode)
	}
	if v.Replication.Raft != nil {
		collectRaft(v, emit)
	}
}

// collectLatency reports the request-latency histograms, and ZooKeeper's
// readlatency and updatelatency summaries (milliseconds, quantiles 0.5,
// 0.9 and 0.99) estimated from them over the server's lifetime.
func collectLatency(ch chan<- prometheus.Metric, durations [requestKinds]Histogram) {
	desc := prometheus.NewDesc("hutch_request_duration_seconds",
		"Time from reading a request to queueing its reply, by kind: read, write (anything else but a ping) or ping.", []string{"kind"}, nil)
	for k, h := range durations {
		buckets := make(map[float64]uint64, len(h.Cumulative))
		for i, n := range h.Cumulative {
			buckets[latencyBuckets[i]] = n
		}
		ch <- prometheus.MustNewConstHistogram(desc, h.Count, h.Sum, buckets, requestKindNames[k])
	}
	for _, s := range []struct {
		name string
		kind RequestKind
	}{{"readlatency", ReadRequest}, {"updatelatency", WriteRequest}} {
		h := durations[s.kind]
		quantiles := map[float64]float64{}
		for _, q := range []float64{0.5, 0.9, 0.99} {
			quantiles[q] = h.quantile(q) * 1000
		}
		desc := prometheus.NewDesc(s.name, "ZooKeeper's "+s.name+" in milliseconds; quantiles estimated from hutch_request_duration_seconds since start.", nil, nil)
		ch <- prometheus.MustNewConstSummary(desc, h.Count, h.Sum*1000, quantiles)
	}
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
	gauge := func(name, help string, v float64) { emit("hutch_raft_"+name, help, prometheus.GaugeValue, v) }
	emit("quorum_size", "Voting members of the ensemble (ZooKeeper's quorum_size).", prometheus.GaugeValue, float64(voters))
	gauge("members", "Members of the Raft configuration, voters or not.", float64(len(r.Members)))
	gauge("voters", "Voting members of the Raft configuration.", float64(voters))
	gauge("is_leader", "1 on the Raft leader, 0 elsewhere.", boolFloat(v.Mode == Leader))
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
