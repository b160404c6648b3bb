package ensemble

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestEnsembleReplicates: a write through each node is seen on every node
// after sync.
func TestEnsembleReplicates(t *testing.T) {
	e := startEnsemble(t, 3, false)
	clients := make([]*zk.Conn, len(e.nodes))
	for i, nd := range e.nodes {
		clients[i] = e.dial(nd.clientAddr)
	}
	for i, c := range clients {
		p := fmt.Sprintf("/via%d", i+1)
		if _, err := c.Create(p, []byte{byte(i + 1)}, 0, openACL); err != nil {
			t.Fatalf("create %s through node %d: %v", p, i+1, err)
		}
	}
	for j, c := range clients {
		for i := range clients {
			p := fmt.Sprintf("/via%d", i+1)
			if _, err := c.Sync(p); err != nil {
				t.Fatalf("sync %s on node %d: %v", p, j+1, err)
			}
			data, _, err := c.Get(p)
			if err != nil || !bytes.Equal(data, []byte{byte(i + 1)}) {
				t.Errorf("node %d: get %s = %v, %v; want [%d]", j+1, p, data, err, i+1)
			}
		}
	}
}

// TestEnsembleRestartAll: every create acknowledged before all three
// processes are killed with SIGKILL is there after they restart from
// their data directories.
func TestEnsembleRestartAll(t *testing.T) {
	const n = 300
	const workers = 6
	e := startEnsemble(t, 3, true)
	c := e.dial(e.addrs()...)
	if _, err := c.Create("/acked", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex // guards acked and errs
		acked []string
		errs  []error
	)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				p := "/acked/n" + strconv.Itoa(i)
				err := within(opTimeout, func() error {
					_, err := c.Create(p, []byte(p), 0, openACL)
					return err
				})
				mu.Lock()
				if err == nil {
					acked = append(acked, p)
				} else {
					errs = append(errs, fmt.Errorf("create %s: %w", p, err))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("%d of %d creates acknowledged in %v (%d errors)", len(acked), n, time.Since(start).Round(time.Millisecond), len(errs))
	for _, err := range errs {
		t.Errorf("with the ensemble healthy: %v", err)
	}
	for _, nd := range e.nodes {
		e.kill(nd)
	}
	start = time.Now()
	e.startNodes(e.nodes...)
	for _, nd := range e.nodes {
		c := e.dial(nd.clientAddr)
		// A write proves a leader; sync then makes this node catch up.
		e.waitWritable(c, "/after-restart", 30*time.Second)
		if _, err := c.Sync("/acked"); err != nil {
			t.Fatalf("node %d: sync: %v", nd.id, err)
		}
		kids, _, err := c.Children("/acked")
		if err != nil {
			t.Fatalf("node %d: children: %v", nd.id, err)
		}
		have := make(map[string]bool, len(kids))
		for _, k := range kids {
			have["/acked/"+k] = true
		}
		missing := 0
		for _, p := range acked {
			if !have[p] {
				missing++
				if missing <= 5 {
					t.Errorf("node %d: acknowledged %s is gone after restart", nd.id, p)
				}
			}
		}
		t.Logf("node %d after restart (%v since kill): %d children, %d of %d acknowledged present",
			nd.id, time.Since(start).Round(time.Millisecond), len(kids), len(acked)-missing, len(acked))
		if missing > 0 {
			t.Errorf("node %d: %d acknowledged creates lost", nd.id, missing)
		}
		for _, p := range acked[:min(len(acked), 20)] {
			if data, _, err := c.Get(p); err != nil || string(data) != p {
				t.Errorf("node %d: get %s = %q, %v", nd.id, p, data, err)
			}
		}
	}
}
