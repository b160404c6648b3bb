package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// sessionsSize is the churn workload's size: sessions created and closed,
// how many at a time, how many left to expire and the timeout they ask
// for.
func sessionsSize(s Size) (churn, parallel, expire int, timeout time.Duration) {
	expire = or(s.Expire, 4)
	if expire < 0 {
		expire = 0
	}
	timeout = s.ExpireTimeout
	if timeout == 0 {
		timeout = 4 * time.Second
	}
	return or(s.Churn, 1000), or(s.Sessions, 8), expire, timeout
}

var sessionsWorkload = &workload{
	name:  "sessions",
	about: "session churn: create and close sessions (sessions/s); then sessions that stop pinging must expire (expiry time)",
	describe: func(s Size) string {
		churn, par, expire, timeout := sessionsSize(s)
		d := fmt.Sprintf("%d sessions created and closed, %d at a time", churn, par)
		if expire > 0 {
			d += fmt.Sprintf("; %d sessions asking for a %v timeout stop pinging and expire", expire, timeout)
		}
		return d
	},
	run: runSessions,
}

// runSessions creates and closes churn sessions, parallel at a time: the
// create latency runs from dialling to the session being established,
// the close latency over go-zookeeper's Close, which waits for the
// server's answer. Then expire sessions each create an ephemeral znode and
// go silent; the expiry time runs from the moment their connections are
// cut to the moment another session sees the ephemeral deleted. The run
// fails if one does not expire within four timeouts and ten seconds.
func runSessions(ctx context.Context, e *env) (*measurement, error) {
	churn, parallel, expire, timeout := sessionsSize(e.opt.Size)
	var (
		creates = make([][]time.Duration, parallel)
		closes  = make([][]time.Duration, parallel)
		next    atomic.Int64
	)
	e.prog.phase("measure", int64(churn), "sessions")
	t := e.startTimer()
	err := forEach(ctx, parallel, parallel, func(ctx context.Context, j int) error {
		// Bounded by churn: each pass claims one session.
		for ctx.Err() == nil {
			k := int(next.Add(1))
			if k > churn {
				break
			}
			server := e.target.Servers[k%len(e.target.Servers)]
			t0 := time.Now()
			s, err := connect(ctx, 0, server, e.opt.ConnectTimeout, dialOptions{timeout: e.opt.SessionTimeout})
			if err != nil {
				return err
			}
			t1 := time.Now()
			s.conn.Close()
			creates[j] = append(creates[j], t1.Sub(t0))
			closes[j] = append(closes[j], time.Since(t1))
			e.prog.done.Add(1)
		}
		return nil
	})
	elapsed := t.elapsed()
	if err != nil {
		return nil, err
	}
	m := rated("sessions/s", churn, elapsed, "create", creates...)
	t.serverCPU(m, "session", churn)
	m.add(latencyFigures("close", slices.Concat(closes...))...)
	if expire == 0 {
		return m, nil
	}
	expired, err := expireSessions(ctx, e, expire, timeout)
	if err != nil {
		return nil, err
	}
	m.add(Figure{Name: "expire timeout asked", Unit: "ms", Better: Neither, Value: Ms(timeout)})
	m.add(slices.DeleteFunc(latencyFigures("expire", expired), func(f Figure) bool {
		return f.Name == "expire p90" || f.Name == "expire p99.9"
	})...)
	return m, nil
}

// cutDialer dials for one session until cut; after that its connection is
// closed and every dial fails, so the session stops pinging and, to the
// server, goes silent.
type cutDialer struct {
	mu   sync.Mutex // guards the fields below
	conn net.Conn
	cut  bool
}

var errCut = errors.New("connection cut by the benchmark")

func (d *cutDialer) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errCut
	}
	c, err := net.DialTimeout(network, addr, timeout)
	d.conn = c
	return c, err
}

func (d *cutDialer) cutNow() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	if d.conn != nil {
		d.conn.Close()
	}
}

// expireSessions opens n sessions asking for timeout, has each create an
// ephemeral znode watched by the admin session, cuts their connections and
// returns how long each ephemeral took to go.
func expireSessions(ctx context.Context, e *env, n int, timeout time.Duration) ([]time.Duration, error) {
	dir, err := e.mkdir("expire", nil)
	if err != nil {
		return nil, err
	}
	dialers := make([]*cutDialer, n)
	for i := range dialers {
		dialers[i] = &cutDialer{}
	}
	g := newSessions(ctx, n)
	defer g.close()
	gone := make([]<-chan zk.Event, n)
	err = forEach(ctx, n, 16, func(ctx context.Context, i int) error {
		s, err := connect(ctx, i, e.target.Servers[i%len(e.target.Servers)], e.opt.ConnectTimeout,
			dialOptions{timeout: timeout, dialer: dialers[i].dial})
		if err != nil {
			return err
		}
		g.list[i] = s
		p := fmt.Sprintf("%s/e%d", dir, i)
		if _, err := s.conn.Create(p, nil, zk.FlagEphemeral, openACL); err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
		there, _, ch, err := e.admin.conn.ExistsW(p)
		if err == nil && !there {
			err = zk.ErrNoNode
		}
		if err != nil {
			return fmt.Errorf("watch %s: %w", p, err)
		}
		gone[i] = ch
		return nil
	})
	if err != nil {
		return nil, err
	}
	e.prog.phase("expire", int64(n), "sessions expired")
	cutAt := time.Now()
	for _, d := range dialers {
		d.cutNow()
	}
	wait := 4*timeout + 10*time.Second
	limit, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	out := make([]time.Duration, n)
	err = forEach(limit, n, n, func(ctx context.Context, i int) error {
		select {
		case ev := <-gone[i]:
			if ev.Type != zk.EventNodeDeleted {
				return fmt.Errorf("session %d: the watch on its ephemeral gave %v, not its deletion", i, ev.Type)
			}
			out[i] = time.Since(cutAt)
			e.prog.done.Add(1)
			return nil
		case <-ctx.Done():
			return fmt.Errorf("session %d of %d not expired %v after it stopped pinging: %w", i, n, wait, context.Cause(ctx))
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
