package zkclient_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkclient"
)

// TestMain removes the hutch binary realzk.BuildHutch compiled.
func TestMain(m *testing.M) { realzk.Main(m) }

// Deadlines for conditions: long, since they matter only when something
// is wrong and a loaded machine running a JVM is slow.
const (
	waitLong = 30 * time.Second
	// askTimeout is the session timeout the tests ask for; the servers
	// run with a 100 ms tick, so it is within their bounds (200 ms to 2 s).
	askTimeout = time.Second
)

// forEachServer runs check against the hutch binary and against real
// ZooKeeper, each fresh and with a 100 ms tick so that sessions expire
// quickly. Without Debian's ZooKeeper its half is skipped (failed under CI).
func forEachServer(t *testing.T, check func(t *testing.T, addr string)) {
	t.Helper()
	t.Run("hutch", func(t *testing.T) {
		check(t, realzk.StartHutchBinary(t, realzk.BuildHutch(t), "--tick-time", "100ms", "--max-client-conns", "0").Addr)
	})
	t.Run("zookeeper", func(t *testing.T) {
		check(t, realzk.Start(t, realzk.TickTime(100*time.Millisecond)).Addr)
	})
}

// events records what a client's Watcher is given.
type events struct {
	mu   sync.Mutex // guards seen
	seen []zkclient.Event
	more chan struct{}
}

func newEvents() *events { return &events{more: make(chan struct{}, 1)} }

func (e *events) watch(ev zkclient.Event) {
	e.mu.Lock()
	e.seen = append(e.seen, ev)
	e.mu.Unlock()
	select {
	case e.more <- struct{}{}:
	default:
	}
}

func (e *events) all() []zkclient.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.seen)
}

// waitFor waits until an event equal to want has been seen and returns
// its position.
func (e *events) waitFor(tb testing.TB, want zkclient.Event) int {
	tb.Helper()
	deadline := time.NewTimer(waitLong)
	defer deadline.Stop()
	for {
		if i := slices.Index(e.all(), want); i >= 0 {
			return i
		}
		select {
		case <-e.more:
		case <-deadline.C:
			tb.Fatalf("no event %v within %v; saw %v", want, waitLong, e.all())
		}
	}
}

func stateEvent(state int32) zkclient.Event {
	return zkclient.Event{Type: wire.EventNone, State: state}
}

func nodeEvent(typ wire.EventType, path string) zkclient.Event {
	return zkclient.Event{Type: typ, State: wire.StateSyncConnected, Path: path}
}

// dial opens a client on addrs and waits for its session; it is closed
// when tb ends.
func dial(tb testing.TB, cfg zkclient.Config) (*zkclient.Client, *events) {
	tb.Helper()
	ev := newEvents()
	cfg.Watcher = ev.watch
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = askTimeout
	}
	c, err := zkclient.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	if !c.WaitConnected(waitLong) {
		tb.Fatalf("no session with %v within %v (state %v)", cfg.Servers, waitLong, c.State())
	}
	return c, ev
}

var open = []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}

// mustCreate creates a persistent node or fails tb.
func mustCreate(tb testing.TB, c *zkclient.Client, path, data string) {
	tb.Helper()
	if _, err := c.Create(path, []byte(data), open, wire.ModePersistent, 0); err != nil {
		tb.Fatalf("create %s: %v", path, err)
	}
}

// wantCode fails tb unless err carries code for path.
func wantCode(tb testing.TB, what string, err error, code wire.Code, path string) {
	tb.Helper()
	var e *zkclient.Error
	if !errorsAs(err, &e) || e.Code != code || e.Path != path {
		tb.Errorf("%s: error %v, want %v for %q", what, err, code, path)
	}
}

func errorsAs(err error, target **zkclient.Error) bool {
	e, ok := err.(*zkclient.Error)
	if ok {
		*target = e
	}
	return ok
}
