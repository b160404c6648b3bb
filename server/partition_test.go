package server

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/faultnet"
)

// TestClusterPartitionedLeader cuts the leader off from both followers:
// it stops accepting writes, the two others elect a leader and go on,
// and once the links heal every node's tree digest is the same.
func TestClusterPartitionedLeader(t *testing.T) {
	network := faultnet.New()
	nodes := startClusterOn(t, network, 3, 200*time.Millisecond)
	for i := range 10 {
		c, _ := dial(t, nodes[i%3].Addr().String(), 10*time.Second)
		if _, err := c.Create(fmt.Sprintf("/before%d", i), nil, 0, openACL); err != nil {
			t.Fatal(err)
		}
	}
	old := leaderOf(nodes)
	var majority []*Server
	var majorityAddrs []string
	for _, s := range nodes {
		if s != old {
			majority = append(majority, s)
			majorityAddrs = append(majorityAddrs, s.cfg.Raft.RaftAddr)
		}
	}
	onOld, _ := dial(t, old.Addr().String(), 10*time.Second)
	onFollower, followerEvents := dial(t, majority[0].Addr().String(), 10*time.Second)

	cut := time.Now()
	network.Isolate(old.cfg.Raft.RaftAddr, majorityAddrs...)

	// A write sent to the cut-off leader never succeeds: it can reach no
	// majority, so the client's connection is dropped instead.
	minorityWrite := make(chan error, 1)
	go func() {
		_, err := onOld.Create("/minority", nil, 0, openACL)
		minorityWrite <- err
	}()
	// A sync on a follower during the election waits for the new leader
	// instead of failing and dropping the client.
	syncDuringElection := make(chan error, 1)
	go func() {
		_, err := onFollower.Sync("/")
		syncDuringElection <- err
	}()
	waitFor(t, 10*time.Second, "a leader among the majority", func() bool {
		l := leaderOf(majority)
		return l != nil
	})
	t.Logf("majority elected a leader %v after the cut", time.Since(cut).Round(time.Millisecond))
	waitFor(t, 10*time.Second, "the cut-off leader to step down", func() bool { return !old.isLeader() })
	t.Logf("old leader stepped down %v after the cut", time.Since(cut).Round(time.Millisecond))

	select {
	case err := <-syncDuringElection:
		if err != nil {
			t.Fatalf("sync on a follower during the election: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("sync on a follower during the election not answered in 20s")
	}
	for len(followerEvents) > 0 {
		if ev := <-followerEvents; ev.State == zk.StateDisconnected {
			t.Fatalf("the follower's client was disconnected during the election: %+v", ev)
		}
	}
	for i, s := range majority {
		c, _ := dial(t, s.Addr().String(), 10*time.Second)
		if _, err := c.Create(fmt.Sprintf("/majority%d", i), nil, 0, openACL); err != nil {
			t.Fatalf("write on majority node %s: %v", s.Addr(), err)
		}
	}
	select {
	case err := <-minorityWrite:
		if err == nil {
			t.Fatal("a write on the cut-off leader succeeded")
		}
		t.Logf("write on the cut-off leader failed: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("a write on the cut-off leader neither failed nor succeeded in 20s")
	}
	// While cut off, the old leader refuses new sessions rather than serve
	// a stale tree.
	waitFor(t, 10*time.Second, "the cut-off node to refuse clients", func() bool {
		r := dialRaw(t, old.Addr().String())
		defer r.nc.Close()
		_ = r.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err := r.nc.Read(make([]byte, 1))
		return err != nil && !isTimeout(err)
	})

	network.Heal()
	healed := time.Now()
	waitFor(t, 20*time.Second, "equal digests after healing", func() bool {
		want := adminDigest(t, majority[0])
		return adminDigest(t, majority[1]) == want && adminDigest(t, old) == want
	})
	t.Logf("digests agree %v after healing: %s", time.Since(healed).Round(time.Millisecond), adminDigest(t, old))

	// The rejoined node serves again and has every acknowledged write and
	// not the one it never committed.
	var back *zk.Conn
	waitFor(t, 20*time.Second, "the healed node to accept a session", func() bool {
		c, _, err := zk.Connect([]string{old.Addr().String()}, 10*time.Second, zk.WithLogger(discardLogger{}))
		if err != nil {
			return false
		}
		if _, err := c.Sync("/"); err != nil {
			c.Close()
			return false
		}
		back = c
		return true
	})
	defer back.Close()
	children, _, err := back.Children("/")
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[string]bool)
	for _, c := range children {
		seen[c] = true
	}
	for _, want := range []string{"before0", "before9", "majority0", "majority1"} {
		if !seen[want] {
			t.Fatalf("/%s missing on the healed node: %v", want, children)
		}
	}
	if seen["minority"] {
		t.Fatal("/minority exists although its write was never acknowledged")
	}
	if _, err := back.Create("/healed", nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("write through the healed node: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}
