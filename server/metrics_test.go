package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/monitor/prometheus"
	"github.com/hutchzk/hutch/wire"
)

// scrape is one parsed /metrics exposition.
type scrape map[string]*dto.MetricFamily

// scrapeMetrics fetches and parses s's /metrics within timeout.
func scrapeMetrics(tb testing.TB, s *Server, timeout time.Duration) scrape {
	tb.Helper()
	m, err := fetchMetrics(s.MetricsAddr().String(), timeout)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func fetchMetrics(addr string, timeout time.Duration) (scrape, error) {
	client := &http.Client{Timeout: timeout}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	return scrape(families), nil
}

// value returns the gauge, counter or untyped value of the metric name
// whose labels include the given name=value pairs.
func (m scrape) value(tb testing.TB, name string, labels ...string) float64 {
	tb.Helper()
	v, ok := m.lookup(name, labels...)
	if !ok {
		tb.Fatalf("metric %s%v missing", name, labels)
	}
	return v
}

func (m scrape) lookup(name string, labels ...string) (float64, bool) {
	mf := m[name]
	if mf == nil {
		return 0, false
	}
	for _, mt := range mf.GetMetric() {
		if !hasLabels(mt, labels) {
			continue
		}
		switch {
		case mt.Gauge != nil:
			return mt.Gauge.GetValue(), true
		case mt.Counter != nil:
			return mt.Counter.GetValue(), true
		case mt.Untyped != nil:
			return mt.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// histogramCount is the sample count of a histogram or summary series.
func (m scrape) sampleCount(tb testing.TB, name string, labels ...string) uint64 {
	tb.Helper()
	if mf := m[name]; mf != nil {
		for _, mt := range mf.GetMetric() {
			if !hasLabels(mt, labels) {
				continue
			}
			switch {
			case mt.Histogram != nil:
				return mt.Histogram.GetSampleCount()
			case mt.Summary != nil:
				return mt.Summary.GetSampleCount()
			}
		}
	}
	tb.Fatalf("histogram or summary %s%v missing", name, labels)
	return 0
}

func hasLabels(mt *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, lp := range mt.GetLabel() {
			if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// mntrValues runs mntr and returns its keys without the zk_ prefix.
func mntrValues(tb testing.TB, s *Server) map[string]string {
	tb.Helper()
	out, err := realzk.FourLetterWord(s.Addr().String(), "mntr", 5*time.Second)
	if err != nil {
		tb.Fatalf("mntr: %v", err)
	}
	kv := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, "\t")
		kv[strings.TrimPrefix(k, "zk_")] = v
	}
	return kv
}

// TestMetricsStandalone: a single node's /metrics carries ZooKeeper's
// gauges with the values mntr reports, and its counters and latency
// histograms move with client traffic.
func TestMetricsStandalone(t *testing.T) {
	s := startServer(t, Config{MetricsAddr: "127.0.0.1:0", MetricsProvider: prometheus.Handler})
	c, _ := dial(t, s.Addr().String(), 10*time.Second)

	before := scrapeMetrics(t, s, 5*time.Second)
	nodes0 := before.value(t, "znode_count")
	const created = 25
	for i := range created {
		if _, err := c.Create(fmt.Sprintf("/m%d", i), []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	const reads = 40
	for i := range reads {
		if _, _, _, err := c.GetW(fmt.Sprintf("/m%d", i%created)); err != nil {
			t.Fatal(err)
		}
	}
	after := scrapeMetrics(t, s, 5*time.Second)
	mntr := mntrValues(t, s)

	if got := after.value(t, "znode_count"); got != nodes0+created {
		t.Errorf("znode_count = %v, want %v + %d created", got, nodes0, created)
	}
	// Nothing changes the state between the scrape and mntr (the client
	// is idle), so the state's gauges agree exactly.
	for _, key := range []string{"znode_count", "watch_count", "ephemerals_count", "global_sessions", "approximate_data_size"} {
		want, err := strconv.ParseFloat(mntr[key], 64)
		if err != nil {
			t.Fatalf("mntr %s = %q: %v", key, mntr[key], err)
		}
		if got := after.value(t, key); got != want {
			t.Errorf("%s = %v on /metrics, %v in mntr", key, got, want)
		}
	}
	// mntr's own connection is one more.
	if got, want := after.value(t, "num_alive_connections"), mntr["num_alive_connections"]; strconv.FormatFloat(got+1, 'f', -1, 64) != want {
		t.Errorf("num_alive_connections = %v on /metrics, %s in mntr (which counts its own)", got, want)
	}
	if got := after.value(t, "watch_count"); got < 1 {
		t.Errorf("watch_count = %v after %d GetW, want >= 1", got, reads)
	}
	for _, key := range []string{"packets_received", "packets_sent", "bytes_received_count"} {
		if b, a := before.value(t, key), after.value(t, key); a < b+created+reads {
			t.Errorf("%s went from %v to %v over %d requests", key, b, a, created+reads)
		}
	}
	if mf := after["bytes_received_count"]; mf.GetType() != dto.MetricType_COUNTER {
		t.Errorf("bytes_received_count is a %v, ZooKeeper's is a counter", mf.GetType())
	}
	grew := func(name string, n uint64, labels ...string) {
		t.Helper()
		if b, a := before.sampleCount(t, name, labels...), after.sampleCount(t, name, labels...); a < b+n {
			t.Errorf("%s%v count went from %d to %d, want +%d", name, labels, b, a, n)
		}
	}
	grew("hutch_request_duration_seconds", created, "kind", "write")
	grew("hutch_request_duration_seconds", reads, "kind", "read")
	grew("updatelatency", created)
	grew("readlatency", reads)
	if mf := after["readlatency"]; mf.GetType() != dto.MetricType_SUMMARY || len(mf.GetMetric()[0].GetSummary().GetQuantile()) != 3 {
		t.Errorf("readlatency is not a summary with three quantiles: %v", mf)
	}

	if got := after.value(t, "hutch_server_state", "state", "standalone"); got != 1 {
		t.Errorf(`hutch_server_state{state="standalone"} = %v`, got)
	}
	if got := after.value(t, "hutch_server_state", "state", "leader"); got != 0 {
		t.Errorf(`hutch_server_state{state="leader"} = %v`, got)
	}
	for _, name := range []string{"process_open_fds", "process_resident_memory_bytes", "go_goroutines", "open_file_descriptor_count", "uptime"} {
		if v := after.value(t, name); v <= 0 {
			t.Errorf("%s = %v, want > 0", name, v)
		}
	}
	for name := range after {
		if strings.HasPrefix(name, "hutch_raft_") {
			t.Errorf("standalone node reports %s", name)
		}
	}
}

// TestMetricsCluster: in a three-node ensemble exactly one node reports
// itself Raft leader, the terms agree, writes sent through a follower are
// counted as forwarded, and every node's applied index reaches the
// leader's commit index.
func TestMetricsCluster(t *testing.T) {
	nodes := startClusterOn(t, nil, 3, 200*time.Millisecond, func(_ uint64, cfg *Config) { cfg.MetricsAddr, cfg.MetricsProvider = "127.0.0.1:0", prometheus.Handler })
	leader := leaderOf(nodes)
	follower := followerOf(nodes, leader)
	c, _ := dial(t, follower.Addr().String(), 10*time.Second)
	const writes = 20
	for i := range writes {
		if _, err := c.Create(fmt.Sprintf("/w%d", i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}

	// Converged: every node has applied what the leader committed, and
	// the leader stayed the leader throughout.
	var scrapes []scrape
	waitFor(t, 15*time.Second, "applied indexes to converge", func() bool {
		scrapes = scrapes[:0]
		for _, s := range nodes {
			scrapes = append(scrapes, scrapeMetrics(t, s, 5*time.Second))
		}
		commit := scrapes[0].value(t, "hutch_raft_commit_index")
		for _, m := range scrapes {
			commit = max(commit, m.value(t, "hutch_raft_commit_index"))
		}
		for _, m := range scrapes {
			if m.value(t, "hutch_raft_fsm_applied_index") < commit || m.value(t, "hutch_raft_applied_index") < commit {
				return false
			}
		}
		return true
	})

	leaders := 0
	term := scrapes[0].value(t, "hutch_raft_term")
	for i, m := range scrapes {
		isLead := m.value(t, "hutch_raft_is_leader")
		if isLead == 1 {
			leaders++
			if nodes[i] != leader {
				t.Errorf("node %d reports is_leader 1 but %d leads", i+1, leader.nodeID)
			}
			if got := m.value(t, "synced_followers"); got != 2 {
				t.Errorf("leader's synced_followers = %v, want 2", got)
			}
			if got := m.value(t, "hutch_server_state", "state", "leader"); got != 1 {
				t.Errorf(`leader's hutch_server_state{state="leader"} = %v`, got)
			}
		} else {
			if _, ok := m.lookup("synced_followers"); ok {
				t.Errorf("follower %d reports synced_followers, a leader-only gauge in ZooKeeper", i+1)
			}
			if got := m.value(t, "hutch_raft_last_contact_seconds"); got < 0 || got > 5 {
				t.Errorf("follower %d last contact %vs ago", i+1, got)
			}
		}
		if got := m.value(t, "hutch_raft_term"); got != term {
			t.Errorf("node %d term %v, node 1 term %v", i+1, got, term)
		}
		if got := m.value(t, "hutch_raft_leader_id"); got != float64(leader.nodeID) {
			t.Errorf("node %d knows leader %v, want %d", i+1, got, leader.nodeID)
		}
		for name, want := range map[string]float64{"quorum_size": 3, "hutch_raft_voters": 3, "hutch_raft_members": 3} {
			if got := m.value(t, name); got != want {
				t.Errorf("node %d %s = %v, want %v", i+1, name, got, want)
			}
		}
		if first, last := m.value(t, "hutch_raft_first_log_index"), m.value(t, "hutch_raft_last_log_index"); first < 1 || last < first+writes ||
			m.value(t, "hutch_raft_log_entries") != last-first+1 {
			t.Errorf("node %d log from %v to %v holds %v entries after %d writes", i+1, first, last, m.value(t, "hutch_raft_log_entries"), writes)
		}
		if got := m.value(t, "znode_count"); got != scrapes[0].value(t, "znode_count") {
			t.Errorf("node %d znode_count %v, node 1 %v", i+1, got, scrapes[0].value(t, "znode_count"))
		}
	}
	if leaders != 1 {
		t.Errorf("%d nodes report is_leader 1, want 1", leaders)
	}
	for i, s := range nodes {
		fwd := scrapes[i].value(t, "hutch_forwarded_writes_total")
		switch s {
		case follower:
			if fwd < writes {
				t.Errorf("follower forwarded %v writes, want >= %d", fwd, writes)
			}
		case leader:
			if fwd != 0 {
				t.Errorf("leader forwarded %v writes", fwd)
			}
		}
	}
}

// TestMetricsScrapeUnderLoad: a scrape completes promptly while clients
// write as fast as they can: it waits for no request.
func TestMetricsScrapeUnderLoad(t *testing.T) {
	s := startServer(t, Config{MetricsAddr: "127.0.0.1:0", MetricsProvider: prometheus.Handler})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var writers []*zk.Conn
	for range 4 {
		c, _ := dial(t, s.Addr().String(), 10*time.Second)
		writers = append(writers, c)
	}
	for w, c := range writers {
		wg.Go(func() {
			data := make([]byte, 512)
			for i := 0; ctx.Err() == nil; i++ {
				// Pipelined: a batch of async creates per round trip.
				var pending []<-chan error
				for j := range 32 {
					path := fmt.Sprintf("/load-%d-%d-%d", w, i, j)
					pending = append(pending, asyncCreate(c, path, data))
				}
				for _, ch := range pending {
					<-ch
				}
			}
		})
	}
	defer wg.Wait()
	defer cancel()

	waitFor(t, 5*time.Second, "load to start", func() bool { return s.Stats().Nodes > 1000 })
	var slowest time.Duration
	var last float64
	begin, scrapes := time.Now(), 0
	for ; scrapes < 10 || time.Since(begin) < time.Second; scrapes++ {
		start := time.Now()
		m, err := fetchMetrics(s.MetricsAddr().String(), 2*time.Second)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("scrape under load: %v (after %v)", err, took)
		}
		slowest = max(slowest, took)
		n := m.value(t, "znode_count")
		if n < last {
			t.Errorf("znode_count went back from %v to %v", last, n)
		}
		last = n
	}
	if ctx.Err() != nil {
		t.Fatal("load ended before the scrapes did")
	}
	t.Logf("slowest of %d scrapes under load: %v, %v nodes", scrapes, slowest, last)
	if slowest > 2*time.Second {
		t.Errorf("slowest scrape under load took %v", slowest)
	}
}

// asyncCreate issues a create without waiting for it.
func asyncCreate(c *zk.Conn, path string, data []byte) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := c.Create(path, data, 0, zk.WorldACL(zk.PermAll))
		ch <- err
	}()
	return ch
}

// TestMetricsPortInUse: a taken metrics port fails Start and frees the
// ports already bound.
func TestMetricsPortInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	client := fmt.Sprintf("127.0.0.1:%d", realzk.FreePort(t))
	s := New(Config{ListenAddr: client, MetricsAddr: taken.Addr().String(), MetricsProvider: prometheus.Handler, Logger: testLogger()})
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "metrics listen") {
		s.Close()
		t.Fatalf("Start with the metrics port taken: %v", err)
	}
	ln, err := net.Listen("tcp", client)
	if err != nil {
		t.Fatalf("client port still bound after the failed start: %v", err)
	}
	ln.Close()
	if s.MetricsAddr() != nil {
		t.Errorf("MetricsAddr = %v after a failed start", s.MetricsAddr())
	}
}

// TestMetricsNeedAProvider: a metrics address without a provider fails
// Start, saying what is missing, rather than serving nothing.
func TestMetricsNeedAProvider(t *testing.T) {
	s := New(Config{ListenAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", Logger: testLogger()})
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "no metrics provider") {
		s.Close()
		t.Fatalf("Start without a metrics provider: %v", err)
	}
}

// BenchmarkAnswered measures recording one reply's statistics: counters,
// latency and the /metrics histogram. It must not allocate.
func BenchmarkAnswered(b *testing.B) {
	s := New(Config{Logger: testLogger()})
	c := &conn{srv: s, stats: newConnStats(time.Now())}
	start := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.stats.outstanding.Add(1)
			c.answered(request{op: wire.OpGetData, xid: 1, start: start}, 1)
		}
	})
}

func TestAnsweredDoesNotAllocate(t *testing.T) {
	s := New(Config{Logger: testLogger()})
	c := &conn{srv: s, stats: newConnStats(time.Now())}
	start := time.Now()
	allocs := testing.AllocsPerRun(1000, func() {
		c.answered(request{op: wire.OpSetData, xid: 1, start: start}, 1)
	})
	if allocs != 0 {
		t.Errorf("answered allocates %v times per reply", allocs)
	}
}
