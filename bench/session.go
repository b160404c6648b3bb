package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

var openACL = zk.WorldACL(zk.PermAll)

// discardLogger silences go-zookeeper, which logs every reconnect.
type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// session is one go-zookeeper client session.
type session struct {
	conn *zk.Conn
	has  chan struct{} // closed once the session is established
	lost chan struct{} // a token per lost connection, never blocking
}

// dialOptions adjusts how a session connects.
type dialOptions struct {
	timeout time.Duration                                         // the session timeout asked for
	onEvent func(i int, ev zk.Event)                              // called in the client's receive loop with the session's index
	dialer  func(string, string, time.Duration) (net.Conn, error) // nil: go-zookeeper's own
	bytes   int                                                   // the largest data the session reads or writes
}

// bufferFloor is the smallest receive and send buffer a session gets:
// go-zookeeper allocates 1.5 MiB each by default, which for a thousand
// sessions would cost the benchmark more memory than the server it
// measures. It holds a getChildren of a thousand benchmark names.
const bufferFloor = 64 << 10

// connect opens a session to server and waits until it is established, at
// most connectTimeout. go-zookeeper retries a refused or dropped handshake
// by itself, so a server that limits connections per address shows here
// as a session that never comes.
func connect(ctx context.Context, i int, server string, connectTimeout time.Duration, o dialOptions) (*session, error) {
	s := &session{has: make(chan struct{}), lost: make(chan struct{}, 1)}
	var once sync.Once
	cb := func(ev zk.Event) {
		if ev.Type == zk.EventSession {
			switch ev.State {
			case zk.StateHasSession:
				once.Do(func() { close(s.has) })
			case zk.StateDisconnected:
				select {
				case s.lost <- struct{}{}:
				default:
				}
			}
		}
		if o.onEvent != nil {
			o.onEvent(i, ev)
		}
	}
	buf := max(bufferFloor, o.bytes+4<<10)
	dialer := o.dialer
	if dialer == nil {
		dialer = net.DialTimeout // go-zookeeper's own
	}
	conn, _, err := zk.Connect([]string{server}, o.timeout, zk.WithLogger(discardLogger{}), zk.WithEventCallback(cb),
		zk.WithMaxBufferSize(buf), zk.WithMaxConnBufferSize(buf), zk.WithDialer(dialer))
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", server, err)
	}
	s.conn = conn
	t := time.NewTimer(connectTimeout)
	defer t.Stop()
	select {
	case <-s.has:
		return s, nil
	case <-t.C:
		err = fmt.Errorf("no session with %s within %v (a server limits connections per address: ZooKeeper's maxClientCnxns, hutch's --max-client-conns; both default to 60)", server, connectTimeout)
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	conn.Close()
	return nil, err
}

// sessions is a group of sessions that a run closes together.
type sessions struct {
	list   []*session
	once   sync.Once   // closes the sessions; a second caller waits for the first
	unbind func() bool // stops closing the group when the run's ctx ends
}

// newSessions makes a group of n, closed when ctx ends, so that a run
// stopped by --max-time does not wait on calls the server never answers.
func newSessions(ctx context.Context, n int) *sessions {
	g := &sessions{list: make([]*session, n)}
	g.unbind = context.AfterFunc(ctx, g.close)
	return g
}

// connectAll opens n sessions, session i on servers[i mod len], a few at a
// time, and fails if any cannot be established.
func (e *env) connectAll(ctx context.Context, n int, o dialOptions) (*sessions, error) {
	g := newSessions(ctx, n)
	if o.timeout == 0 {
		o.timeout = e.opt.SessionTimeout
	}
	err := forEach(ctx, n, 16, func(ctx context.Context, i int) error {
		s, err := connect(ctx, i, e.target.Servers[i%len(e.target.Servers)], e.opt.ConnectTimeout, o)
		g.list[i] = s
		return err
	})
	if err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

// close ends every session, concurrently, and returns once all are
// closed, so their ephemeral znodes are gone: go-zookeeper waits up to a
// second for each close to be answered. Calls still waiting on a session
// return ErrConnectionClosed at once.
func (g *sessions) close() {
	g.once.Do(func() {
		g.unbind()
		var wg sync.WaitGroup
		for _, s := range g.list {
			if s != nil {
				wg.Go(s.conn.Close)
			}
		}
		wg.Wait()
	})
}

// forEach calls fn(ctx, i) for i in [0, n) on up to workers goroutines
// and returns the first error. The ctx fn gets ends at the first error, so
// the others stop; once it has ended no new call starts.
func forEach(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, completed atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			// Bounded by n: each pass claims one index.
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if err := fn(ctx, i); err != nil {
					cancel(err) // the first cause is kept
					return
				}
				completed.Add(1)
			}
		})
	}
	wg.Wait()
	if completed.Load() == int64(n) {
		return nil
	}
	return context.Cause(ctx)
}

// newRoot creates a fresh root znode, /hutch-bench-<random>, for one run.
func newRoot(c *zk.Conn) (string, error) {
	var err error
	for range 3 {
		root := "/hutch-bench-" + rand.Text()[:10]
		if _, err = c.Create(root, nil, 0, openACL); err == nil {
			return root, nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			break
		}
	}
	return "", fmt.Errorf("create the benchmark's root: %w", err)
}

// deleteTree deletes root and everything below it. Ephemeral nodes of
// sessions still closing, or of sessions whose close went unanswered and
// that must expire, make a delete fail with ErrNotEmpty; it then starts
// again, a bounded number of times (enough to outwait the benchmark's
// session timeout) while ctx lasts.
func deleteTree(ctx context.Context, c *zk.Conn, root string, done *atomic.Int64) error {
	const attempts = 100
	var err error
	for attempt := range attempts {
		if attempt > 0 {
			select {
			case <-time.After(min(time.Duration(attempt)*100*time.Millisecond, time.Second)):
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		if err = deleteLevel(ctx, c, []string{root}, 0, done); err == nil || !errors.Is(err, zk.ErrNotEmpty) {
			return err
		}
	}
	return err
}

// treeDepth bounds how deep deleteTree goes: the workloads nest three
// levels under their root.
const treeDepth = 8

// deleteLevel deletes paths, many deletes in flight at once. Those that
// have children are listed, their children deleted the same way, one level
// down, and then they are deleted again. A leaf costs one delete, and no
// listing.
func deleteLevel(ctx context.Context, c *zk.Conn, paths []string, depth int, done *atomic.Int64) error {
	full, err := deleteEach(ctx, c, paths, done)
	if err != nil || len(full) == 0 {
		return err
	}
	if depth == treeDepth {
		return fmt.Errorf("%s: deeper than %d levels: %w", full[0], treeDepth, zk.ErrNotEmpty)
	}
	kids := make([][]string, len(full))
	err = forEach(ctx, len(full), 32, func(_ context.Context, i int) error {
		names, _, err := c.Children(full[i])
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		for _, n := range names {
			kids[i] = append(kids[i], full[i]+"/"+n)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("list under %s: %w", full[0], err)
	}
	if err := deleteLevel(ctx, c, slices.Concat(kids...), depth+1, done); err != nil {
		return err
	}
	if full, err = deleteEach(ctx, c, full, done); err == nil && len(full) > 0 {
		// Children appeared meanwhile; deleteTree starts again.
		err = fmt.Errorf("delete %s: %w", full[0], zk.ErrNotEmpty)
	}
	return err
}

// deleteEach deletes paths, 64 in flight at once, and returns those that
// still have children. One already gone counts as deleted.
func deleteEach(ctx context.Context, c *zk.Conn, paths []string, done *atomic.Int64) ([]string, error) {
	var mu sync.Mutex // guards full
	var full []string
	err := forEach(ctx, len(paths), 64, func(_ context.Context, i int) error {
		switch err := c.Delete(paths[i], -1); {
		case err == nil:
			if done != nil {
				done.Add(1)
			}
		case errors.Is(err, zk.ErrNotEmpty):
			mu.Lock()
			full = append(full, paths[i])
			mu.Unlock()
		case !errors.Is(err, zk.ErrNoNode):
			return fmt.Errorf("delete %s: %w", paths[i], err)
		}
		return nil
	})
	return full, err
}
