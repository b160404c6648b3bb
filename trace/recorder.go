package trace

import (
	"context"
	"slices"
	"sync"
)

// Recorder keeps the events a Broker publishes in memory, up to a limit,
// so that a test can look back at what happened and wait for what has not
// happened yet. Unlike a Subscription it needs no reader goroutine and
// holds nothing until events come; past its limit it drops, and counts,
// newer events.
type Recorder struct {
	b      *Broker
	filter Filter
	limit  int

	mu      sync.Mutex // guards the fields below
	events  []Event
	dropped uint64
	closed  bool
	// changed is closed and cleared when an event is added or the
	// recorder closes; made by a waiter that needs it.
	changed chan struct{}
}

// DefaultRecordLimit is a Recorder's limit when Record is given none.
const DefaultRecordLimit = 1 << 20

// Record starts recording the events f keeps, up to limit of them
// (DefaultRecordLimit if limit <= 0). Close it when done.
func (b *Broker) Record(f Filter, limit int) *Recorder {
	if limit <= 0 {
		limit = DefaultRecordLimit
	}
	f.Kinds = slices.Clone(f.Kinds)
	r := &Recorder{b: b, filter: f, limit: limit}
	b.mu.Lock()
	b.recs = append(b.recs, r)
	b.active.Add(1)
	b.mu.Unlock()
	return r
}

// add runs in Publish: it appends without blocking on anything but mu,
// which readers hold only to copy.
func (r *Recorder) add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if len(r.events) >= r.limit {
		r.dropped++
		return
	}
	r.events = append(r.events, e)
	r.wakeLocked()
}

func (r *Recorder) wakeLocked() {
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// Events returns a copy of the events recorded so far, in order.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Len is the number of events recorded so far: a mark for Wait.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// Dropped is how many events did not fit under the limit.
func (r *Recorder) Dropped() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// Wait returns the first recorded event, at index from or later, that
// match keeps, waiting for it to be published if need be. It returns
// ctx's error if ctx ends first, and ErrClosed if the recorder is closed
// or has dropped events without a match among those it kept.
func (r *Recorder) Wait(ctx context.Context, from int, match func(Event) bool) (Event, error) {
	next := max(from, 0)
	for {
		r.mu.Lock()
		for ; next < len(r.events); next++ {
			if match(r.events[next]) {
				e := r.events[next]
				r.mu.Unlock()
				return e, nil
			}
		}
		if r.closed || r.dropped > 0 {
			r.mu.Unlock()
			return Event{}, ErrClosed
		}
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// Close stops recording; the events recorded stay readable.
func (r *Recorder) Close() {
	leave(r.b, &r.b.recs, r)
	r.mu.Lock()
	r.closed = true
	r.wakeLocked()
	r.mu.Unlock()
}
