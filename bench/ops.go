package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// opsKind is one of the four read and write workloads.
type opsKind struct {
	write, pipelined bool
	defaultOps       int
}

// opsSize is a read or write workload's size: a sync workload keeps one
// request outstanding per session, a pipelined one window.
func opsSize(s Size, k opsKind) (sessions, window, ops, bytes int) {
	sessions, window = or(s.Sessions, 16), 1
	if k.pipelined {
		sessions, window = or(s.Sessions, 4), or(s.Window, 64)
	}
	return sessions, window, or(s.Ops, k.defaultOps), or(s.Bytes, 100)
}

func opsWorkload(name string, k opsKind) *workload {
	verb := "getData"
	if k.write {
		verb = "setData"
	}
	about := fmt.Sprintf("%s of a session's own znode, one request at a time per session (ops/s, latency)", verb)
	if k.pipelined {
		about = fmt.Sprintf("%s of a session's own znode, many requests outstanding per session (ops/s, latency)", verb)
	}
	return &workload{
		name:  name,
		about: about,
		describe: func(s Size) string {
			n, w, ops, b := opsSize(s, k)
			return fmt.Sprintf("%d %s of %d bytes from %d sessions, %d outstanding per session", ops, verb, b, n, w)
		},
		run: func(ctx context.Context, e *env) (*measurement, error) { return runOps(ctx, e, k) },
	}
}

var (
	readSyncWorkload       = opsWorkload("read-sync", opsKind{defaultOps: 50_000})
	writeSyncWorkload      = opsWorkload("write-sync", opsKind{write: true, defaultOps: 20_000})
	readPipelinedWorkload  = opsWorkload("read-pipelined", opsKind{pipelined: true, defaultOps: 200_000})
	writePipelinedWorkload = opsWorkload("write-pipelined", opsKind{write: true, pipelined: true, defaultOps: 100_000})
)

// runOps: each session owns a znode of bytes bytes; window goroutines per
// session share its one connection, each with one call at a time, so a
// session has window requests in flight (go-zookeeper writes a request as
// soon as it is issued and matches replies by xid). ops calls in all,
// claimed one at a time by whichever goroutine is free.
func runOps(ctx context.Context, e *env, k opsKind) (*measurement, error) {
	n, window, ops, bytes := opsSize(e.opt.Size, k)
	dir, err := e.mkdir("ops", nil)
	if err != nil {
		return nil, err
	}
	payload := make([]byte, bytes)
	paths := make([]string, n)
	err = forEach(ctx, n, 64, func(_ context.Context, i int) error {
		paths[i] = fmt.Sprintf("%s/s%d", dir, i)
		_, err := e.admin.conn.Create(paths[i], payload, 0, openACL)
		return err
	})
	if err != nil {
		return nil, err
	}
	g, err := e.connectAll(ctx, n, dialOptions{bytes: bytes})
	if err != nil {
		return nil, err
	}
	defer g.close()
	var next atomic.Int64
	lat := make([][]time.Duration, n*window)
	e.prog.phase("measure", int64(ops), "ops")
	t := e.startTimer()
	err = forEach(ctx, n*window, n*window, func(ctx context.Context, j int) error {
		c, p := g.list[j%n].conn, paths[j%n]
		data := make([]byte, bytes)
		mine := make([]time.Duration, 0, ops/(n*window)+1)
		defer func() { lat[j] = mine }()
		// Bounded by ops: each pass claims one call.
		for ctx.Err() == nil && next.Add(1) <= int64(ops) {
			t0 := time.Now()
			if k.write {
				if bytes > 0 {
					data[0]++
				}
				if _, err := c.Set(p, data, -1); err != nil {
					return fmt.Errorf("setData %s: %w", p, err)
				}
			} else {
				got, _, err := c.Get(p)
				if err != nil {
					return fmt.Errorf("getData %s: %w", p, err)
				}
				if len(got) != bytes {
					return fmt.Errorf("getData %s: %d bytes, want %d", p, len(got), bytes)
				}
			}
			mine = append(mine, time.Since(t0))
			e.prog.done.Add(1)
		}
		return nil
	})
	elapsed := t.elapsed()
	if err != nil {
		return nil, err
	}
	m := rated("ops/s", ops, elapsed, "", lat...)
	t.serverCPU(m, "op", ops)
	return m, nil
}
