package nemesis

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/faultnet"
	"github.com/hutchzk/hutch/internal/realzk"
)

func TestMain(m *testing.M) { realzk.Main(m) }

// waitUntil polls cond until it holds, failing the test after limit.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(10 * time.Millisecond) // polling in-process counters
	}
}

// TestPipelineReattaches: a pipelined writer on one hutch node loses its
// connection (through a proxy that severs it), re-attaches its session
// directly, and its creates pass the order check: none acknowledged is
// lost, none out of order, replies in xid order, and directories roll
// over.
func TestPipelineReattaches(t *testing.T) {
	srv := realzk.StartHutchBinary(t, realzk.BuildHutch(t))
	proxy := faultnet.StartProxy(t, srv.Addr)
	cfg := Config{PipelineEvery: 5 * time.Millisecond, PipelineDirSize: 300}.withDefaults()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := dialZK(ctx, "admin", []string{srv.Addr}, cfg.SessionTimeout, cfg.OpTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, p := range []string{"/t", "/t/order"} {
		if _, err := admin.conn.Create(p, nil, 0, openACL); err != nil {
			t.Fatal(err)
		}
	}
	// The writer starts on the node after its own index: the proxy.
	w := newPipeWriter(1, "/t/order", []string{srv.Addr, proxy.Addr()}, cfg)
	work, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { w.run(work); close(done) }()
	acked := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		n := 0
		for _, pw := range w.writes {
			if pw.state == writeAcked {
				n++
			}
		}
		return n
	}
	incarnation := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.inc
	}
	waitUntil(t, 20*time.Second, "200 acknowledged creates", func() bool { return acked() >= 200 })
	proxy.Sever()
	waitUntil(t, 20*time.Second, "a second incarnation", func() bool { return incarnation() >= 2 })
	before := acked()
	waitUntil(t, 20*time.Second, "200 more acknowledged creates", func() bool { return acked() >= before+200 })
	stop()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the writer did not stop")
	}

	children := map[int][]string{}
	for gen := 0; gen <= w.gen; gen++ {
		kids, _, err := admin.conn.Children(w.dirPath(gen))
		if err != nil && err != zk.ErrNoNode {
			t.Fatal(err)
		}
		children[gen] = kids
	}
	o := checkOrder(w.id, w.writes, children)
	t.Logf("%d creates in %d directories over %d incarnations: %d acknowledged, %d unknown, %d refused; answers %v",
		len(w.writes), w.gen+1, w.inc, o.acked, o.unknown, o.refused, w.answers)
	if o.lost != 0 || o.violations != 0 || len(w.disorder) != 0 || len(w.expiries) != 0 || len(w.abandoned) != 0 {
		t.Fatalf("lost %d, violations %d, disorder %v, expired %d, abandoned %v; details %q",
			o.lost, o.violations, w.disorder, len(w.expiries), w.abandoned, o.details)
	}
	if w.gen < 1 {
		t.Fatalf("no directory roll-over in %d creates of at most %d per directory", len(w.writes), cfg.PipelineDirSize)
	}
}
