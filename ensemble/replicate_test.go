package ensemble

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/faultnet"
)

// TestEnsembleReplicates: a write through each node is seen on every node
// after sync.
func TestEnsembleReplicates(t *testing.T) {
	e := startEnsemble(t, 3)
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
	t.Logf("tree digests equal on all nodes: %s", e.waitDigestsEqual(10*time.Second))
}

// holdEphemerals opens a session through every node's address and creates
// a plain and a sequential ephemeral under /held.
func holdEphemerals(t *testing.T, e *ensemble) (c *zk.Conn, paths []string) {
	t.Helper()
	c = e.dial(e.addrs()...)
	if _, err := c.Create("/held", nil, 0, openACL); err != nil && err != zk.ErrNodeExists {
		t.Fatal(err)
	}
	plain, err := c.Create("/held/plain", []byte("mine"), zk.FlagEphemeral, openACL)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := c.Create("/held/seq-", nil, zk.FlagEphemeral|zk.FlagSequence, openACL)
	if err != nil {
		t.Fatal(err)
	}
	return c, []string{plain, seq}
}

// checkEphemerals asserts that on every node, after sync, each path exists
// owned by session sid (or, with sid 0, that none exists).
func checkEphemerals(t *testing.T, e *ensemble, sid int64, paths []string) {
	t.Helper()
	for _, nd := range e.nodes {
		c := e.dial(nd.clientAddr)
		if _, err := c.Sync("/held"); err != nil {
			t.Fatalf("node %d: sync: %v", nd.id, err)
		}
		for _, p := range paths {
			ok, st, err := c.Exists(p)
			switch {
			case err != nil:
				t.Fatalf("node %d: exists %s: %v", nd.id, p, err)
			case sid == 0 && ok:
				t.Errorf("node %d: %s still exists after its session closed", nd.id, p)
			case sid != 0 && !ok:
				t.Errorf("node %d: ephemeral %s of live session %#x is gone", nd.id, p, sid)
			case sid != 0 && st.EphemeralOwner != sid:
				t.Errorf("node %d: %s owned by %#x, want %#x", nd.id, p, st.EphemeralOwner, sid)
			}
		}
		c.Close()
	}
}

// TestEnsembleRestartOne: the node a session is connected to is killed
// with SIGKILL while writes go on through the others; the session moves
// to another node with its ephemerals, and the restarted node catches up
// to the same tree with every acknowledged write.
func TestEnsembleRestartOne(t *testing.T) {
	e := startEnsemble(t, 3)
	holder, held := holdEphemerals(t, e)
	sid := holder.SessionID()
	var victim *node
	for _, nd := range e.nodes {
		if nd.clientAddr == holder.Server() {
			victim = nd
		}
	}
	if victim == nil {
		t.Fatalf("holder connected to %q, not a node", holder.Server())
	}
	var others []string
	for _, nd := range e.nodes {
		if nd != victim {
			others = append(others, nd.clientAddr)
		}
	}
	writer := e.dial(others...)
	if _, err := writer.Create("/acked", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	acked := 0
	write := func(n int) {
		for range n {
			p := "/acked/n" + strconv.Itoa(acked)
			// A connection lost with the leader leaves the create's fate
			// unknown; the retry then finds the node or makes it.
			err := retry(context.Background(), func() error {
				_, err := writer.Create(p, nil, 0, openACL)
				if errors.Is(err, zk.ErrNodeExists) {
					return nil
				}
				return err
			})
			if err != nil {
				t.Fatalf("create %s: %v", p, err)
			}
			acked++
		}
	}
	write(50)
	wasLeader := e.leaderNow() == victim
	e.kill(victim)
	write(100) // the leader may have been the victim: the first waits for an election
	if _, err := holder.Sync("/"); err != nil {
		t.Fatalf("holder after its node died: %v", err)
	}
	if holder.SessionID() != sid {
		t.Fatalf("session %#x became %#x", sid, holder.SessionID())
	}
	t.Logf("session %#x moved from node %d (leader: %v) to %s", sid, victim.id, wasLeader, holder.Server())
	e.startNodes(victim)
	write(50)
	digest := e.waitDigestsEqual(20 * time.Second)
	c := e.dial(victim.clientAddr)
	if _, err := c.Sync("/acked"); err != nil {
		t.Fatal(err)
	}
	kids, _, err := c.Children("/acked")
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != acked {
		t.Fatalf("restarted node has %d of %d acknowledged creates", len(kids), acked)
	}
	checkEphemerals(t, e, sid, held)
	t.Logf("node %d restarted: %d/%d acknowledged creates, digests equal (%s), ephemerals of %#x kept", victim.id, len(kids), acked, digest, sid)
	holder.Close()
	checkEphemerals(t, e, 0, held)
}

// TestEnsembleRestartAll: every create acknowledged before all three
// processes are killed with SIGKILL is there after they restart from
// their data directories.
func TestEnsembleRestartAll(t *testing.T) {
	const n = 300
	const workers = 6
	e := startEnsemble(t, 3)
	holder, held := holdEphemerals(t, e)
	sid := holder.SessionID()
	// A second session, whose client goes away for good while the nodes
	// are down, must still expire after the restart.
	proxy := faultnet.StartProxy(t, e.nodes[0].clientAddr)
	abandoned, _, err := zk.Connect([]string{proxy.Addr()}, 4*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer abandoned.Close()
	orphan, err := abandoned.Create("/orphan", nil, zk.FlagEphemeral, openACL)
	if err != nil {
		t.Fatal(err)
	}
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
	proxy.Sever()
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
	t.Logf("digests equal after restarting all: %s", e.waitDigestsEqual(20*time.Second))
	// The holder's client reconnects on its own, with its session.
	if err := within(opTimeout, func() error { _, err := holder.Sync("/"); return err }); err != nil {
		t.Fatalf("holder after restart: %v", err)
	}
	if holder.SessionID() != sid {
		t.Fatalf("session %#x became %#x", sid, holder.SessionID())
	}
	checkEphemerals(t, e, sid, held)
	t.Logf("session %#x and its %d ephemerals survived the restart of all nodes", sid, len(held))
	holder.Close()
	checkEphemerals(t, e, 0, held)

	expiry := time.Now()
	if err := within(30*time.Second, func() error {
		for {
			ok, _, err := c.Exists(orphan)
			if err != nil || !ok {
				return err
			}
			time.Sleep(50 * time.Millisecond) // polling for the expiry
		}
	}); err != nil {
		t.Fatalf("the abandoned session's ephemeral: %v", err)
	}
	t.Logf("abandoned session (4s timeout) expired %v after the check began", time.Since(expiry).Round(time.Millisecond))
}
