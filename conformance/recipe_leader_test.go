package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/faultnet"
)

const (
	recipeElectionLatch    = "/recipe/election/latch"
	recipeElectionInstance = "/recipe/election/leader/instance"
	// recipeFailoverTimeout bounds a failover: a session expiry (4 s, rounded up
	// to a tick) plus a loaded machine's delays.
	recipeFailoverTimeout = 30 * time.Second
)

// recipeCandidate is one instance taking part in the election.
type recipeCandidate struct {
	id    string
	sess  *recipeSession
	proxy *faultnet.Proxy
	st    *recipeStats
	sig   *recipeSignal

	leader atomic.Bool // believes it is the leader
	gone   atomic.Bool // closed or cut off by the test: errors are expected
}

// stepDown ends this candidate's leadership, if it has one.
func (c *recipeCandidate) stepDown() {
	if c.leader.CompareAndSwap(true, false) {
		c.st.exit()
		c.sig.notify()
	}
}

// onState makes a leader step down as soon as its connection is lost, as
// Curator's and Elastic-Job's listeners do: until it is back it cannot
// know whether its session, and so its leadership, survived.
func (c *recipeCandidate) onState(s zk.State) {
	switch s {
	case zk.StateDisconnected, zk.StateExpired:
		c.stepDown()
	}
}

// elect is Elastic-Job's electLeader: under the latch lock, become leader
// by writing the instance node unless someone already has.
func (c *recipeCandidate) elect(ctx context.Context) error {
	lock := &recipeSeqLock{conn: c.sess.conn, dir: recipeElectionLatch, st: c.st}
	release, err := lock.acquire(ctx)
	if err != nil {
		return fmt.Errorf("latch: %w", err)
	}
	ok, _, err := c.sess.conn.Exists(recipeElectionInstance)
	if err == nil && !ok {
		_, err = c.sess.conn.Create(recipeElectionInstance, []byte(c.id), zk.FlagEphemeral, recipeACL)
		if err == nil {
			c.st.enter()
			c.leader.Store(true)
			c.sig.notify()
		}
	}
	if rerr := release(); err == nil {
		err = rerr
	}
	return err
}

// run elects, then waits for the instance node to go and elects again.
func (c *recipeCandidate) run(ctx context.Context) error {
	for range recipeMaxAttempts {
		if err := c.elect(ctx); err != nil {
			return err
		}
		ok, _, ch, err := c.sess.conn.ExistsW(recipeElectionInstance)
		if err != nil {
			return fmt.Errorf("exists %s: %w", recipeElectionInstance, err)
		}
		if !ok {
			continue
		}
		ev, err := c.st.await(ctx, ch)
		if err != nil {
			return err
		}
		if ev.Type != zk.EventNodeDeleted {
			return fmt.Errorf("exists watch on %s fired %v", recipeElectionInstance, ev.Type)
		}
	}
	return fmt.Errorf("no stable leader in %d elections", recipeMaxAttempts)
}

// TestRecipeLeaderElection is Elastic-Job's leader election (seed 001):
// take the latch lock, write the ephemeral leader/instance node if none
// exists. There is exactly one leader at any time, and it fails over when
// the leader closes its session and when its TCP connection is cut (then
// only once the session expires: the node must outlive the connection).
func TestRecipeLeaderElection(t *testing.T) {
	const n = 3
	forEachBusyTarget(t, func(t *testing.T, target, addr string) {
		admin := recipeConnect(t, addr, recipeSessionOpts{})
		for _, p := range []string{recipeElectionLatch, "/recipe/election/leader"} {
			if err := recipeEnsurePath(admin.conn, p); err != nil {
				t.Fatal(err)
			}
		}
		// active is one more than the candidates so that st.gate waits
		// for all of them, the leader included, to park on the instance
		// node's watch: each failover then wakes every follower.
		st, sig := newRecipeStats(n+1), newRecipeSignal()
		parkAll := func() {
			t.Helper()
			gctx, gcancel := context.WithTimeout(context.Background(), commandTimeout)
			defer gcancel()
			if err := st.gate(gctx); err != nil {
				t.Fatalf("candidates did not all watch the leader node: %v", err)
			}
		}
		cands := make([]*recipeCandidate, n)
		for i := range cands {
			c := &recipeCandidate{id: fmt.Sprintf("instance-%d", i), st: st, sig: sig}
			c.proxy = faultnet.StartProxy(t, addr)
			c.sess = recipeConnect(t, c.proxy.Addr(), recipeSessionOpts{timeout: recipeSessionTimeout, onState: c.onState})
			cands[i] = c
		}

		ctx, cancel := context.WithTimeout(context.Background(), recipeCheckTimeout)
		defer cancel()
		var (
			wg     sync.WaitGroup
			errMu  sync.Mutex
			runErr []error
		)
		start := time.Now()
		for _, c := range cands {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.run(ctx); err != nil && !c.gone.Load() && ctx.Err() == nil {
					errMu.Lock()
					runErr = append(runErr, fmt.Errorf("%s: %w", c.id, err))
					errMu.Unlock()
				}
			}()
		}
		var stopOnce sync.Once
		stopAll := func() {
			stopOnce.Do(func() {
				cancel()
				wg.Wait()
				for _, err := range runErr {
					t.Error(err)
				}
			})
		}
		defer stopAll()

		excluded := map[*recipeCandidate]bool{}
		first := recipeWaitLeader(t, admin, cands, excluded, sig, commandTimeout)

		// Failover 1: the leader closes its session; its node goes at once.
		parkAll()
		first.gone.Store(true)
		first.stepDown()
		first.sess.conn.Close()
		excluded[first] = true
		st.done()
		second := recipeWaitLeader(t, admin, cands, excluded, sig, recipeFailoverTimeout)
		parkAll()

		// Failover 2: the leader's TCP connection is cut; its session, and
		// the instance node with it, lives on until it expires.
		second.gone.Store(true)
		cutAt := time.Now()
		second.proxy.Sever()
		excluded[second] = true
		if data, stat, err := admin.conn.Get(recipeElectionInstance); err != nil {
			t.Errorf("right after the cut: get %s: %v, want the cut leader's node", recipeElectionInstance, err)
		} else if string(data) != second.id || stat.EphemeralOwner != second.sess.conn.SessionID() {
			// Its session may already be gone only if the server expired
			// it on disconnect, which ZooKeeper never does.
			t.Errorf("right after the cut: %s is %q owned by 0x%x, want %q owned by 0x%x",
				recipeElectionInstance, data, stat.EphemeralOwner, second.id, second.sess.conn.SessionID())
		}
		third := recipeWaitLeader(t, admin, cands, excluded, sig, recipeFailoverTimeout)
		failover := time.Since(cutAt)
		elapsed := time.Since(start)
		t.Logf("leaders %s → %s → %s; failover after the cut took %v", first.id, second.id, third.id, failover.Round(time.Millisecond))
		if failover < recipeMinExpiry {
			t.Errorf("a new leader %v after the old one's TCP was cut, before its %v session could have expired", failover, recipeSessionTimeout)
		}
		if m := st.maxHolders.Load(); m != 1 {
			t.Errorf("election: %d leaders at once, want exactly one", m)
		}
		stopAll()
		recipeResult(t, "leader-election", target, 2, st.events.Load(), 3, elapsed)
	})
}

// recipeWaitLeader waits until exactly one candidate outside excluded believes
// it leads, and checks that the instance node names it and belongs to its
// session.
func recipeWaitLeader(t *testing.T, admin *recipeSession, cands []*recipeCandidate, excluded map[*recipeCandidate]bool, sig *recipeSignal, timeout time.Duration) *recipeCandidate {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		changed := sig.changed()
		var leaders []*recipeCandidate
		for _, c := range cands {
			if c.leader.Load() {
				leaders = append(leaders, c)
			}
		}
		if len(leaders) > 1 {
			t.Fatalf("%d candidates lead at once", len(leaders))
		}
		if len(leaders) == 1 && !excluded[leaders[0]] {
			c := leaders[0]
			data, stat, err := admin.conn.Get(recipeElectionInstance)
			if errors.Is(err, zk.ErrNoNode) {
				t.Fatalf("%s leads but %s does not exist", c.id, recipeElectionInstance)
			}
			if err != nil {
				t.Fatalf("get %s: %v", recipeElectionInstance, err)
			}
			if string(data) != c.id || stat.EphemeralOwner != c.sess.conn.SessionID() {
				t.Fatalf("%s leads but %s is %q owned by 0x%x", c.id, recipeElectionInstance, data, stat.EphemeralOwner)
			}
			return c
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("no new leader within %v", timeout)
		}
	}
}
