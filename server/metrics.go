package server

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/hutchzk/hutch/wire"
)

// Prometheus metrics, served at /metrics on Config.MetricsAddr as
// ZooKeeper's PrometheusMetricsProvider serves them on
// metricsProvider.httpPort. Everything but the request-latency histograms
// is read at scrape time from the same sources as mntr (Stats,
// Replication), so the two agree and a scrape costs the request path
// nothing; a scrape takes no lock a request holds for long (the DB's read
// lock, briefly, for its counts).

// latencyBuckets are the request-latency histogram's upper bounds in
// seconds: from a tenth of a millisecond (a read served from memory) to
// ten seconds (a write stuck behind an election).
var latencyBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// requestDurations are the request-latency histograms, one per kind of
// request, resolved once so that recording a reply is a lock-free,
// allocation-free Observe.
type requestDurations struct {
	vec               *prometheus.HistogramVec
	read, write, ping prometheus.Histogram
}

func newRequestDurations() requestDurations {
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "hutch_request_duration_seconds",
		Help:    "Time from reading a request to queueing its reply, by kind: read, write (anything else but a ping) or ping.",
		Buckets: latencyBuckets,
	}, []string{"kind"})
	// A vector's children are histograms; the summaries read them back.
	child := func(kind string) prometheus.Histogram { return vec.WithLabelValues(kind).(prometheus.Histogram) }
	return requestDurations{vec: vec, read: child("read"), write: child("write"), ping: child("ping")}
}

// observe records one answered request, split as srvr splits read and
// write latency.
func (d *requestDurations) observe(op wire.OpCode, elapsed time.Duration) {
	h := d.write
	if isRead(op) {
		h = d.read
	} else if op == wire.OpPing {
		h = d.ping
	}
	h.Observe(elapsed.Seconds())
}

// newMetricsRegistry builds this server's registry: its own collector, the
// latency histograms, and client_golang's Go runtime and process
// collectors (memory, goroutines, open and maximum file descriptors). It
// is private to the server, never the global default: one process may run
// many servers.
func (s *Server) newMetricsRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		metricsCollector{s},
		s.stats.durations.vec,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// serveMetrics runs the /metrics listener until the server closes.
func (s *Server) serveMetrics(ln net.Listener) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.newMetricsRegistry(), promhttp.HandlerOpts{
		ErrorLog:      slogErrorLog{s},
		ErrorHandling: promhttp.ContinueOnError,
	}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-s.ctx.Done()
		_ = hs.Close()
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.log.Warn("metrics server stopped", "err", err)
	}
}

// slogErrorLog hands promhttp's errors to the server's logger.
type slogErrorLog struct{ s *Server }

func (l slogErrorLog) Println(v ...any) { l.s.log.Warn("metrics", "err", fmt.Sprint(v...)) }

// MetricsAddr is the /metrics HTTP address, or nil without one.
func (s *Server) MetricsAddr() net.Addr {
	if s.metricsLn == nil {
		return nil
	}
	return s.metricsLn.Addr()
}

// zkCounters are the mntr keys ZooKeeper exports as counters; the others
// are gauges, as ZooKeeper registers them.
var zkCounters = map[string]bool{"bytes_received_count": true}

// metricsCollector reads the server's state at scrape time. Its metrics
// change with the node's role (a leader has more), so it describes none
// in advance: the registry checks them as they are collected.
type metricsCollector struct{ s *Server }

func (metricsCollector) Describe(chan<- *prometheus.Desc) {}

func (m metricsCollector) Collect(ch chan<- prometheus.Metric) {
	s := m.s
	emit := func(name, help string, t prometheus.ValueType, v float64, labels ...string) {
		var names []string
		for i := 0; i+1 < len(labels); i += 2 {
			names = append(names, labels[i])
		}
		var values []string
		for i := 1; i < len(labels); i += 2 {
			values = append(values, labels[i])
		}
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, names, nil), t, v, values...)
	}

	// ZooKeeper's gauges, from mntr's own list so that the two agree.
	st := s.Stats()
	r := s.Replication()
	for _, kv := range s.monitorValues(st, r) {
		v, ok := metricNumber(kv.value)
		if !ok {
			continue // version, server_state
		}
		t := prometheus.GaugeValue
		if zkCounters[kv.key] {
			t = prometheus.CounterValue
		}
		emit(kv.key, "ZooKeeper's "+kv.key+", as mntr reports it.", t, v)
	}
	emit("hutch_bytes_sent_total", "Bytes written to clients (replies and notifications).", prometheus.CounterValue, float64(st.BytesSent))
	emit("hutch_txns_applied_total", "Transactions applied to this node's state.", prometheus.CounterValue, float64(st.Txns))
	emit("hutch_watch_notifications_total", "Watch notifications sent to this node's clients.", prometheus.CounterValue, float64(st.Notifications))
	emit("hutch_forwarded_writes_total", "Writes this node handed to another node, the Raft leader.", prometheus.CounterValue, float64(st.Forwarded))
	m.latencySummaries(ch)

	for _, mode := range []string{"standalone", "leader", "follower"} {
		emit("hutch_server_state", "1 for this node's role (mntr's server_state), 0 for the others.",
			prometheus.GaugeValue, boolFloat(r.Mode == mode), "state", mode)
	}
	if r.Raft != nil {
		m.collectRaft(r, emit)
	}
}

// collectRaft reports the Raft node: ZooKeeper's quorum_size and hutch's
// own hutch_raft_* gauges.
func (m metricsCollector) collectRaft(r ReplicationInfo, emit func(string, string, prometheus.ValueType, float64, ...string)) {
	voters := 0
	for _, mem := range r.Members {
		if mem.Voter {
			voters++
		}
	}
	gauge := func(name, help string, v float64) { emit("hutch_raft_"+name, help, prometheus.GaugeValue, v) }
	emit("quorum_size", "Voting members of the ensemble (ZooKeeper's quorum_size).", prometheus.GaugeValue, float64(voters))
	gauge("members", "Members of the Raft configuration, voters or not.", float64(len(r.Members)))
	gauge("voters", "Voting members of the Raft configuration.", float64(voters))
	gauge("is_leader", "1 on the Raft leader, 0 elsewhere.", boolFloat(r.Mode == "leader"))
	gauge("leader_id", "Node id of the leader this node knows; 0 when it knows none.", float64(r.LeaderID))
	gauge("term", "Current Raft term.", float64(r.Term))
	gauge("commit_index", "Highest log index known to be committed.", float64(r.raftNumber("commit_index")))
	gauge("applied_index", "Highest log index Raft has handed to the state machine.", float64(r.raftNumber("applied_index")))
	gauge("fsm_applied_index", "Highest log index applied to this node's state.", float64(r.raftNumber("fsm_applied_index")))
	last, first := r.raftNumber("last_log_index"), r.raftNumber("first_log_index")
	gauge("last_log_index", "Highest index in this node's log.", float64(last))
	gauge("first_log_index", "Lowest index still in this node's log (older entries are compacted into a snapshot).", float64(first))
	entries := 0.0
	if first > 0 && last >= first {
		entries = float64(last - first + 1)
	}
	gauge("log_entries", "Entries in this node's log: last_log_index - first_log_index + 1.", entries)
	gauge("last_snapshot_index", "Log index the newest snapshot covers.", float64(r.raftNumber("last_snapshot_index")))
	if ms := r.raftNumber("last_snapshot_unix_ms"); ms > 0 {
		gauge("last_snapshot_age_seconds", "Seconds since the newest snapshot was written.",
			time.Since(time.UnixMilli(int64(ms))).Seconds())
	}
	if !r.LastContact.IsZero() {
		gauge("last_contact_seconds", "Seconds since this follower last heard from the leader.", time.Since(r.LastContact).Seconds())
	}
	if r.DataDir != "" {
		if fi, err := os.Stat(filepath.Join(r.DataDir, "raft.db")); err == nil {
			gauge("log_bytes", "Size of the Raft log and stable store (raft.db) on disk.", float64(fi.Size()))
		}
	}
}

// latencySummaries reports ZooKeeper's readlatency and updatelatency
// summaries (milliseconds, quantiles 0.5, 0.9 and 0.99) without a summary
// on the request path: count and sum come from the histograms, and the
// quantiles are estimated from their buckets, as PromQL's
// histogram_quantile would, over the server's lifetime.
func (m metricsCollector) latencySummaries(ch chan<- prometheus.Metric) {
	d := &m.s.stats.durations
	for _, h := range []struct {
		name string
		hist prometheus.Histogram
	}{{"readlatency", d.read}, {"updatelatency", d.write}} {
		var pb dto.Metric
		if err := h.hist.Write(&pb); err != nil || pb.Histogram == nil {
			continue
		}
		hist := pb.Histogram
		count := hist.GetSampleCount()
		quantiles := map[float64]float64{}
		for _, q := range []float64{0.5, 0.9, 0.99} {
			quantiles[q] = bucketQuantile(q, hist) * 1000
		}
		desc := prometheus.NewDesc(h.name, "ZooKeeper's "+h.name+" in milliseconds; quantiles estimated from hutch_request_duration_seconds since start.", nil, nil)
		ch <- prometheus.MustNewConstSummary(desc, count, hist.GetSampleSum()*1000, quantiles)
	}
}

// bucketQuantile estimates the q-quantile of a cumulative histogram by
// linear interpolation within the bucket that holds it; NaN when empty.
func bucketQuantile(q float64, h *dto.Histogram) float64 {
	total := h.GetSampleCount()
	if total == 0 {
		return math.NaN()
	}
	rank := q * float64(total)
	lower, below := 0.0, uint64(0)
	for _, b := range h.GetBucket() {
		upper, cum := b.GetUpperBound(), b.GetCumulativeCount()
		if float64(cum) >= rank {
			in := cum - below
			if in == 0 {
				return upper
			}
			return lower + (upper-lower)*(rank-float64(below))/float64(in)
		}
		lower, below = upper, cum
	}
	return lower // past the last finite bound
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
