package ensemble

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// maxAttempts bounds every retry loop of the lock and the stock updates.
const maxAttempts = 2000

// retryable reports an error after which the client reconnects and the
// operation may be tried again; whether it took effect is unknown.
// ErrNoServer comes back when the client went once round every server
// without a session: during an election the survivors close connections
// whose sync cannot reach a leader, and the killed node refuses them.
func retryable(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) || errors.Is(err, errTimeout)
}

// retry runs f until it returns something other than a connection loss.
func retry(ctx context.Context, f func() error) error {
	var err error
	for range maxAttempts {
		if err = within(opTimeout, f); !retryable(err) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		}
	}
	return err
}

// fairLock is the seed fair lock: an ephemeral sequential node per
// waiter, each waiting on an exists watch on its predecessor. Its node
// names carry a per-acquire tag, so a create whose reply was lost can be
// found again rather than left queued forever.
type fairLock struct {
	conn *zk.Conn
	dir  string
}

// seqOf is a lock node's sequence number, its ten-digit suffix.
func seqOf(name string) string { return name[max(0, len(name)-10):] }

func (l *fairLock) acquire(ctx context.Context) (release func() error, err error) {
	tag := "_" + rand.Text() + "-"
	var node string
	for range maxAttempts {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if node == "" {
			err := within(opTimeout, func() error {
				var err error
				node, err = l.conn.Create(l.dir+"/"+tag+"lock-", nil, zk.FlagEphemeralSequential, openACL)
				return err
			})
			if err != nil && !retryable(err) {
				return nil, fmt.Errorf("create lock node: %w", err)
			}
			if err != nil {
				node = ""
			}
		}
		var kids []string
		err := retry(ctx, func() error {
			if _, err := l.conn.Sync(l.dir); err != nil {
				return err
			}
			var err error
			kids, _, err = l.conn.Children(l.dir)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("children %s: %w", l.dir, err)
		}
		slices.SortFunc(kids, func(a, b string) int { return strings.Compare(seqOf(a), seqOf(b)) })
		i := slices.IndexFunc(kids, func(k string) bool { return strings.HasPrefix(k, tag) })
		if i < 0 {
			node = "" // our create never landed (or the session lost it)
			continue
		}
		node = l.dir + "/" + kids[i]
		if i == 0 {
			return l.releaser(ctx, tag), nil
		}
		watched := l.dir + "/" + kids[i-1]
		var ok bool
		var ch <-chan zk.Event
		err = within(opTimeout, func() error {
			var err error
			ok, _, ch, err = l.conn.ExistsW(watched)
			return err
		})
		if retryable(err) || (err == nil && !ok) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("exists %s: %w", watched, err)
		}
		select {
		case <-ch: // deleted, or the watch was lost: look again either way
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, fmt.Errorf("lock %s: not first in %d attempts", l.dir, maxAttempts)
}

// releaser deletes every node carrying tag: the held one and any created
// by a retried create whose first reply was lost.
func (l *fairLock) releaser(ctx context.Context, tag string) func() error {
	return func() error {
		return retry(ctx, func() error {
			if _, err := l.conn.Sync(l.dir); err != nil {
				return err
			}
			kids, _, err := l.conn.Children(l.dir)
			if err != nil {
				return err
			}
			for _, k := range kids {
				if strings.HasPrefix(k, tag) {
					if err := l.conn.Delete(l.dir+"/"+k, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
						return err
					}
				}
			}
			return nil
		})
	}
}

// decrement lowers the stock by one with a versioned set and reports
// whether it did. After a lost reply it reads the stock back (after a
// sync) to learn whether the set landed: under the lock only this client
// writes, and the version check stops a late duplicate from landing twice.
func decrement(ctx context.Context, c *zk.Conn, p string) (bool, error) {
	var value int
	var stat *zk.Stat
	read := func() error {
		return retry(ctx, func() error {
			if _, err := c.Sync(p); err != nil {
				return err
			}
			data, st, err := c.Get(p)
			if err != nil {
				return err
			}
			value, err = strconv.Atoi(string(data))
			stat = st
			return err
		})
	}
	if err := read(); err != nil {
		return false, fmt.Errorf("read stock: %w", err)
	}
	if value == 0 {
		return false, nil
	}
	want, version := value-1, stat.Version
	for range maxAttempts {
		err := within(opTimeout, func() error {
			_, err := c.Set(p, []byte(strconv.Itoa(want)), version)
			return err
		})
		if err == nil {
			return true, nil
		}
		if !retryable(err) && !errors.Is(err, zk.ErrBadVersion) {
			return false, fmt.Errorf("set stock at version %d: %w", version, err)
		}
		if err := read(); err != nil {
			return false, fmt.Errorf("re-read stock: %w", err)
		}
		switch {
		case stat.Version == version+1 && value == want:
			return true, nil // the lost set landed
		case stat.Version != version:
			return false, fmt.Errorf("stock changed under the lock: version %d value %d, want version %d or %d", stat.Version, value, version, version+1)
		}
	}
	return false, fmt.Errorf("set stock: no answer in %d attempts", maxAttempts)
}

// TestEnsembleLeaderKill: ten clients run the fair lock around a stock
// decrement while one node is killed with SIGKILL and later restarted,
// twice. The lock never has two holders and the stock ends exactly at
// its start minus the decrements the clients saw succeed.
func TestEnsembleLeaderKill(t *testing.T) {
	const (
		clients      = 10
		initialStock = 1_000_000
		perPhase     = 30 // decrements to see before a kill and after it
	)
	e := startEnsemble(t, 3)
	admin := e.dial(e.addrs()...)
	for _, p := range []string{"/lock"} {
		if _, err := admin.Create(p, nil, 0, openACL); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.Create("/stock", []byte(strconv.Itoa(initialStock)), 0, openACL); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stop := make(chan struct{})
	var (
		holders, maxHolders, done atomic.Int64
		errMu                     sync.Mutex // guards errs
		errs                      []error
	)
	fail := func(err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
	}
	var wg sync.WaitGroup
	for i := range clients {
		c := e.dial(e.addrs()...)
		l := &fairLock{conn: c, dir: "/lock"}
		wg.Go(func() {
			for range 100_000 {
				select {
				case <-stop:
					return
				default:
				}
				release, err := l.acquire(ctx)
				if err != nil {
					fail(fmt.Errorf("client %d: acquire: %w", i, err))
					return
				}
				h := holders.Add(1)
				for m := maxHolders.Load(); h > m && !maxHolders.CompareAndSwap(m, h); m = maxHolders.Load() {
				}
				ok, err := decrement(ctx, c, "/stock")
				holders.Add(-1)
				if ok {
					done.Add(1)
				}
				if rerr := release(); rerr != nil {
					err = errors.Join(err, fmt.Errorf("release: %w", rerr))
				}
				if err != nil {
					fail(fmt.Errorf("client %d: %w", i, err))
					return
				}
			}
		})
	}
	waitProgress := func(what string, n int64) {
		t.Helper()
		target := done.Load() + n
		deadline := time.Now().Add(20 * time.Second)
		for done.Load() < target {
			if time.Now().After(deadline) {
				close(stop)
				cancel()
				wg.Wait()
				t.Fatalf("%s: %d decrements, wanted %d within 20s; errors: %v", what, done.Load(), target, errors.Join(errs...))
			}
			time.Sleep(10 * time.Millisecond) // poll an in-process counter
		}
	}

	probe := e.dial(e.addrs()...)
	waitProgress("before any kill", perPhase)
	for phase := range 2 {
		victim := e.likelyLeader()
		guessed := victim != nil
		if victim == nil {
			victim = e.nodes[phase]
		}
		before := done.Load()
		survivorWins := e.elections() - e.electionsOf(victim)
		e.kill(victim)
		recovery := e.waitWritable(probe, "/probe", 30*time.Second)
		t.Logf("phase %d: killed node %d (leader by its log: %v) after %d decrements; a write succeeded again %v later",
			phase+1, victim.id, guessed, before, recovery.Round(time.Millisecond))
		waitProgress(fmt.Sprintf("phase %d with node %d down", phase+1, victim.id), perPhase)
		t.Logf("phase %d: a survivor logged winning an election after the kill (the victim led): %v",
			phase+1, e.elections() > survivorWins)
		restart := time.Now()
		e.startNodes(victim)
		t.Logf("phase %d: node %d answered imok %v after restart", phase+1, victim.id, time.Since(restart).Round(time.Millisecond))
		waitProgress(fmt.Sprintf("phase %d after node %d restarted", phase+1, victim.id), perPhase)
	}
	close(stop)
	stopped := time.Now()
	wg.Wait()
	cancel()
	t.Logf("clients finished %v after being told to stop", time.Since(stopped).Round(time.Millisecond))

	for _, err := range errs {
		t.Error(err)
	}
	if m := maxHolders.Load(); m > 1 {
		t.Errorf("lock held by %d clients at once", m)
	}
	for _, nd := range e.nodes {
		c := e.dial(nd.clientAddr)
		if _, err := c.Sync("/stock"); err != nil {
			t.Fatalf("node %d: sync: %v", nd.id, err)
		}
		data, _, err := c.Get("/stock")
		if err != nil {
			t.Fatalf("node %d: get stock: %v", nd.id, err)
		}
		if got, want := string(data), strconv.Itoa(initialStock-int(done.Load())); got != want {
			t.Errorf("node %d: stock = %s, want %s (%d decrements acknowledged)", nd.id, got, want, done.Load())
		}
	}
	t.Logf("%d decrements by %d clients, max holders %d", done.Load(), clients, maxHolders.Load())
}
