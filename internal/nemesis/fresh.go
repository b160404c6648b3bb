package nemesis

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// freshWorkload checks that no read serves data older than a bound: a
// ticker sets a counter every tick and notes when each value was
// acknowledged; readers on every member read it without sync, and a read
// begun at time s must return a value at least as new as every value
// acknowledged before s-bound (a frozen read otherwise), and one that was
// written (a wrong read otherwise). ZooKeeper promises reads only
// sequential consistency; hutch bounds their staleness by how long a
// member answers without showing that it holds what the leader held
// (its activity reports, a third of the session timeout), and a member
// that cannot keep up (a full disk) stops answering.
type freshWorkload struct {
	path  string
	bound time.Duration

	mu    sync.Mutex // guards the fields below
	sent  int        // the newest value the ticker sent
	acked []tickAck  // acknowledged values, in order
	reads []freshRead
}

type tickAck struct {
	value int
	at    time.Time
}

type freshRead struct {
	reader int
	start  time.Time
	value  int
	bad    string // the data, when it is no counter value
}

// tick sets the counter to the next value until ctx ends.
func (w *freshWorkload) tick(ctx context.Context, s *zkSession, every, opTimeout time.Duration) {
	for ctx.Err() == nil {
		w.mu.Lock()
		w.sent++
		v := w.sent
		w.mu.Unlock()
		err := Call(ctx, opTimeout, func() error {
			_, err := s.conn.Set(w.path, []byte(strconv.Itoa(v)), -1)
			return err
		})
		if err == nil {
			w.mu.Lock()
			w.acked = append(w.acked, tickAck{value: v, at: time.Now()})
			w.mu.Unlock()
		}
		pause(ctx, every)
	}
}

// read reads the counter, without sync, until ctx ends.
func (w *freshWorkload) read(ctx context.Context, id int, s *zkSession, every, opTimeout time.Duration) {
	for ctx.Err() == nil {
		start := time.Now()
		var data []byte
		err := Call(ctx, opTimeout, func() error {
			var err error
			data, _, err = s.conn.Get(w.path)
			return err
		})
		if err == nil {
			r := freshRead{reader: id, start: start}
			if v, err := strconv.Atoi(string(data)); err == nil {
				r.value = v
			} else if len(data) > 0 {
				r.bad = fmt.Sprintf("%.40q", data)
			}
			w.mu.Lock()
			if len(w.reads) < 1_000_000 {
				w.reads = append(w.reads, r)
			}
			w.mu.Unlock()
		}
		pause(ctx, every)
	}
}

// freshResult is what check found.
type freshResult struct {
	reads, frozen, wrong int
	worst                time.Duration // the stalest read: how long before it began the first value it missed was acknowledged
	details              []string
}

// check judges every read against the acknowledgements.
func (w *freshWorkload) check() freshResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	var res freshResult
	res.reads = len(w.reads)
	for _, r := range w.reads {
		switch {
		case r.bad != "" || r.value > w.sent || r.value < 0:
			res.wrong++
			if len(res.details) < 10 {
				res.details = append(res.details, fmt.Sprintf("reader %d at %s read %s %d, never written (newest sent %d)",
					r.reader, r.start.Format(clock), r.bad, r.value, w.sent))
			}
			continue
		}
		// How stale it is: since the first value it missed was
		// acknowledged, if one was before it began.
		if j, _ := slices.BinarySearchFunc(w.acked, r.value+1, func(a tickAck, v int) int { return a.value - v }); j < len(w.acked) {
			if missed := w.acked[j]; missed.at.Before(r.start) {
				res.worst = max(res.worst, r.start.Sub(missed.at))
			}
		}
		// The newest value acknowledged before start-bound.
		i, _ := slices.BinarySearchFunc(w.acked, r.start.Add(-w.bound), func(a tickAck, t time.Time) int { return a.at.Compare(t) })
		if i == 0 {
			continue
		}
		must := w.acked[i-1]
		if r.value >= must.value {
			continue
		}
		res.frozen++
		j, _ := slices.BinarySearchFunc(w.acked, r.value+1, func(a tickAck, v int) int { return a.value - v })
		age := r.start.Sub(w.acked[min(j, len(w.acked)-1)].at)
		if len(res.details) < 10 {
			res.details = append(res.details, fmt.Sprintf("reader %d at %s read %d, but %d was acknowledged at %s, %v before (bound %v)",
				r.reader, r.start.Format(clock), r.value, must.value, must.at.Format(clock), age.Round(time.Millisecond), w.bound))
		}
	}
	return res
}
