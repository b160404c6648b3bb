package conformance

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Lease timing: the lock node lives for recipeLeaseTTL after its last change; a
// holder counts its lease from just before its create was sent and gives
// it up recipeLeaseMargin early, as lease clients must, so a late timer on a
// loaded machine cannot make it overlap its successor.
const (
	recipeLeaseTTL    = time.Second
	recipeLeaseMargin = 300 * time.Millisecond
	// recipeLeaseSlack covers ZooKeeper's millisecond timestamps.
	recipeLeaseSlack = 5 * time.Millisecond
)

// recipeLeaseHold is one worker's tenure.
type recipeLeaseHold struct {
	owner    string
	sent     time.Time // just before the create that won the lock
	acquired time.Time // when that create returned
}

// TestRecipeLeaseTTL is seed 004's lock with an expiry, made server-side:
// the lock is a TTL node, so a holder that overstays — never renews, never
// releases — loses the lock when the server removes the node, and the next
// waiter, parked on an exists watch, gets it. No successor may get it
// before the previous lease ran out, and an overstayer must find the lock
// no longer its own.
func TestRecipeLeaseTTL(t *testing.T) {
	const (
		workers = 3
		lock    = "/recipe/lease/lock"
	)
	forEachBusyTarget(t, func(t *testing.T, target, addr string) {
		admin := recipeConnect(t, addr, recipeSessionOpts{})
		if err := recipeEnsurePath(admin.conn, path.Dir(lock)); err != nil {
			t.Fatal(err)
		}
		sessions := make([]*recipeSession, workers)
		for i := range sessions {
			sessions[i] = recipeConnect(t, addr, recipeSessionOpts{})
		}
		st := newRecipeStats(workers)
		ctx, cancel := context.WithTimeout(context.Background(), recipeCheckTimeout)
		defer cancel()
		ctx, fail := context.WithCancelCause(ctx)
		defer fail(nil)

		var (
			mu    sync.Mutex
			holds []recipeLeaseHold
			wg    sync.WaitGroup
		)
		start := time.Now()
		for i, s := range sessions {
			owner := fmt.Sprintf("worker-%d", i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer st.done()
				h, waited, err := recipeLeaseAcquire(ctx, s.conn, lock, owner, st)
				if err != nil {
					fail(fmt.Errorf("%s: %w", owner, err))
					return
				}
				st.enter()
				if waited {
					st.handoffs.Add(1)
				}
				mu.Lock()
				holds = append(holds, h)
				mu.Unlock()
				// The holder's own expiry timer (seed 004's expiry thread):
				// past it, the holder must act as if it no longer holds.
				timer := time.NewTimer(time.Until(h.sent.Add(recipeLeaseTTL - recipeLeaseMargin)))
				select {
				case <-timer.C:
				case <-ctx.Done():
					timer.Stop()
					return
				}
				st.exit()
				if err := recipeLeaseOverstay(ctx, s.conn, lock, owner); err != nil {
					fail(fmt.Errorf("%s: %w", owner, err))
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		if err := context.Cause(ctx); err != nil {
			t.Fatalf("lease: %v", err)
		}

		if m := st.maxHolders.Load(); m != 1 {
			t.Errorf("lease: %d holders at once, want at most 1", m)
		}
		if len(holds) != workers {
			t.Fatalf("lease: %d tenures, want %d", len(holds), workers)
		}
		slices.SortFunc(holds, func(a, b recipeLeaseHold) int { return a.acquired.Compare(b.acquired) })
		for i := 1; i < len(holds); i++ {
			prev, next := holds[i-1], holds[i]
			if earliest := prev.sent.Add(recipeLeaseTTL - recipeLeaseSlack); next.acquired.Before(earliest) {
				t.Errorf("lease: %s got the lock %v after %s sent its create, before its %v TTL ran out",
					next.owner, next.acquired.Sub(prev.sent), prev.owner, recipeLeaseTTL)
			}
		}
		h, e := st.handoffs.Load(), st.events.Load()
		recipeResult(t, "lease-ttl", target, h, e, workers, elapsed)
		if h != workers-1 {
			t.Errorf("lease: %d handoffs to a parked waiter, want %d", h, workers-1)
		}
	})
}

// recipeLeaseAcquire creates the TTL lock node, waiting on an exists watch while
// someone else's lease is live. waited reports whether it had to wait.
func recipeLeaseAcquire(ctx context.Context, conn *zk.Conn, lock, owner string, st *recipeStats) (recipeLeaseHold, bool, error) {
	waited := false
	for range recipeMaxAttempts {
		sent := time.Now()
		_, err := conn.CreateTTL(lock, []byte(owner), zk.FlagTTL, recipeACL, recipeLeaseTTL)
		if err == nil {
			return recipeLeaseHold{owner: owner, sent: sent, acquired: time.Now()}, waited, nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return recipeLeaseHold{}, waited, fmt.Errorf("create TTL node %s: %w", lock, err)
		}
		ok, _, ch, err := conn.ExistsW(lock)
		if err != nil {
			return recipeLeaseHold{}, waited, fmt.Errorf("exists %s: %w", lock, err)
		}
		if !ok {
			continue
		}
		waited = true
		ev, err := st.await(ctx, ch)
		if err != nil {
			return recipeLeaseHold{}, waited, err
		}
		if ev.Type != zk.EventNodeDeleted {
			return recipeLeaseHold{}, waited, fmt.Errorf("exists watch on %s fired %v, want %v", lock, ev.Type, zk.EventNodeDeleted)
		}
	}
	return recipeLeaseHold{}, waited, fmt.Errorf("lock %s: no success in %d attempts", lock, recipeMaxAttempts)
}

// recipeLeaseOverstay is a holder that comes back after its lease: it waits until
// the server has taken the lock away (the node is gone or another owner's)
// and checks that a careful release — delete only what is still ours —
// finds nothing of its own to delete.
func recipeLeaseOverstay(ctx context.Context, conn *zk.Conn, lock, owner string) error {
	for range recipeMaxAttempts {
		data, _, ch, err := conn.GetW(lock)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("get %s: %w", lock, err)
		}
		if string(data) != owner {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("the TTL lock node %s was never removed: %w", lock, context.Cause(ctx))
		}
	}
	return fmt.Errorf("lock %s still ours after %d looks", lock, recipeMaxAttempts)
}
