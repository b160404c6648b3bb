package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// liveWorkload holds sessions open for the whole run, each with an
// ephemeral node, doing nothing but ping. With a majority up and one
// fault at a time, none may expire: a session moves to another node well
// within its timeout, and a new leader gives every session a fresh one.
type liveWorkload struct {
	dir      string
	sessions []*zkSession
	paths    []string
}

// start opens n sessions on every node's address and creates the
// ephemerals.
func (l *liveWorkload) start(ctx context.Context, r *runner, n int) error {
	for i := range n {
		s, err := r.dial(ctx, "live")
		if err != nil {
			return err
		}
		p := fmt.Sprintf("%s/%d", l.dir, i)
		if err := createOnce(ctx, r.cfg.OpTimeout, s, p, zk.FlagEphemeral); err != nil {
			return fmt.Errorf("live session %d: %w", i, err)
		}
		l.sessions = append(l.sessions, s)
		l.paths = append(l.paths, p)
	}
	return nil
}

// createOnce creates p with retries over lost answers; finding it there
// after such a loss is success if this session owns it (or it is not
// ephemeral).
func createOnce(ctx context.Context, d time.Duration, s *zkSession, p string, flags int32) error {
	var err error
	lost := false
	for range 50 {
		err = Call(ctx, d, func() error {
			_, err := s.conn.Create(p, nil, flags, openACL)
			return err
		})
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNodeExists) && lost:
			var st *zk.Stat
			if err := Call(ctx, d, func() error {
				var err error
				_, st, err = s.conn.Get(p)
				return err
			}); err != nil {
				return err
			}
			if flags&zk.FlagEphemeral != 0 && st.EphemeralOwner != s.conn.SessionID() {
				return fmt.Errorf("create %s: exists, owned by 0x%x", p, st.EphemeralOwner)
			}
			return nil
		case refused(err):
			return fmt.Errorf("create %s: %w", p, err)
		}
		lost = true
		if !pause(ctx, 100*time.Millisecond) {
			break
		}
	}
	return fmt.Errorf("create %s: %w", p, err)
}

// liveResult is the end state of the live sessions.
type liveResult struct {
	sessions, wrong int
	details         []string
}

// check looks at each live session, still open: the client must hold the
// session it was first given and the server its ephemeral, owned by it.
// A session that expired only after its client had heard from no server
// for bound or longer may rightly have lost both.
func (l *liveWorkload) check(ctx context.Context, admin *zkSession, d, bound time.Duration) liveResult {
	res := liveResult{sessions: len(l.sessions)}
	_ = Call(ctx, d, func() error { _, err := admin.conn.Sync(l.dir); return err })
	for i, s := range l.sessions {
		first := s.FirstID()
		var why []string
		wrongly, allowed := false, false
		exps := s.Expiries()
		for j, e := range exps {
			how := "allowed"
			if e.wrongful(bound) {
				how, wrongly = "wrong", true
			} else {
				allowed = true
			}
			switch {
			case j < 3:
				why = append(why, fmt.Sprintf("expired at %s, %v after it last heard from a server (%s)", e.at.Format(clock), e.silent.Round(time.Millisecond), how))
			case j == 3:
				why = append(why, fmt.Sprintf("expired %d more times", len(exps)-3))
			}
		}
		if cur := s.conn.SessionID(); cur != first {
			why = append(why, fmt.Sprintf("now has session 0x%x", cur))
		}
		var st *zk.Stat
		var there bool
		err := Call(ctx, d, func() error {
			var err error
			there, st, err = admin.conn.Exists(l.paths[i])
			return err
		})
		switch {
		case err != nil:
			why = append(why, fmt.Sprintf("ephemeral not checked: %v", err))
		case !there:
			why = append(why, "its ephemeral is gone")
		case st.EphemeralOwner != first:
			why = append(why, fmt.Sprintf("its ephemeral is owned by 0x%x", st.EphemeralOwner))
		}
		if len(why) == 0 {
			continue
		}
		if wrongly || !allowed {
			res.wrong++
		}
		if len(res.details) < 10 {
			res.details = append(res.details, fmt.Sprintf("live session %d (0x%x): %s", i, first, strings.Join(why, "; ")))
		}
	}
	return res
}

// churnWorkload opens sessions on followers, creates an ephemeral and
// closes them, over and over, so that leader kills land while sessions are
// being created.
type churnWorkload struct {
	dir    string
	addrs  []string
	cfg    Config
	leader *atomic.Int32 // last leader seen, -1 if unknown

	mu       sync.Mutex // guards the fields below
	opened   int
	expiries []expiry
	closed   map[int64]time.Time // sessions closed, and when their client last heard from a server
}

// pick returns a follower's address when the leader is known, else any.
func (cw *churnWorkload) pick() string {
	l := int(cw.leader.Load())
	for range 10 {
		i := rand.IntN(len(cw.addrs))
		if i != l {
			return cw.addrs[i]
		}
	}
	return cw.addrs[rand.IntN(len(cw.addrs))]
}

// run churns until ctx ends, resting between sessions (not at all in a
// burst).
func (cw *churnWorkload) run(ctx context.Context, name string, rest time.Duration) {
	for n := 0; n < 1_000_000 && ctx.Err() == nil; n++ {
		s, err := dialZK(ctx, "churn", []string{cw.pick()}, cw.cfg.SessionTimeout, 2*time.Second)
		if err == nil {
			cw.mu.Lock()
			cw.opened++
			cw.mu.Unlock()
			_ = Call(ctx, 3*time.Second, func() error {
				_, err := s.conn.Create(fmt.Sprintf("%s/%s-%d", cw.dir, name, n), nil, zk.FlagEphemeral, openACL)
				return err
			})
			s.Close()
			id, heard := s.LastHeard()
			cw.mu.Lock()
			cw.expiries = append(cw.expiries, s.Expiries()...)
			if cw.closed == nil {
				cw.closed = make(map[int64]time.Time)
			}
			cw.closed[id] = heard
			cw.mu.Unlock()
		}
		if rest > 0 && !pause(ctx, rest/2+rand.N(rest)) {
			return
		}
	}
}

// Opened returns how many sessions the churn has opened so far.
func (cw *churnWorkload) Opened() int {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return cw.opened
}
