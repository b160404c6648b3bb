package conformance

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/faultnet"
)

// TestRecipeCrashedHolder is the crash safety every ZooKeeper lock relies
// on: a holder whose process dies inside the critical section (its TCP
// connection cut, its session left to expire) keeps the lock only until its
// session expires; then its ephemeral node disappears and the next waiter
// of the fair lock proceeds. When the dead client comes back it learns its
// session expired, and its node is gone for good.
func TestRecipeCrashedHolder(t *testing.T) {
	const (
		dir     = "/recipe/crash"
		counter = "/recipe/crash-counter"
		waiters = 2
	)
	forEachBusyTarget(t, func(t *testing.T, target, addr string) {
		admin := recipeConnect(t, addr, recipeSessionOpts{})
		if err := recipeEnsurePath(admin.conn, dir); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.conn.Create(counter, []byte("0"), zk.FlagPersistent, recipeACL); err != nil {
			t.Fatalf("create %s: %v", counter, err)
		}
		st := newRecipeStats(1 + waiters)
		proxy := faultnet.StartProxy(t, addr)
		holder := recipeConnect(t, proxy.Addr(), recipeSessionOpts{timeout: recipeSessionTimeout})
		ws := make([]*recipeSession, waiters)
		for i := range ws {
			ws[i] = recipeConnect(t, addr, recipeSessionOpts{})
		}
		ctx, cancel := context.WithTimeout(context.Background(), recipeCheckTimeout)
		defer cancel()
		ctx, fail := context.WithCancelCause(ctx)
		defer fail(nil)

		holderLock := &recipeSeqLock{conn: holder.conn, dir: dir, st: st}
		if _, err := holderLock.acquire(ctx); err != nil {
			t.Fatalf("holder: acquire: %v", err)
		}
		st.enter()
		holderNode := holderLock.lastNode

		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			acquired []time.Time
		)
		start := time.Now()
		for i, w := range ws {
			lk := &recipeSeqLock{conn: w.conn, dir: dir, st: st}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer st.done()
				release, err := lk.acquire(ctx)
				if err != nil {
					fail(fmt.Errorf("waiter %d: acquire: %w", i, err))
					return
				}
				st.enter()
				mu.Lock()
				acquired = append(acquired, time.Now())
				mu.Unlock()
				err = recipeIncrement(w.conn, counter)
				st.exit()
				st.noteRelease()
				if err == nil {
					err = release()
				}
				if err != nil {
					fail(fmt.Errorf("waiter %d: %w", i, err))
				}
			}()
		}
		// Crash only once both waiters are parked behind the holder.
		if err := st.gate(ctx); err != nil {
			t.Fatalf("waiters did not queue: %v", err)
		}
		st.exit() // the holder's process is dead from here on
		st.done()
		st.handoffs.Add(1) // the crash hands the lock to the first waiter
		cutAt := time.Now()
		proxy.Sever()
		if ok, _, err := admin.conn.Exists(holderNode); err != nil || !ok {
			t.Errorf("right after the cut: %s exists=%v (err %v); the node must outlive the TCP connection until the session expires", holderNode, ok, err)
		}

		wg.Wait()
		elapsed := time.Since(start)
		if err := context.Cause(ctx); err != nil {
			t.Fatalf("crash: %v", err)
		}
		if len(acquired) != waiters {
			t.Fatalf("crash: %d waiters got the lock, want %d", len(acquired), waiters)
		}
		for _, at := range acquired {
			if d := at.Sub(cutAt); d < recipeMinExpiry {
				t.Errorf("a waiter got the lock %v after the holder was cut, before its %v session could have expired", d, recipeSessionTimeout)
			}
		}
		if ok, _, err := admin.conn.Exists(holderNode); err != nil || ok {
			t.Errorf("after expiry: %s exists=%v (err %v), want gone", holderNode, ok, err)
		}
		if m := st.maxHolders.Load(); m != 1 {
			t.Errorf("crash: %d holders at once, want at most 1", m)
		}
		if data, _, err := admin.conn.Get(counter); err != nil || string(data) != strconv.Itoa(waiters) {
			t.Errorf("crash: counter %q (err %v), want %d", data, err, waiters)
		}
		h, e := st.handoffs.Load(), st.events.Load()
		recipeResult(t, "crashed-holder", target, h, e, waiters+1, elapsed)
		if e != h {
			t.Errorf("crash: %d watch events for %d handoffs, want exactly one per handoff", e, h)
		}

		// The dead client comes back: its session is over.
		mark := holder.mark()
		proxy.Heal()
		if err := holder.waitState(mark, zk.StateExpired, recipeFailoverTimeout); err != nil {
			t.Fatalf("holder after heal: %v", err)
		}
		if err := holder.waitState(mark, zk.StateHasSession, recipeFailoverTimeout); err != nil {
			t.Fatalf("holder after heal: %v", err)
		}
		if err := holder.conn.Delete(holderNode, -1); !errors.Is(err, zk.ErrNoNode) {
			t.Errorf("holder's late release of %s: %v, want %v", holderNode, err, zk.ErrNoNode)
		}
	})
}

// recipeIncrement adds one to a counter znode with a versioned write, which
// fails if anyone else wrote it in between.
func recipeIncrement(conn *zk.Conn, p string) error {
	data, stat, err := conn.Get(p)
	if err != nil {
		return fmt.Errorf("get %s: %w", p, err)
	}
	v, err := strconv.Atoi(string(data))
	if err != nil {
		return fmt.Errorf("counter %q: %w", data, err)
	}
	if _, err := conn.Set(p, []byte(strconv.Itoa(v+1)), stat.Version); err != nil {
		return fmt.Errorf("set %s at version %d: %w", p, stat.Version, err)
	}
	return nil
}
