package server

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// fairLock is the seeds' fair lock: an ephemeral sequential node per waiter,
// each waiter watching only its predecessor with exists.
type fairLock struct {
	conn *zk.Conn
	root string
	node string
}

func (l *fairLock) lock() error {
	path, err := l.conn.Create(l.root+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	l.node = path
	me := path[len(l.root)+1:]
	for {
		children, _, err := l.conn.Children(l.root)
		if err != nil {
			return fmt.Errorf("children: %w", err)
		}
		sort.Strings(children)
		idx := sort.SearchStrings(children, me)
		if idx == len(children) || children[idx] != me {
			return fmt.Errorf("own node %s vanished", me)
		}
		if idx == 0 {
			return nil
		}
		exists, _, ch, err := l.conn.ExistsW(l.root + "/" + children[idx-1])
		if err != nil {
			return fmt.Errorf("exists: %w", err)
		}
		if !exists {
			continue
		}
		select {
		case ev := <-ch:
			if ev.Type != zk.EventNodeDeleted {
				return fmt.Errorf("unexpected event %v on predecessor", ev.Type)
			}
		case <-time.After(2 * time.Minute):
			return errors.New("waited 2 minutes for the predecessor")
		}
	}
}

func (l *fairLock) unlock() error {
	return l.conn.Delete(l.node, -1)
}

// TestFairLockStock is the seeds' stock-deduction scenario: 100 sessions take
// the fair lock 50 times each to decrement a stock of 5000.
func TestFairLockStock(t *testing.T) {
	const sessions, turns = 100, 50
	if testing.Short() {
		t.Skip("long: 5000 lock handoffs")
	}
	// 100 sessions from one address: lift the per-IP limit of 60.
	s := startServer(t, Config{MaxClientConnsPerIP: -1})
	addr := s.Addr().String()
	admin, _ := dial(t, addr, 10*time.Second)
	if _, err := admin.Create("/locks", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Create("/stock", []byte(strconv.Itoa(sessions*turns)), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	conns := make([]*zk.Conn, sessions)
	for i := range conns {
		conns[i], _ = dial(t, addr, 10*time.Second)
	}

	var holders, maxHolders atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	start := time.Now()
	for i := range conns {
		wg.Add(1)
		go func(c *zk.Conn) {
			defer wg.Done()
			l := &fairLock{conn: c, root: "/locks"}
			for range turns {
				if err := l.lock(); err != nil {
					errs <- err
					return
				}
				raiseTo(&maxHolders, holders.Add(1))
				data, _, err := c.Get("/stock")
				if err == nil {
					var n int
					n, err = strconv.Atoi(string(data))
					if err == nil {
						_, err = c.Set("/stock", []byte(strconv.Itoa(n-1)), -1)
					}
				}
				holders.Add(-1)
				if err != nil {
					errs <- err
					return
				}
				if err := l.unlock(); err != nil {
					errs <- err
					return
				}
			}
		}(conns[i])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	data, _, err := admin.Get("/stock")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "0" {
		t.Fatalf("stock ends at %s, want 0", data)
	}
	if m := maxHolders.Load(); m != 1 {
		t.Fatalf("at most %d sessions held the lock at once, want exactly 1", m)
	}
	children, _, err := admin.Children("/locks")
	if err != nil || len(children) != 0 {
		t.Fatalf("lock nodes left: %v (%v)", children, err)
	}
	t.Logf("%d handoffs in %v (%.0f/s)", sessions*turns, elapsed, float64(sessions*turns)/elapsed.Seconds())
}

// TestFairLockNames checks the sequence suffix the lock relies on.
func TestFairLockNames(t *testing.T) {
	s := startServer(t, Config{})
	c, _ := dial(t, s.Addr().String(), 10*time.Second)
	if _, err := c.Create("/q", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		p, err := c.Create("/q/n-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("/q/n-%010d", i); p != want {
			t.Fatalf("created %s, want %s", p, want)
		}
		if !strings.HasPrefix(p, "/q/n-") {
			t.Fatal(p)
		}
	}
}

// raiseTo sets max to v if v is larger, atomically.
func raiseTo(max *atomic.Int32, v int32) {
	for {
		cur := max.Load()
		if v <= cur || max.CompareAndSwap(cur, v) {
			return
		}
	}
}
