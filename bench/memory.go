package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// perBucket is how many of the memory workload's znodes share a parent:
// few enough that listing a parent stays far below a client's buffer.
const perBucket = 1000

func memorySize(s Size) (znodes, bytes, sessions, window int) {
	return or(s.Znodes, 1_000_000), or(s.Bytes, 100), or(s.Sessions, 4), or(s.Window, 64)
}

var memoryWorkload = &workload{
	name:  "memory",
	about: "znode memory: create many znodes, then read the server's RSS (--pid, --against-pid) (creates/s, RSS growth)",
	describe: func(s Size) string {
		z, b, n, w := memorySize(s)
		return fmt.Sprintf("%d znodes of %d bytes created by %d sessions, %d outstanding per session; no warm-up round", z, b, n, w)
	},
	coldOnly: true,
	run:      runMemory,
}

// runMemory creates znodes znodes of bytes bytes, perBucket to a parent,
// pipelined, and reads the server's resident set size from /proc before
// and after when its pid was given. The figure is RSS as the kernel sees
// it: neither a JVM nor Go gives freed memory back at once, so a later
// run reuses memory an earlier one's deletions freed and grows less. The
// workload has no warm-up round for that reason, and only its first run
// against a freshly started server shows the footprint; the run says so
// in a note.
func runMemory(ctx context.Context, e *env) (*measurement, error) {
	znodes, bytes, n, window := memorySize(e.opt.Size)
	dir, err := e.mkdir("memory", nil)
	if err != nil {
		return nil, err
	}
	buckets := (znodes + perBucket - 1) / perBucket
	err = forEach(ctx, buckets, 64, func(_ context.Context, b int) error {
		_, err := e.admin.conn.Create(fmt.Sprintf("%s/b%d", dir, b), nil, 0, openACL)
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
	pids := e.target.PIDs
	var before int64
	if len(pids) != 0 {
		if before, err = readRSS(pids...); err != nil {
			return nil, err
		}
	}
	var next atomic.Int64
	lat := make([][]time.Duration, n*window)
	payload := make([]byte, bytes)
	e.prog.phase("measure", int64(znodes), "znodes")
	t := e.startTimer()
	err = forEach(ctx, n*window, n*window, func(ctx context.Context, j int) error {
		c := g.list[j%n].conn
		var mine []time.Duration
		defer func() { lat[j] = mine }()
		// Bounded by znodes: each pass claims one create.
		for ctx.Err() == nil {
			k := int(next.Add(1) - 1)
			if k >= znodes {
				break
			}
			p := fmt.Sprintf("%s/b%d/n%d", dir, k/perBucket, k%perBucket)
			t0 := time.Now()
			if _, err := c.Create(p, payload, 0, openACL); err != nil {
				return fmt.Errorf("create %s: %w", p, err)
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
	m := rated("creates/s", znodes, elapsed, "create", lat...)
	t.serverCPU(m, "create", znodes)
	if len(pids) == 0 {
		m.notes = append(m.notes, "RSS unknown: give the server's process id with --pid (--against-pid)")
		return m, nil
	}
	after, err := readRSS(pids...)
	if err != nil {
		return nil, err
	}
	m.notes = append(m.notes, "RSS growth shows the footprint only in the first run against a freshly started server: later runs reuse memory earlier ones freed")
	const mib = 1 << 20
	m.add(
		Figure{Name: "RSS before", Unit: "MiB", Better: Neither, Value: float64(before) / mib},
		Figure{Name: "RSS after", Unit: "MiB", Better: Lower, Value: float64(after) / mib},
		Figure{Name: "RSS growth per znode", Unit: "B", Better: Lower, Value: float64(after-before) / float64(znodes)},
	)
	return m, nil
}
