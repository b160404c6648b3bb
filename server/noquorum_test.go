package server

import (
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// stopServing stops the member of d whose client address is addr, and
// returns its index.
func stopServing(tb testing.TB, d *durableCluster, addr string) int {
	tb.Helper()
	for i, cfg := range d.cfgs {
		if cfg.ListenAddr == addr {
			d.stop(i)
			return i
		}
	}
	tb.Fatalf("no member serves %s", addr)
	return -1
}

// sessionLog records a go-zookeeper client's session events with the
// server each came from, for waits that look only at what comes after
// them.
type sessionLog struct {
	mu     sync.Mutex
	events []zk.Event
	more   chan struct{}
}

func newSessionLog(events <-chan zk.Event) *sessionLog {
	l := &sessionLog{more: make(chan struct{}, 1)}
	go func() {
		for ev := range events {
			l.mu.Lock()
			l.events = append(l.events, ev)
			l.mu.Unlock()
			select {
			case l.more <- struct{}{}:
			default:
			}
		}
	}()
	return l
}

// mark is where the log is now.
func (l *sessionLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// next waits up to within for an event of state after mark, and returns
// it and the mark past it; ok false if none came.
func (l *sessionLog) next(from int, state zk.State, within time.Duration) (zk.Event, int, bool) {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for i := from; i < len(l.events); i++ {
			if l.events[i].Type == zk.EventSession && l.events[i].State == state {
				ev := l.events[i]
				l.mu.Unlock()
				return ev, i + 1, true
			}
		}
		l.mu.Unlock()
		select {
		case <-l.more:
		case <-deadline.C:
			return zk.Event{}, from, false
		}
	}
}

// TestNoQuorumNoExpiry is go-zookeeper's TestIntegration_NoQuorum on
// members with read-only mode on (its client does not ask for
// read-only, so it is refused while there is no quorum): a client with a
// 4 s session keeps reconnecting while two of three members are down,
// longer than its timeout, and when one comes back it has the same
// session again within 8 s, and keeps it. No leader, no expiry.
func TestNoQuorumNoExpiry(t *testing.T) {
	d := startDurable(t, 3, nil, "", DefaultTickTime, func(_ uint64, cfg *Config) { cfg.ReadOnlyMode = true })
	var addrs []string
	for _, cfg := range d.cfgs {
		addrs = append(addrs, cfg.ListenAddr)
	}
	c, events, err := zk.Connect(addrs, 4*time.Second, zk.WithLogger(discardLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	log := newSessionLog(events)
	first, at, ok := log.next(0, zk.StateHasSession, 8*time.Second)
	if !ok {
		t.Fatal("no session")
	}
	session := c.SessionID()

	// The client's member goes; it fails over to another.
	stopped := stopServing(t, d, first.Server)
	if _, at, ok = log.next(at, zk.StateDisconnected, 8*time.Second); !ok {
		t.Fatal("no disconnection after its member stopped")
	}
	second, at, ok := log.next(at, zk.StateHasSession, 8*time.Second)
	if !ok {
		t.Fatal("no failover")
	}
	// That member goes too: one of three is left, without a quorum.
	stopServing(t, d, second.Server)
	if _, at, ok = log.next(at, zk.StateDisconnected, 8*time.Second); !ok {
		t.Fatal("no disconnection after the second member stopped")
	}
	// For 6 s (past the 4 s timeout) the client is turned away, again and
	// again, by the member left.
	begin := time.Now()
	refusals := 0
	for time.Since(begin) < 6*time.Second {
		var ev zk.Event
		if ev, at, ok = log.next(at, zk.StateDisconnected, 4*time.Second); !ok {
			t.Fatalf("no disconnection for 4 s after %d: the client is not retrying, or was let in", refusals)
		}
		if ev.Server == first.Server || ev.Server == second.Server {
			t.Fatalf("disconnected from %s, which is down", ev.Server)
		}
		refusals++
	}
	if _, _, ok := log.next(at, zk.StateHasSession, 0); ok {
		t.Fatal("the client had a session while there was no quorum")
	}

	// A member comes back: the same session, within 8 s, not dropped.
	if err := d.start(stopped); err != nil {
		t.Fatal(err)
	}
	if _, at, ok = log.next(at, zk.StateHasSession, 8*time.Second); !ok {
		t.Fatal("the session did not come back within 8 s of the quorum")
	}
	if got := c.SessionID(); got != session {
		t.Fatalf("session %#x after the quorum came back, %#x before", got, session)
	}
	if ev, _, ok := log.next(at, zk.StateDisconnected, 6*time.Second); ok {
		t.Fatalf("disconnected from %s soon after the session came back", ev.Server)
	}
	t.Logf("refused %d times in 6 s without a quorum; session %#x kept", refusals, session)
}
