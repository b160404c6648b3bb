package server

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/faultnet"
)

// busyClient is a session that holds an ephemeral and reads every 100ms,
// noting when a server last answered it.
type busyClient struct {
	conn     *zk.Conn
	session  int64
	path     string
	lastRead atomic.Int64 // unix nanos of the last successful read
}

func startBusyClient(t *testing.T, servers []string, timeout time.Duration, path string, stop <-chan struct{}, wg *sync.WaitGroup) *busyClient {
	t.Helper()
	c, events, err := zk.Connect(servers, timeout, zk.WithLogger(discardLogger{}), zk.WithHostProvider(&orderedHosts{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitFor(t, 20*time.Second, "a session on "+servers[0], func() bool {
		for len(events) > 0 {
			<-events
		}
		return c.State() == zk.StateHasSession
	})
	if _, err := c.Create(path, nil, zk.FlagEphemeral, openACL); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	b := &busyClient{conn: c, session: c.SessionID(), path: path}
	b.lastRead.Store(time.Now().UnixNano())
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, _, err := c.Get("/"); err == nil {
				b.lastRead.Store(time.Now().UnixNano())
			}
		}
	})
	return b
}

// TestClusterOneWayCutFollowerDropsClients: a follower that can no longer
// open connections to the leader (its touch reports and forwarded writes
// fail) while the leader's appends still reach it must stop answering its
// clients early enough that none is answered while the leader, hearing
// nothing of it, expires its session. Before the fix the follower vouched
// by Raft's LastContact, which the leader's own heartbeats kept fresh:
// the pinned client was answered until ~70ms before its ephemeral went.
func TestClusterOneWayCutFollowerDropsClients(t *testing.T) {
	const sessionTimeout = 3 * time.Second
	network := faultnet.New()
	nodes := startClusterOn(t, network, 3, 200*time.Millisecond)
	leader := leaderOf(nodes)
	var follower, other *Server
	for _, s := range nodes {
		switch {
		case s == leader:
		case follower == nil:
			follower = s
		default:
			other = s
		}
	}
	mustMkdir(t, leader.Addr().String(), "/vouch")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	// One client can reach only the cut follower; the other may move.
	pinned := startBusyClient(t, []string{follower.Addr().String()}, sessionTimeout, "/vouch/pinned", stop, &wg)
	mobile := startBusyClient(t, []string{follower.Addr().String(), other.Addr().String(), leader.Addr().String()},
		sessionTimeout, "/vouch/mobile", stop, &wg)

	watcher, _ := dial(t, leader.Addr().String(), 10*time.Second)
	_, _, gone, err := watcher.ExistsW(pinned.path)
	if err != nil {
		t.Fatal(err)
	}

	cut := time.Now()
	network.DropOneWay(follower.cfg.Raft.RaftAddr, leader.cfg.Raft.RaftAddr)
	defer network.Heal()

	// The leader still reaches the follower: Raft's last contact stays
	// fresh, which is what made the old rule vouch.
	var staleContact time.Duration
	var deleted time.Time
	deadline := time.After(4 * sessionTimeout)
wait:
	for {
		select {
		case ev := <-gone:
			if ev.Type != zk.EventNodeDeleted {
				t.Fatalf("watch on the pinned ephemeral: %+v", ev)
			}
			deleted = time.Now()
			break wait
		case <-deadline:
			t.Fatalf("the pinned client's session did not expire within %v of the cut", 4*sessionTimeout)
		case <-time.After(50 * time.Millisecond):
			if lc := follower.Replication().LastContact; !lc.IsZero() {
				staleContact = max(staleContact, time.Since(lc))
			}
		}
	}
	last := time.Unix(0, pinned.lastRead.Load())
	t.Logf("cut at 0; pinned client last answered at %v; its ephemeral deleted at %v; the follower's Raft last contact was at most %v old",
		last.Sub(cut).Round(time.Millisecond), deleted.Sub(cut).Round(time.Millisecond), staleContact.Round(time.Millisecond))
	if staleContact > sessionTimeout/3 {
		t.Logf("the leader's heartbeats did not reach the follower throughout (%v): the cut was not one-way", staleContact)
	}
	// The follower must stop answering a third of a timeout after its last
	// vouched report, while the leader gives the session a whole timeout:
	// at least the rest, less a report interval and scheduling, separates
	// the last answer from the expiry.
	if margin := deleted.Sub(last); margin < sessionTimeout/3 {
		t.Fatalf("the pinned client was answered %v before its session expired on the leader: a follower vouched for a client the leader no longer heard", margin.Round(time.Millisecond))
	}

	// The client that could move did, and kept its session.
	waitFor(t, 2*sessionTimeout, "the mobile client to be answered after the cut", func() bool {
		return time.Unix(0, mobile.lastRead.Load()).After(deleted)
	})
	there, st, err := watcher.Exists(mobile.path)
	switch {
	case err != nil:
		t.Fatal(err)
	case !there:
		t.Fatal("the mobile client's ephemeral is gone: its session expired although it could move")
	case st.EphemeralOwner != mobile.session:
		t.Fatalf("the mobile client's ephemeral is owned by 0x%x, want 0x%x", st.EphemeralOwner, mobile.session)
	}
	if mobile.conn.SessionID() != mobile.session {
		t.Fatalf("the mobile client has session 0x%x, want 0x%x", mobile.conn.SessionID(), mobile.session)
	}
}

// mustMkdir creates a persistent node, which may exist already.
func mustMkdir(t *testing.T, addr, path string) {
	t.Helper()
	c, _ := dial(t, addr, 10*time.Second)
	if _, err := c.Create(path, nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("create %s: %v", path, err)
	}
}
