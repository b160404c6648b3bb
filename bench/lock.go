package bench

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// fairLock is the seeds' fair lock: a waiter queues an ephemeral
// sequential child under dir and holds the lock once its child is the
// first; until then it watches only its predecessor, so a release wakes
// one waiter, not all of them.
type fairLock struct {
	conn  *zk.Conn
	dir   string
	own   string // the held or queued child's path
	limit int    // bounds the rounds of one acquire: at most one per waiter ahead
}

// acquire queues and returns once this session holds the lock.
func (l *fairLock) acquire(ctx context.Context) error {
	name, err := l.conn.Create(l.dir+"/n-", nil, zk.FlagEphemeral|zk.FlagSequence, openACL)
	if err != nil {
		return fmt.Errorf("queue under %s: %w", l.dir, err)
	}
	l.own = name
	base := path.Base(name)
	for range l.limit {
		kids, _, err := l.conn.Children(l.dir)
		if err != nil {
			return fmt.Errorf("list %s: %w", l.dir, err)
		}
		// Every child is n- and a ten-digit sequence: names sort as
		// their sequence numbers do.
		slices.Sort(kids)
		i := slices.Index(kids, base)
		switch {
		case i < 0:
			return fmt.Errorf("%s vanished while queued (session lost?)", name)
		case i == 0:
			return nil
		}
		there, _, gone, err := l.conn.ExistsW(l.dir + "/" + kids[i-1])
		if err != nil {
			return fmt.Errorf("watch %s: %w", kids[i-1], err)
		}
		if !there {
			continue
		}
		select {
		case <-gone:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return fmt.Errorf("%s not first after %d rounds", name, l.limit)
}

// release deletes the held child, waking the next waiter.
func (l *fairLock) release() error {
	if err := l.conn.Delete(l.own, -1); err != nil {
		return fmt.Errorf("release %s: %w", l.own, err)
	}
	return nil
}

// queueBytes is the size of a lock node's listing with n waiters queued:
// each child's name (n- and ten digits) with its length prefix.
func queueBytes(n int) int { return 16 * n }

// exclusion counts the sessions inside the critical section, to catch two
// at once.
type exclusion struct {
	inside, most atomic.Int32
}

func (x *exclusion) enter() {
	n := x.inside.Add(1)
	for m := x.most.Load(); n > m && !x.most.CompareAndSwap(m, n); m = x.most.Load() {
	}
}

func (x *exclusion) exit() { x.inside.Add(-1) }

// check fails when two sessions were ever inside at once.
func (x *exclusion) check() error {
	if m := x.most.Load(); m > 1 {
		return fmt.Errorf("%d sessions held the lock at once", m)
	}
	return nil
}

func lockSize(s Size) (sessions, acquisitions int) {
	return or(s.Sessions, 100), or(s.Acquisitions, 50)
}

var lockWorkload = &workload{
	name:  "lock",
	about: "the seeds' fair lock: sessions take and release it in turn (handoffs/s, acquisition latency)",
	describe: func(s Size) string {
		n, a := lockSize(s)
		return fmt.Sprintf("%d sessions × %d acquisitions of one fair lock", n, a)
	},
	run: runLock,
}

// runLock: every session takes the lock acquisitions times and releases it
// at once. The latency of an acquisition runs from queueing to holding.
func runLock(ctx context.Context, e *env) (*measurement, error) {
	n, each := lockSize(e.opt.Size)
	dir, err := e.mkdir("lock", nil)
	if err != nil {
		return nil, err
	}
	g, err := e.connectAll(ctx, n, dialOptions{bytes: queueBytes(n)})
	if err != nil {
		return nil, err
	}
	defer g.close()
	lat := make([][]time.Duration, n)
	e.prog.phase("measure", int64(n*each), "acquisitions")
	t := e.startTimer()
	err = forEach(ctx, n, n, func(ctx context.Context, i int) error {
		l := &fairLock{conn: g.list[i].conn, dir: dir, limit: n + 8}
		lat[i] = make([]time.Duration, 0, each)
		for range each {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			t0 := time.Now()
			if err := l.acquire(ctx); err != nil {
				return err
			}
			lat[i] = append(lat[i], time.Since(t0))
			if err := l.release(); err != nil {
				return err
			}
			e.prog.done.Add(1)
		}
		return nil
	})
	elapsed := t.elapsed()
	if err != nil {
		return nil, err
	}
	m := rated("handoffs/s", n*each, elapsed, "acquire", lat...)
	t.serverCPU(m, "handoff", n*each)
	return m, nil
}

func stockSize(s Size) (sessions, stock int) {
	return or(s.Sessions, 100), or(s.Stock, 5000)
}

var stockWorkload = &workload{
	name:  "stock",
	about: "the seeds' stock deduction: sessions take the fair lock to decrement a stock to 0 (decrements/s; fails unless it ends at exactly 0)",
	describe: func(s Size) string {
		n, stock := stockSize(s)
		return fmt.Sprintf("%d sessions decrement a stock of %d to 0 under the fair lock", n, stock)
	},
	run: runStock,
}

// runStock is the seeds' stock deduction: the stock is shared out among
// the sessions (5000 over 100 sessions: 50 each, as the seed's 100 users
// sending 50 requests each), and each deduction takes the lock, reads the
// stock, writes it back one lower at the version it read, and releases.
// The run fails unless every value from the stock down to 1 was read by
// exactly one deduction, no deduction found the stock empty, no write was
// refused and the stock ends at 0.
func runStock(ctx context.Context, e *env) (*measurement, error) {
	n, stock := stockSize(e.opt.Size)
	n = min(n, stock)
	dir, err := e.mkdir("lock", nil)
	if err != nil {
		return nil, err
	}
	value, err := e.mkdir("stock", []byte(strconv.Itoa(stock)))
	if err != nil {
		return nil, err
	}
	g, err := e.connectAll(ctx, n, dialOptions{bytes: queueBytes(n)})
	if err != nil {
		return nil, err
	}
	defer g.close()
	var (
		x    exclusion
		seen = make([]atomic.Int32, stock+1) // seen[v]: deductions that read v
		lat  = make([][]time.Duration, n)
		mu   sync.Mutex // guards last
		last time.Time  // when the last deduction's write was answered
	)
	e.prog.phase("measure", int64(stock), "decrements")
	t := e.startTimer()
	err = forEach(ctx, n, n, func(ctx context.Context, i int) error {
		c := g.list[i].conn
		l := &fairLock{conn: c, dir: dir, limit: n + 8}
		quota := stock / n
		if i < stock%n {
			quota++
		}
		for range quota {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			t0 := time.Now()
			if err := l.acquire(ctx); err != nil {
				return err
			}
			lat[i] = append(lat[i], time.Since(t0))
			x.enter()
			data, st, err := c.Get(value)
			if err != nil {
				return fmt.Errorf("read the stock: %w", err)
			}
			v, err := strconv.Atoi(string(data))
			if err != nil || v < 0 || v > stock {
				return fmt.Errorf("the stock reads %q", data)
			}
			seen[v].Add(1)
			if v == 0 {
				return errors.New("a deduction found the stock empty: another decremented twice")
			}
			if _, err := c.Set(value, []byte(strconv.Itoa(v-1)), st.Version); err != nil {
				return fmt.Errorf("write the stock %d at version %d: %w", v-1, st.Version, err)
			}
			x.exit()
			now := time.Now()
			mu.Lock()
			last = now
			mu.Unlock()
			if err := l.release(); err != nil {
				return err
			}
			e.prog.done.Add(1)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	elapsed := t.since(last)
	if err := x.check(); err != nil {
		return nil, err
	}
	data, _, err := e.admin.conn.Get(value)
	if err != nil {
		return nil, fmt.Errorf("read the final stock: %w", err)
	}
	if string(data) != "0" {
		return nil, fmt.Errorf("the stock ends at %s, not 0", data)
	}
	for v := 1; v <= stock; v++ {
		if k := seen[v].Load(); k != 1 {
			return nil, fmt.Errorf("stock value %d was read by %d deductions, not exactly 1", v, k)
		}
	}
	m := rated("decrements/s", stock, elapsed, "acquire", lat...)
	t.serverCPU(m, "decrement", stock)
	return m, nil
}
