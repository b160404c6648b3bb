package server

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestSyncStormOnFollower: 120 sessions call sync in a loop on a
// follower while one more creates znodes through it (issue 26, item 4).
// A follower used to open a connection to the leader for every
// concurrent forward, the leader refused those past 64 by closing them
// unread, and the follower failed writes and syncs the leader had never
// received: the writer saw connection loss, and syncing clients were
// dropped. A ZooKeeper follower slows its writer down and fails nothing.
// Now forwards share a few long-lived pipelined connections and
// concurrent syncs share one question to the leader, so the storm only
// queues: every create and every sync succeeds.
func TestSyncStormOnFollower(t *testing.T) {
	// Roomy election timeouts: on a loaded machine an election would make
	// the follower drop its clients, which is not what is tested here.
	nodes := startClusterOn(t, nil, 3, 200*time.Millisecond, func(_ uint64, cfg *Config) {
		cfg.Raft.ElectionTimeout = 3 * time.Second
	})
	follower := followerOf(nodes, leaderOf(nodes))
	addr := follower.Addr().String()

	const syncers = 120
	var (
		syncs, syncErrs atomic.Int64
		firstSyncErr    atomic.Value
		stop            = make(chan struct{})
		wg              sync.WaitGroup
	)
	conns := make([]*zk.Conn, syncers)
	for i := range conns {
		conns[i], _ = dial(t, addr, 30*time.Second)
	}
	for _, c := range conns {
		wg.Go(func() {
			for n := 0; n < 100000; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Sync("/"); err != nil {
					syncErrs.Add(1)
					firstSyncErr.CompareAndSwap(nil, err.Error())
					if errors.Is(err, zk.ErrClosing) {
						return
					}
					continue
				}
				syncs.Add(1)
			}
		})
	}

	writer, _ := dial(t, addr, 30*time.Second)
	var creates, failures int
	var firstErr error
	began := time.Now()
	for time.Since(began) < 4*time.Second && creates < 2000 {
		_, err := writer.Create(fmt.Sprintf("/storm-%d", creates+failures), []byte("x"), 0, zk.WorldACL(zk.PermAll))
		if err != nil {
			failures++
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		creates++
	}
	close(stop)
	wg.Wait()
	t.Logf("%d creates in %v, %d failed; %d syncs, %d failed", creates, time.Since(began).Round(time.Millisecond), failures, syncs.Load(), syncErrs.Load())
	if failures > 0 {
		t.Errorf("%d creates failed during the sync storm, the first with %v", failures, firstErr)
	}
	if n := syncErrs.Load(); n > 0 {
		t.Errorf("%d syncs failed, the first with %v", n, firstSyncErr.Load())
	}
	if creates == 0 || syncs.Load() < syncers {
		t.Errorf("the storm stalled: %d creates, %d syncs", creates, syncs.Load())
	}
}
