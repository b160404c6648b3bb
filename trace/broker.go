package trace

import (
	"slices"
	"sync"
	"sync/atomic"
)

// DefaultBuffer is a subscription's buffer when Subscribe is given none.
const DefaultBuffer = 4096

// Broker hands published events to its subscribers. Publish never
// blocks: a subscriber whose buffer is full loses the event and counts
// it. With no subscriber, Publish and Active cost one atomic load, so a
// server may publish from its apply path unconditionally.
//
// A Broker's zero value is ready to use.
type Broker struct {
	// active is the number of subscribers: what Active reads, with no
	// lock.
	active atomic.Int32
	seq    atomic.Uint64
	// mu guards subs. Publish holds it to read, so Close can never
	// close a channel that Publish is sending on.
	mu   sync.RWMutex
	subs []*Subscription
	recs []*Recorder
	hist *History // KeepHistory's window; nil without one
}

// Active reports whether anyone is subscribed, or a history is kept: a
// publisher may skip building events nobody would read.
func (b *Broker) Active() bool { return b.active.Load() > 0 }

// Publish numbers e (Event.Seq) and hands it to every subscriber whose
// filter keeps it. Calls must not overlap if their order matters to the
// subscribers (a server publishes under its apply lock).
func (b *Broker) Publish(e Event) {
	if b.active.Load() == 0 {
		return
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	e.Seq = b.seq.Add(1)
	for _, s := range b.subs {
		if !s.filter.Match(&e) {
			continue
		}
		select {
		case s.ch <- e:
		default:
			s.dropped.Add(1)
		}
	}
	for _, r := range b.recs {
		if r.filter.Match(&e) {
			r.add(e)
		}
	}
	if b.hist != nil {
		b.hist.add(&e)
	}
}

// Subscribe starts a subscription to the events f keeps, from now on,
// buffering up to buffer of them (DefaultBuffer if buffer <= 0). Close
// it when done.
func (b *Broker) Subscribe(f Filter, buffer int) *Subscription {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	f.Kinds = slices.Clone(f.Kinds)
	s := &Subscription{b: b, filter: f, ch: make(chan Event, buffer)}
	b.mu.Lock()
	b.subs = append(b.subs, s)
	b.active.Add(1)
	b.mu.Unlock()
	return s
}

// Subscription is one subscriber's stream of events.
type Subscription struct {
	b       *Broker
	filter  Filter
	ch      chan Event
	dropped atomic.Uint64
	once    sync.Once
}

// Events is the stream, in publishing order. It is closed by Close, after
// which the events still buffered can be read.
func (s *Subscription) Events() <-chan Event { return s.ch }

// Dropped is how many events this subscriber lost because its buffer was
// full.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Close ends the subscription and closes its channel; it may be called
// more than once.
func (s *Subscription) Close() {
	s.once.Do(func() {
		leave(s.b, &s.b.subs, s)
		close(s.ch)
	})
}

// leave removes x from list, one of b's subscriber lists, under b.mu.
func leave[T comparable](b *Broker, list *[]T, x T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i := slices.Index(*list, x); i >= 0 {
		*list = slices.Delete(*list, i, i+1)
		b.active.Add(-1)
	}
}
