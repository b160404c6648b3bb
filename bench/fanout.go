package bench

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

func fanoutSize(s Size) (watchers, rounds int) {
	return or(s.Watchers, 200), or(s.Fanouts, 20)
}

var fanoutWorkload = &workload{
	name:  "fanout",
	about: "watch fan-out: many sessions watch one znode, one setData, until every watcher has its event (fan-out time)",
	describe: func(s Size) string {
		w, r := fanoutSize(s)
		return fmt.Sprintf("%d sessions watch one znode; %d setData rounds", w, r)
	},
	run: runFanout,
}

// runFanout: each round every watcher session sets a data watch on one
// znode (getData with a watch), then one setData changes it; the round's
// fan-out time runs from just before the setData is sent to the arrival,
// in go-zookeeper's receive loop, of the last watcher's event. A watch
// belongs to a session (a server keeps one per session and path), so each
// watcher is a session of its own. The run fails if a watcher gets no
// event.
func runFanout(ctx context.Context, e *env) (*measurement, error) {
	w, rounds := fanoutSize(e.opt.Size)
	node, err := e.mkdir("fanout", []byte("0"))
	if err != nil {
		return nil, err
	}
	var (
		arrived = make([]atomic.Int64, w) // unix nanos of watcher i's event this round, 0 before
		pending atomic.Int64              // watchers yet to hear this round
		all     = make(chan struct{}, 1)  // a token when pending reaches 0
	)
	onEvent := func(i int, ev zk.Event) {
		if ev.Type != zk.EventNodeDataChanged || ev.Path != node {
			return
		}
		if arrived[i].CompareAndSwap(0, time.Now().UnixNano()) && pending.Add(-1) == 0 {
			all <- struct{}{}
		}
	}
	g, err := e.connectAll(ctx, w, dialOptions{onEvent: onEvent})
	if err != nil {
		return nil, err
	}
	defer g.close()
	full := make([]time.Duration, 0, rounds)
	delivery := make([]time.Duration, 0, w*rounds)
	e.prog.phase("measure", int64(w*rounds), "events")
	cpu := e.startTimer()
	for r := range rounds {
		for i := range arrived {
			arrived[i].Store(0)
		}
		pending.Store(int64(w))
		err := forEach(ctx, w, 64, func(_ context.Context, i int) error {
			_, _, _, err := g.list[i].conn.GetW(node)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("round %d: watch %s: %w", r, node, err)
		}
		t0 := time.Now()
		if _, err := e.admin.conn.Set(node, []byte(fmt.Sprint(r+1)), -1); err != nil {
			return nil, fmt.Errorf("round %d: setData %s: %w", r, node, err)
		}
		select {
		case <-all:
		case <-ctx.Done():
			return nil, fmt.Errorf("round %d: %d of %d watchers got no event: %w", r, pending.Load(), w, context.Cause(ctx))
		}
		var last time.Duration
		for i := range arrived {
			d := time.Duration(arrived[i].Load() - t0.UnixNano())
			delivery = append(delivery, d)
			last = max(last, d)
		}
		full = append(full, last)
		e.prog.done.Add(int64(w))
	}
	var total time.Duration
	for _, d := range full {
		total += d
	}
	m := rated("events/s", w*rounds, total, "fan-out", full)
	cpu.serverCPU(m, "event", w*rounds)
	m.add(slices.DeleteFunc(latencyFigures("delivery", delivery), func(f Figure) bool {
		return f.Name == "delivery max" // the fan-out's max is the same number
	})...)
	return m, nil
}
