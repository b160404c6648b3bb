package conformance

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestRecipeStockDeduction is seed 003's scenario: a stock of 5000 kept in
// a znode, 100 sessions each deducting 50 through the fair lock (read,
// check, versioned write). The stock ends at exactly 0, is never seen
// negative or sold twice — every value from 5000 down to 1 is read by
// exactly one deduction — and the throughput is logged per target.
func TestRecipeStockDeduction(t *testing.T) {
	const (
		stock    = 5000
		sessions = 100
		each     = 50
		dir      = "/recipe/stock/lock"
		value    = "/recipe/stock/value"
	)
	forEachBusyTarget(t, func(t *testing.T, target, addr string) {
		admin := recipeConnect(t, addr, recipeSessionOpts{})
		if err := recipeEnsurePath(admin.conn, dir); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.conn.Create(value, []byte(strconv.Itoa(stock)), zk.FlagPersistent, recipeACL); err != nil {
			t.Fatalf("create %s: %v", value, err)
		}
		buyers := make([]*recipeSession, sessions)
		for i := range buyers {
			buyers[i] = recipeConnect(t, addr, recipeSessionOpts{})
		}
		st := newRecipeStats(sessions)
		ctx, cancel := context.WithTimeout(context.Background(), 2*recipeCheckTimeout)
		defer cancel()
		ctx, fail := context.WithCancelCause(ctx)
		defer fail(nil)

		var (
			seen     [stock + 1]atomic.Int32 // seen[v]: deductions that read v
			oversell atomic.Int64
			wg       sync.WaitGroup
		)
		start := time.Now()
		for i, b := range buyers {
			lk := &recipeSeqLock{conn: b.conn, dir: dir, st: st}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer st.done()
				for k := range each {
					if err := recipeDeductOne(ctx, b.conn, lk, st, value, seen[:], &oversell); err != nil {
						fail(fmt.Errorf("buyer %d deduction %d: %w", i, k, err))
						return
					}
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		if err := context.Cause(ctx); err != nil {
			t.Fatalf("stock: %v", err)
		}

		if m := st.maxHolders.Load(); m != 1 {
			t.Errorf("stock: %d holders at once, want at most 1", m)
		}
		if n := oversell.Load(); n != 0 {
			t.Errorf("stock: %d deductions found no stock left (oversell)", n)
		}
		data, _, err := admin.conn.Get(value)
		if err != nil {
			t.Fatalf("get %s: %v", value, err)
		}
		if string(data) != "0" {
			t.Errorf("stock: final stock %q, want 0", data)
		}
		bad := 0
		for v := 1; v <= stock; v++ {
			if n := seen[v].Load(); n != 1 && bad < 10 {
				bad++
				t.Errorf("stock: value %d read by %d deductions, want exactly 1", v, n)
			}
		}
		if n := seen[0].Load(); n != 0 {
			t.Errorf("stock: %d deductions read 0", n)
		}
		h, e := st.handoffs.Load(), st.events.Load()
		recipeResult(t, "stock-deduction", target, h, e, stock, elapsed)
		if e > stock {
			// Each release wakes at most its successor. (Without gating,
			// a waiter may find its predecessor gone before watching it,
			// so there may be fewer events than releases.)
			t.Errorf("stock: %d watch events for %d releases, want at most one per release", e, stock)
		}
	})
}

// recipeDeductOne takes the fair lock and deducts one from the stock znode.
func recipeDeductOne(ctx context.Context, conn *zk.Conn, lk recipeLocker, st *recipeStats, value string,
	seen []atomic.Int32, oversell *atomic.Int64) error {
	release, err := lk.acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	st.enter()
	data, stat, err := conn.Get(value)
	if err != nil {
		return fmt.Errorf("get %s: %w", value, err)
	}
	v, err := strconv.Atoi(string(data))
	if err != nil || v < 0 || v >= len(seen) {
		return fmt.Errorf("stock value %q", data)
	}
	seen[v].Add(1)
	if v == 0 {
		oversell.Add(1)
	} else if _, err := conn.Set(value, []byte(strconv.Itoa(v-1)), stat.Version); err != nil {
		return fmt.Errorf("set %s at version %d: %w", value, stat.Version, err)
	}
	st.exit()
	st.noteRelease()
	return release()
}
