package ensemble

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrapeNode fetches and parses a node's /metrics.
func scrapeNode(nd *node) (map[string]*dto.MetricFamily, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + nd.metricsAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("node %d /metrics: %s", nd.id, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// gauge reads an unlabelled gauge or counter; false when absent.
func gauge(families map[string]*dto.MetricFamily, name string) (float64, bool) {
	mf := families[name]
	if mf == nil || len(mf.GetMetric()) == 0 {
		return 0, false
	}
	m := mf.GetMetric()[0]
	if m.Gauge != nil {
		return m.Gauge.GetValue(), true
	}
	if m.Counter != nil {
		return m.Counter.GetValue(), true
	}
	return 0, false
}

// TestEnsembleMetrics: each of three hutch processes serves /metrics
// (--metrics-listen); exactly one reports itself Raft leader, all agree
// on the term and the tree's size once writes have applied everywhere,
// and the on-disk log is reported.
func TestEnsembleMetrics(t *testing.T) {
	e := startEnsemble(t, 3)
	c := e.dial(e.nodes[1].clientAddr)
	const writes = 30
	for i := range writes {
		if _, err := c.Create(fmt.Sprintf("/metrics-%d", i), []byte("v"), 0, openACL); err != nil {
			t.Fatal(err)
		}
	}

	var scrapes []map[string]*dto.MetricFamily
	var why string
	deadline := time.Now().Add(20 * time.Second)
	for {
		scrapes, why = scrapes[:0], ""
		for _, nd := range e.nodes {
			m, err := scrapeNode(nd)
			if err != nil {
				t.Fatalf("scrape node %d: %v", nd.id, err)
			}
			scrapes = append(scrapes, m)
		}
		leaders := 0
		term0, _ := gauge(scrapes[0], "hutch_raft_term")
		nodes0, _ := gauge(scrapes[0], "znode_count")
		for i, m := range scrapes {
			if v, _ := gauge(m, "hutch_raft_is_leader"); v == 1 {
				leaders++
			}
			if v, _ := gauge(m, "hutch_raft_term"); v != term0 {
				why = fmt.Sprintf("node %d term %v, node 1 term %v", i+1, v, term0)
			}
			if v, _ := gauge(m, "znode_count"); v != nodes0 || v < writes {
				why = fmt.Sprintf("node %d has %v znodes, node 1 %v, after %d creates", i+1, v, nodes0, writes)
			}
		}
		if leaders != 1 {
			why = fmt.Sprintf("%d nodes report is_leader 1", leaders)
		}
		if why == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics did not converge: %s", why)
		}
		time.Sleep(50 * time.Millisecond)
	}

	for i, m := range scrapes {
		for _, name := range []string{"hutch_raft_log_bytes", "process_open_fds", "hutch_raft_commit_index", "packets_received"} {
			if v, ok := gauge(m, name); !ok || v <= 0 {
				t.Errorf("node %d %s = %v (present %v), want > 0", i+1, name, v, ok)
			}
		}
		if v, _ := gauge(m, "quorum_size"); v != 3 {
			t.Errorf("node %d quorum_size = %v, want 3", i+1, v)
		}
	}
	if fwd, _ := gauge(scrapes[1], "hutch_forwarded_writes_total"); fwd < writes {
		if lead, _ := gauge(scrapes[1], "hutch_raft_is_leader"); lead == 0 {
			t.Errorf("node 2, a follower, forwarded %v of its %d writes", fwd, writes)
		}
	}
}
