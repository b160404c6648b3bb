package nemesis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

var openACL = zk.WorldACL(zk.PermAll)

// zkSession is a go-zookeeper client that remembers its session's life:
// when it was without a server and when the server said it had expired.
// go-zookeeper opens a new session by itself after an expiry, so a
// workload goes on; the expiry stays on record.
type zkSession struct {
	conn     *zk.Conn
	workload string
	has      chan struct{} // a token per StateHasSession, never blocking

	mu       sync.Mutex // guards the fields below
	firstID  int64      // the session the client was first given
	lastID   int64      // the session it has, or last had
	lostAt   time.Time  // start of the current disconnection, zero if connected
	expiries []expiry
}

// expiry is the server telling a client its session is gone.
type expiry struct {
	workload string
	id       int64
	at       time.Time
	// without is how long the client had been without a server when
	// told: beyond the session timeout an expiry is what ZooKeeper
	// promises, below it the server ended a session that was in touch.
	without time.Duration
}

// wrongful reports an expiry that ZooKeeper would not make: the client had
// been without a server for less than limit when told. An expiry after a
// longer cut-off is what ZooKeeper does too: go-zookeeper, for one, can sit
// for many seconds in a handshake with a stopped node, reaching no quorum
// member meanwhile.
func (e expiry) wrongful(limit time.Duration) bool { return e.without < limit }

func (s *zkSession) event(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	switch ev.State {
	case zk.StateDisconnected:
		if s.lostAt.IsZero() {
			s.lostAt = now
		}
	case zk.StateExpired:
		e := expiry{workload: s.workload, id: s.lastID, at: now}
		if !s.lostAt.IsZero() {
			e.without = now.Sub(s.lostAt)
		}
		s.expiries = append(s.expiries, e)
	case zk.StateHasSession:
		s.lostAt = time.Time{}
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

// errGaveUp is returned by call when f did not return in time. The
// request may still be queued in go-zookeeper and sent later, in order.
var errGaveUp = errors.New("nemesis: gave up waiting for the answer")

// call runs f, a go-zookeeper call, and gives up after d or when ctx ends:
// go-zookeeper calls have no deadline of their own, and one queued while
// no server answers waits until the session ends.
func call(ctx context.Context, d time.Duration, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errGaveUp
	case <-ctx.Done():
		return errGaveUp
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
