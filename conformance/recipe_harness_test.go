package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/server"
)

// The recipe checks (recipe_*_test.go) run the lock and election recipes
// users build on ZooKeeper — exclusive node, queue, fair and non-fair
// sequential locks, reentrant and leased locks, Elastic-Job style leader
// election, a crashed holder and the stock-deduction load — against every
// target, asserting mutual exclusion and exact counters, and log one RESULT
// line per check in a fixed format:
//
//	RESULT recipe=<name> target=<target> handoffs=N events=M events_per_handoff=X ops_per_sec=Y
//
// handoffs counts lock (or leadership) transfers to a waiter, events the
// watch notifications that woke a waiter, ops_per_sec lock acquisitions (or
// stock decrements) per second of the check's timed part.

// busyContainerCheck is how often the servers of recipe checks look for
// expired TTL nodes. ZooKeeper's default, and hutch's, is a minute — far
// longer than a check may take.
const busyContainerCheck = 100 * time.Millisecond

// recipeSessionTimeout is the session timeout of sessions a check cuts off:
// ZooKeeper's smallest with the default tickTime (2 × 2 s).
const recipeSessionTimeout = 4 * time.Second

// recipeMinExpiry is the least time a cut-off session's ephemeral nodes
// must outlive its TCP connection. The server expires a session a full
// timeout after it last heard from it, and the client pings every third of
// the timeout; the bound leaves room for pings delayed on a loaded machine
// while still failing a server that drops sessions with their connection.
const recipeMinExpiry = recipeSessionTimeout / 4

// busyStarts overrides how targets(t) starts a target for the recipe and
// Curator checks: the stock checks open 100 sessions from one address (more
// than hutch's default per-IP limit of 60; realzk gives ZooKeeper
// maxClientCnxns=0), and the lease and container checks need TTL nodes and
// empty containers removed within a fraction of a second.
var busyStarts = map[string]func(tb testing.TB) string{
	"zookeeper": func(tb testing.TB) string {
		return realzk.Start(tb,
			realzk.SystemProperty("znode.container.checkIntervalMs", fmt.Sprint(busyContainerCheck.Milliseconds())),
			// hutch keeps everything in memory; without this every write
			// waits for an fsync and the stock check takes minutes.
			realzk.SystemProperty("zookeeper.forceSync", "no")).Addr
	},
	"hutch": func(tb testing.TB) string {
		// Info, not debug: the stock checks send tens of thousands of requests.
		return startHutchConfig(tb, server.Config{
			MaxClientConnsPerIP:    -1,
			ContainerCheckInterval: busyContainerCheck,
		}, slog.LevelInfo)
	},
	"hutch-binary": func(tb testing.TB) string {
		return realzk.StartHutchBinary(tb, realzk.BuildHutch(tb),
			"--max-client-conns", "0",
			"--container-check-interval", busyContainerCheck.String()).Addr
	},
}

// forEachBusyTarget runs check as a subtest per target of targets(t),
// started as busyStarts says when it knows the target.
func forEachBusyTarget(t *testing.T, check func(t *testing.T, target, addr string)) {
	t.Helper()
	for _, tg := range targets(t) {
		start := tg.start
		if s, ok := busyStarts[tg.name]; ok {
			start = s
		}
		t.Run(tg.name, func(t *testing.T) {
			check(t, tg.name, start(t))
		})
	}
}

// recipeResult logs a check's RESULT line.
func recipeResult(t testing.TB, recipe, target string, handoffs, events int64, ops int64, elapsed time.Duration) {
	t.Helper()
	perHandoff := 0.0
	if handoffs > 0 {
		perHandoff = float64(events) / float64(handoffs)
	}
	opsPerSec := 0.0
	if elapsed > 0 {
		opsPerSec = float64(ops) / elapsed.Seconds()
	}
	t.Logf("RESULT recipe=%s target=%s handoffs=%d events=%d events_per_handoff=%.2f ops_per_sec=%.1f",
		recipe, target, handoffs, events, perHandoff, opsPerSec)
}

// recipeSession is one go-zookeeper session with a record of the session
// states it went through, so a check can wait for one.
type recipeSession struct {
	conn *zk.Conn

	mu      sync.Mutex    // guards states and changed
	states  []zk.State    // every session state reported, in order
	changed chan struct{} // closed and replaced when states grows

	onState func(zk.State) // called on the client's event goroutine; must not block
}

// recipeSessionOpts tunes recipeConnect; zero values take defaults.
type recipeSessionOpts struct {
	timeout time.Duration  // requested session timeout, 10 s by default
	dialer  zk.Dialer      // e.g. through a faultnet.Proxy
	onState func(zk.State) // see recipeSession.onState
}

// recipeConnect opens a session to addr and waits until it is established.
// The session is closed when tb ends.
func recipeConnect(tb testing.TB, addr string, o recipeSessionOpts) *recipeSession {
	tb.Helper()
	if o.timeout == 0 {
		o.timeout = 10 * time.Second
	}
	s := &recipeSession{changed: make(chan struct{}), onState: o.onState}
	if o.dialer == nil {
		o.dialer = net.DialTimeout
	}
	conn, _, err := zk.Connect([]string{addr}, o.timeout,
		zk.WithLogger(log.New(io.Discard, "", 0)),
		zk.WithEventCallback(s.record),
		zk.WithDialer(o.dialer))
	if err != nil {
		tb.Fatalf("connect %s: %v", addr, err)
	}
	s.conn = conn
	tb.Cleanup(conn.Close)
	if err := s.waitState(0, zk.StateHasSession, commandTimeout); err != nil {
		tb.Fatalf("connect %s: %v", addr, err)
	}
	return s
}

func (s *recipeSession) record(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	s.mu.Lock()
	s.states = append(s.states, ev.State)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	if s.onState != nil {
		s.onState(ev.State)
	}
}

// mark returns a position in the state history for waitState.
func (s *recipeSession) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.states)
}

// waitState waits until the session reports want at or after position since.
func (s *recipeSession) waitState(since int, want zk.State, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		for _, st := range s.states[min(since, len(s.states)):] {
			if st == want {
				s.mu.Unlock()
				return nil
			}
		}
		changed, seen := s.changed, append([]zk.State(nil), s.states...)
		s.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			return fmt.Errorf("no session state %v within %v (states so far %v)", want, timeout, seen)
		}
	}
}

// recipeStats is what a check observes about its lock: how many
// participants hold it at once (never more than one), how many wait on a
// watch, and how many watch events woke them.
type recipeStats struct {
	holders    atomic.Int64
	maxHolders atomic.Int64
	events     atomic.Int64 // watch events that woke a waiter
	handoffs   atomic.Int64 // releases with at least one waiter parked

	mu      sync.Mutex    // guards parked, active and changed
	parked  int           // participants blocked on a watch right now
	active  int           // participants that have not finished yet
	changed chan struct{} // closed and replaced when parked or active change
}

func newRecipeStats(active int) *recipeStats {
	return &recipeStats{active: active, changed: make(chan struct{})}
}

// enter records a participant entering the critical section; the maximum
// number inside at once is kept with a compare-and-swap loop.
func (st *recipeStats) enter() {
	n := st.holders.Add(1)
	for {
		m := st.maxHolders.Load()
		if n <= m || st.maxHolders.CompareAndSwap(m, n) {
			return
		}
	}
}

// exit records a participant leaving the critical section.
func (st *recipeStats) exit() { st.holders.Add(-1) }

func (st *recipeStats) addParked(d int) {
	st.mu.Lock()
	st.parked += d
	close(st.changed)
	st.changed = make(chan struct{})
	st.mu.Unlock()
}

// done records that a participant has finished all its rounds.
func (st *recipeStats) done() {
	st.mu.Lock()
	st.active--
	close(st.changed)
	st.changed = make(chan struct{})
	st.mu.Unlock()
}

// noteRelease counts a handoff if anyone is parked; call it just before the
// release that wakes them.
func (st *recipeStats) noteRelease() {
	st.mu.Lock()
	parked := st.parked
	st.mu.Unlock()
	if parked > 0 {
		st.handoffs.Add(1)
	}
}

// gate waits until every other active participant is parked on a watch, so
// that each release is a handoff seen by all waiters and the number of
// events it fires is deterministic. It also gives a broken lock every
// chance to let a second participant in.
func (st *recipeStats) gate(ctx context.Context) error {
	for {
		st.mu.Lock()
		ok := st.parked >= st.active-1
		parked, active, changed := st.parked, st.active, st.changed
		st.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d waiters to park (%d parked): %w", active-1, parked, ctx.Err())
		}
	}
}

// errRecipeWatchLost reports a watch ended without its event: the session
// expired or the client closed.
var errRecipeWatchLost = errors.New("watch lost")

// await blocks on a watch channel as a parked waiter and counts the event
// that wakes it.
func (st *recipeStats) await(ctx context.Context, ch <-chan zk.Event) (zk.Event, error) {
	st.addParked(1)
	defer st.addParked(-1)
	select {
	case ev := <-ch:
		if ev.Type == zk.EventNotWatching || ev.Err != nil {
			return ev, fmt.Errorf("%w: %v", errRecipeWatchLost, ev.Err)
		}
		st.events.Add(1)
		return ev, nil
	case <-ctx.Done():
		return zk.Event{}, ctx.Err()
	}
}

// recipeSignal wakes waiters whenever something they poll may have changed.
type recipeSignal struct {
	mu sync.Mutex    // guards ch
	ch chan struct{} // closed and replaced by notify
}

func newRecipeSignal() *recipeSignal { return &recipeSignal{ch: make(chan struct{})} }

func (s *recipeSignal) notify() {
	s.mu.Lock()
	close(s.ch)
	s.ch = make(chan struct{})
	s.mu.Unlock()
}

// changed returns a channel closed at the next notify.
func (s *recipeSignal) changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}
