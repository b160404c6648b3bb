package conformance

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// recipeCheckTimeout bounds one lock check on one target.
const recipeCheckTimeout = 90 * time.Second

// recipeLockRun describes a contention run: workers sessions each take the lock
// rounds times and, inside, increment a counter znode with a read and a
// versioned write, and an in-test counter the same way.
type recipeLockRun struct {
	recipe  string
	dir     string // created before the run; locks live under it
	workers int
	rounds  int
	// gate makes each holder wait, inside the critical section, until all
	// other workers are parked on a watch (see recipeStats.gate).
	gate    bool
	newLock func(conn *zk.Conn, st *recipeStats) recipeLocker
}

// recipeLockOutcome is what a run observed.
type recipeLockOutcome struct {
	st      *recipeStats
	total   int64         // acquisitions
	elapsed time.Duration // from the first acquire to the last release
	order   []int64       // sequence numbers of held nodes, in acquisition order (sequential locks only)
}

// recipeHeldNoder is a lock that can tell which node it holds.
type recipeHeldNoder interface{ heldNode() string }

// runRecipeLocks runs r against addr and checks mutual exclusion and both
// counters; the caller checks the recipe's own properties.
func runRecipeLocks(t *testing.T, addr string, r recipeLockRun) recipeLockOutcome {
	t.Helper()
	admin := recipeConnect(t, addr, recipeSessionOpts{})
	counterPath := r.dir + "-counter"
	if err := recipeEnsurePath(admin.conn, r.dir); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.conn.Create(counterPath, []byte("0"), zk.FlagPersistent, recipeACL); err != nil {
		t.Fatalf("create %s: %v", counterPath, err)
	}
	sessions := make([]*recipeSession, r.workers)
	for i := range sessions {
		sessions[i] = recipeConnect(t, addr, recipeSessionOpts{})
	}

	st := newRecipeStats(r.workers)
	ctx, cancel := context.WithTimeoutCause(context.Background(), recipeCheckTimeout,
		fmt.Errorf("%s did not finish within %v", r.recipe, recipeCheckTimeout))
	defer cancel()
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)

	var (
		local   atomic.Int64 // in-test counter, read and written separately on purpose
		orderMu sync.Mutex
		order   []int64
		wg      sync.WaitGroup
	)
	start := time.Now()
	for i, s := range sessions {
		lk := r.newLock(s.conn, st)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer st.done()
			for round := range r.rounds {
				if err := recipeLockRound(ctx, s.conn, lk, st, counterPath, &local, r.gate, func(node string) {
					orderMu.Lock()
					order = append(order, recipeSeq(node))
					orderMu.Unlock()
				}); err != nil {
					fail(fmt.Errorf("worker %d round %d: %w", i, round, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		t.Fatalf("%s: %v", r.recipe, err)
	}

	total := int64(r.workers * r.rounds)
	if m := st.maxHolders.Load(); m != 1 {
		t.Errorf("%s: %d holders at once, want at most 1", r.recipe, m)
	}
	if n := local.Load(); n != total {
		t.Errorf("%s: in-test counter %d, want %d", r.recipe, n, total)
	}
	data, _, err := admin.conn.Get(counterPath)
	if err != nil {
		t.Fatalf("get %s: %v", counterPath, err)
	}
	if string(data) != strconv.FormatInt(total, 10) {
		t.Errorf("%s: counter znode %q, want %d", r.recipe, data, total)
	}
	return recipeLockOutcome{st: st, total: total, elapsed: elapsed, order: order}
}

// recipeLockRound takes the lock once and does one critical section.
func recipeLockRound(ctx context.Context, conn *zk.Conn, lk recipeLocker, st *recipeStats, counterPath string,
	local *atomic.Int64, gate bool, held func(node string)) error {
	release, err := lk.acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	st.enter()
	if h, ok := lk.(recipeHeldNoder); ok {
		held(h.heldNode())
	}
	data, stat, err := conn.Get(counterPath)
	if err != nil {
		return fmt.Errorf("get %s: %w", counterPath, err)
	}
	v, err := strconv.Atoi(string(data))
	if err != nil {
		return fmt.Errorf("counter %q: %w", data, err)
	}
	seen := local.Load()
	if gate {
		if err := st.gate(ctx); err != nil {
			return err
		}
	}
	if _, err := conn.Set(counterPath, []byte(strconv.Itoa(v+1)), stat.Version); err != nil {
		// A version mismatch means someone else wrote inside our hold.
		return fmt.Errorf("set %s at version %d: %w", counterPath, stat.Version, err)
	}
	local.Store(seen + 1)
	st.exit()
	st.noteRelease()
	if err := release(); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}

// recipeSeq is the sequence number of a sequential node, -1 if it has none.
func recipeSeq(node string) int64 {
	name := path.Base(node)
	if len(name) < 10 {
		return -1
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// TestRecipeExclusiveNode is seed 000's first lock: one ephemeral node,
// losers wait on an exists watch and race again. Every release wakes every
// waiter: more than one event per handoff.
func TestRecipeExclusiveNode(t *testing.T) {
	forEachBusyTarget(t, func(t *testing.T, target, addr string) {
		out := runRecipeLocks(t, addr, recipeLockRun{
			recipe: "exclusive-node", dir: "/recipe/exclusive", workers: 5, rounds: 6, gate: true,
			newLock: func(conn *zk.Conn, st *recipeStats) recipeLocker {
				return &recipeNodeLock{conn: conn, path: "/recipe/exclusive/lock", st: st}
			},
		})
		recipeReportHerd(t, "exclusive-node", target, out)
	})
}

// TestRecipeQueueLock is seed 002's DistributedLock: a queue of sequential
// nodes where every waiter watches the parent's children list.
func TestRecipeQueueLock(t *testing.T) {
	forEachBusyTarget(t, func(t *testing.T, target, addr string) {
		out := runRecipeLocks(t, addr, recipeLockRun{
			recipe: "queue-children-watch", dir: "/recipe/queue", workers: 5, rounds: 6, gate: true,
			newLock: func(conn *zk.Conn, st *recipeStats) recipeLocker {
				return &recipeQueueLock{conn: conn, dir: "/recipe/queue", st: st}
			},
		})
		recipeReportHerd(t, "queue-children-watch", target, out)
	})
}

// recipeReportHerd logs a herd recipe's RESULT and checks that releases woke
// more than one waiter on average.
func recipeReportHerd(t *testing.T, recipe, target string, out recipeLockOutcome) {
	t.Helper()
	h, e := out.st.handoffs.Load(), out.st.events.Load()
	recipeResult(t, recipe, target, h, e, out.total, out.elapsed)
	if h == 0 {
		t.Fatalf("%s: no handoffs to a waiting worker", recipe)
	}
	if e <= h {
		t.Errorf("%s: %d events for %d handoffs; with 4 waiters the herd effect should wake more than one per handoff", recipe, e, h)
	}
}

// recipeFairLock is a recipeSeqLock that remembers the node it holds.
type recipeFairLock struct {
	recipeSeqLock
	held string
}

func (l *recipeFairLock) acquire(ctx context.Context) (func() error, error) {
	release, err := l.recipeSeqLock.acquire(ctx)
	if err != nil {
		return nil, err
	}
	l.held = l.lastNode
	return release, nil
}

func (l *recipeFairLock) heldNode() string { return l.held }

// TestRecipeFairLock is the fair lock of seeds 003 and 004: each waiter
// watches only its predecessor, so every handoff is exactly one
// notification, and the lock goes in queue order.
func TestRecipeFairLock(t *testing.T) {
	forEachBusyTarget(t, func(t *testing.T, target, addr string) {
		out := runRecipeLocks(t, addr, recipeLockRun{
			recipe: "fair-predecessor", dir: "/recipe/fair", workers: 5, rounds: 6, gate: true,
			newLock: func(conn *zk.Conn, st *recipeStats) recipeLocker {
				return &recipeFairLock{recipeSeqLock: recipeSeqLock{conn: conn, dir: "/recipe/fair", st: st}}
			},
		})
		h, e := out.st.handoffs.Load(), out.st.events.Load()
		recipeResult(t, "fair-predecessor", target, h, e, out.total, out.elapsed)
		if h < out.total-5 {
			t.Errorf("fair lock: %d handoffs to a parked waiter out of %d acquisitions, want at least %d", h, out.total, out.total-5)
		}
		if e != h {
			t.Errorf("fair lock: %d watch events for %d handoffs, want exactly one per handoff", e, h)
		}
		for i := 1; i < len(out.order); i++ {
			if out.order[i] <= out.order[i-1] {
				t.Errorf("fair lock: acquisition %d held sequence %d after %d, want queue order (order %v)", i, out.order[i], out.order[i-1], out.order)
				break
			}
		}
	})
}

// TestRecipeNonFairLock is seed 004's non-fair branch: waiters withdraw,
// watch the smallest node and queue again when it goes, so every release
// wakes all of them.
func TestRecipeNonFairLock(t *testing.T) {
	forEachBusyTarget(t, func(t *testing.T, target, addr string) {
		out := runRecipeLocks(t, addr, recipeLockRun{
			recipe: "nonfair-smallest", dir: "/recipe/nonfair", workers: 5, rounds: 6, gate: true,
			newLock: func(conn *zk.Conn, st *recipeStats) recipeLocker {
				return &recipeSeqLock{conn: conn, dir: "/recipe/nonfair", st: st, nonFair: true}
			},
		})
		recipeReportHerd(t, "nonfair-smallest", target, out)
	})
}

// TestRecipeReentrantLock is seed 003's reentrant lock: one znode holding
// the owner and a hold count. The owner re-enters without waiting; the
// others stay parked through every partial release and get the lock only
// when the count is back to zero.
func TestRecipeReentrantLock(t *testing.T) {
	const (
		workers = 4
		rounds  = 4
		depth   = 3
		lock    = "/recipe/reentrant/lock"
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
			local atomic.Int64
			wg    sync.WaitGroup
		)
		start := time.Now()
		for i, s := range sessions {
			lk := &recipeReentrantLock{conn: s.conn, path: lock, owner: "worker-" + strconv.Itoa(i), st: st}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer st.done()
				for round := range rounds {
					if err := recipeReentrantRound(ctx, lk, st, depth, &local); err != nil {
						fail(fmt.Errorf("worker %d round %d: %w", i, round, err))
						return
					}
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		if err := context.Cause(ctx); err != nil {
			t.Fatalf("reentrant: %v", err)
		}
		if m := st.maxHolders.Load(); m != 1 {
			t.Errorf("reentrant: %d owners at once, want at most 1", m)
		}
		if n := local.Load(); n != workers*rounds {
			t.Errorf("reentrant: in-test counter %d, want %d", n, workers*rounds)
		}
		if ok, _, err := admin.conn.Exists(lock); err != nil || ok {
			t.Errorf("reentrant: lock node exists=%v (err %v) after the last release, want gone", ok, err)
		}
		h, e := st.handoffs.Load(), st.events.Load()
		recipeResult(t, "reentrant", target, h, e, workers*rounds, elapsed)
		if h == 0 {
			t.Errorf("reentrant: no handoff to a waiting owner")
		}
	})
}

// recipeReentrantRound takes the lock depth times (re-entering after the first),
// increments the in-test counter and releases it depth times. Between
// partial releases it waits until every other worker is parked again: they
// were woken by the count's change and must not have got in.
func recipeReentrantRound(ctx context.Context, lk *recipeReentrantLock, st *recipeStats, depth int, local *atomic.Int64) error {
	reentered, _, err := lk.acquireReentrant(ctx)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	if reentered {
		return fmt.Errorf("first acquire reported a re-entry")
	}
	st.enter()
	for d := 2; d <= depth; d++ {
		reentered, parked, err := lk.acquireReentrant(ctx)
		if err != nil {
			return fmt.Errorf("re-enter %d: %w", d, err)
		}
		if !reentered || parked {
			return fmt.Errorf("re-enter %d: reentered=%v parked=%v, want a re-entry without waiting", d, reentered, parked)
		}
		data, _, err := lk.conn.Get(lk.path)
		if err != nil {
			return fmt.Errorf("get %s: %w", lk.path, err)
		}
		if owner, n, err := recipeDecodeHold(data); err != nil || owner != lk.owner || n != d {
			return fmt.Errorf("after re-enter %d the lock data is %q, want %q", d, data, recipeEncodeHold(lk.owner, d))
		}
	}
	seen := local.Load()
	if err := st.gate(ctx); err != nil {
		return err
	}
	local.Store(seen + 1)
	for d := depth; d > 1; d-- {
		left, err := lk.releaseReentrant()
		if err != nil {
			return fmt.Errorf("partial release at %d: %w", d, err)
		}
		if left != d-1 {
			return fmt.Errorf("partial release at %d left %d, want %d", d, left, d-1)
		}
		if err := st.gate(ctx); err != nil {
			return err
		}
		if n := st.holders.Load(); n != 1 {
			return fmt.Errorf("%d holders while %s still holds %d", n, lk.owner, d-1)
		}
	}
	st.exit()
	if left, err := lk.releaseReentrant(); err != nil || left != 0 {
		return fmt.Errorf("final release: left %d, err %v", left, err)
	}
	return nil
}
