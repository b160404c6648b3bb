package nemesis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

var openACL = zk.WorldACL(zk.PermAll)

// zkSession is a go-zookeeper client that remembers its session's life:
// when it last heard from a server and when a server said the session had
// expired. go-zookeeper opens a new session by itself after an expiry, so
// a workload goes on; the expiry stays on record.
type zkSession struct {
	conn     *zk.Conn
	workload string
	has      chan struct{} // a token per StateHasSession, never blocking
	heardNow atomic.Int64  // unix nanos of the last byte read on the current connection

	mu        sync.Mutex // guards the fields below
	heardPrev int64      // unix nanos of the last byte read on any earlier connection
	firstID   int64      // the session the client was first given
	lastID    int64      // the session it has, or last had
	expiries  []expiry
}

// expiry is a server telling a client its session is gone.
type expiry struct {
	workload string
	id       int64
	at       time.Time
	// silent is how long the client had heard nothing from any server
	// when told (heard false: it never had).
	silent time.Duration
	heard  bool
}

// wrongful reports an expiry that ZooKeeper would not make: the client had
// heard from a server less than limit before it was told. After a longer
// silence an expiry is what ZooKeeper does too: go-zookeeper, for one, can
// sit for many seconds in a handshake with a stopped node, reaching no
// quorum member meanwhile, and a real ZooKeeper expires it.
func (e expiry) wrongful(limit time.Duration) bool { return e.heard && e.silent < limit }

// heardConn notes the time of every read, so an expiry can be set against
// the last moment the client heard from the ensemble.
type heardConn struct {
	net.Conn
	s *zkSession
}

func (c heardConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.s.heardNow.Store(time.Now().UnixNano())
	}
	return n, err
}

// dial is go-zookeeper's dialer: each new connection starts with nothing
// heard on it, so the answer to its handshake is not counted as contact.
func (s *zkSession) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	s.mu.Lock()
	s.heardPrev = max(s.heardPrev, s.heardNow.Swap(0))
	s.mu.Unlock()
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return heardConn{Conn: c, s: s}, nil
}

func (s *zkSession) event(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	switch ev.State {
	case zk.StateExpired:
		// go-zookeeper learns of an expiry only from a handshake, so
		// what was heard before is on earlier connections. The answer
		// that said so is no contact with the session: forget it, or
		// LastHeard would give the expired session a last answer
		// after the expiry (the callback runs in go-zookeeper's
		// handshake, after its last read on this connection).
		s.heardNow.Store(0)
		e := expiry{workload: s.workload, id: s.lastID, at: now, heard: s.heardPrev != 0}
		if e.heard {
			e.silent = now.Sub(time.Unix(0, s.heardPrev))
		}
		s.expiries = append(s.expiries, e)
	case zk.StateHasSession:
		s.lastID = s.conn.SessionID()
		if s.firstID == 0 {
			s.firstID = s.lastID
		}
		select {
		case s.has <- struct{}{}:
		default:
		}
	}
}

// Expiries returns the expiries seen so far.
func (s *zkSession) Expiries() []expiry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]expiry(nil), s.expiries...)
}

// LastHeard returns the session the client has (or last had) and the
// last time it heard from a server, on this connection or an earlier one.
func (s *zkSession) LastHeard() (int64, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := max(s.heardPrev, s.heardNow.Load())
	if ns == 0 {
		return s.lastID, time.Time{}
	}
	return s.lastID, time.Unix(0, ns)
}

// FirstID returns the first session id the client was given.
func (s *zkSession) FirstID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstID
}

// dialZK opens a go-zookeeper client on servers and waits, up to limit,
// for its session. The client is closed on failure.
func dialZK(ctx context.Context, workload string, servers []string, timeout, limit time.Duration) (*zkSession, error) {
	s := &zkSession{workload: workload, has: make(chan struct{}, 1)}
	// The callback may run before Connect returns; conn is set first
	// under the lock it takes.
	s.mu.Lock()
	conn, _, err := zk.Connect(servers, timeout,
		zk.WithLogger(log.New(io.Discard, "", 0)),
		zk.WithDialer(s.dial),
		zk.WithEventCallback(s.event))
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.conn = conn
	s.mu.Unlock()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-s.has:
		return s, nil
	case <-t.C:
	case <-ctx.Done():
	}
	s.Close()
	return nil, fmt.Errorf("%s: no session on %v within %v", workload, servers, limit)
}

// Close ends the session; go-zookeeper gives up on the server's answer
// after a few seconds.
func (s *zkSession) Close() {
	done := make(chan struct{})
	go func() {
		s.conn.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // it gives up after 3s; leave it
	}
}

// ErrGaveUp is returned by Call when f did not return in time. The
// request may still be queued in go-zookeeper and sent later, in order.
var ErrGaveUp = errors.New("nemesis: gave up waiting for the answer")

// Call runs f, a go-zookeeper call, and gives up after d or when ctx ends:
// go-zookeeper calls have no deadline of their own, and one queued while
// no server answers waits until the session ends. f may go on running
// after Call gave up, so it must not write variables its caller reads
// again: a call with results takes CallValue, which hands them back.
func Call(ctx context.Context, d time.Duration, f func() error) error {
	_, err := CallValue(ctx, d, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

// CallValue is Call for a call with a result, returned only when f
// returned in time; a late f's result is dropped with it.
func CallValue[T any](ctx context.Context, d time.Duration, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	var zero T
	select {
	case r := <-done:
		return r.v, r.err
	case <-t.C:
		return zero, ErrGaveUp
	case <-ctx.Done():
		return zero, ErrGaveUp
	}
}

// refused reports an error that is the server's answer to a request,
// which ZooKeeper gives only for a request it did not apply. Any other
// error (connection loss, no server, session expired while the request
// was in flight, giving up) leaves the outcome unknown.
func refused(err error) bool {
	for _, e := range []error{zk.ErrNoNode, zk.ErrNodeExists, zk.ErrBadVersion, zk.ErrNotEmpty,
		zk.ErrNoAuth, zk.ErrBadArguments, zk.ErrInvalidACL, zk.ErrNoChildrenForEphemerals} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// pause sleeps for d or until ctx ends, and reports whether ctx is still
// live.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
