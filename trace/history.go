package trace

import (
	"slices"
	"sync"
	"time"
	"unsafe"
)

// History is the window of recent events a Broker keeps, bounded in count
// and in bytes: what the live view's trace opens on and what it replays
// the tree, the sessions, the watches and the lock queues from. Beside it,
// a shorter list of the sessions that ended lately (Ended) outlives the
// window. Publish appends under the history's own lock, which readers
// hold only to copy.
type History struct {
	limits HistoryLimits

	mu      sync.Mutex // guards the fields below
	ring    []Event    // the window: n events from start, circular
	start   int
	n       int
	bytes   int64  // the window's size, as eventBytes counts it
	evicted uint64 // events that left the window
	ended   []EndedSession
}

// HistoryLimits bound a History.
type HistoryLimits struct {
	// Events and Bytes bound the window: the oldest events leave it
	// once either is passed. Bytes counts each event's fields and what
	// they point to (paths, a change's data) as stored.
	Events int
	Bytes  int64
	// Ended and EndedFor bound the list of ended sessions: the most kept,
	// and for how long.
	Ended    int
	EndedFor time.Duration
}

// The default limits: a window large enough to replay a lock's queue of
// a thousand contenders coming and going, a few megabytes at most.
const (
	DefaultHistoryEvents = 20000
	DefaultHistoryBytes  = 8 << 20
	DefaultEnded         = 1000
	DefaultEndedFor      = 30 * time.Minute
)

// withDefaults fills the limits left zero.
func (l HistoryLimits) withDefaults() HistoryLimits {
	if l.Events <= 0 {
		l.Events = DefaultHistoryEvents
	}
	if l.Bytes <= 0 {
		l.Bytes = DefaultHistoryBytes
	}
	if l.Ended <= 0 {
		l.Ended = DefaultEnded
	}
	if l.EndedFor <= 0 {
		l.EndedFor = DefaultEndedFor
	}
	return l
}

// EndedSession is a session that closed, as the history remembers it.
type EndedSession struct {
	// Closed is the close: its time, zxid, reason, member, timeout and
	// the ephemerals it deleted (Changes).
	Closed Event
	// Dropped are the watches its connection to this server held when
	// it went, as kind and path; nil when it held none here.
	Dropped []Op
}

// KeepHistory makes b keep a window of the events it publishes, within
// limits (zero fields take the defaults), and returns it. A Broker keeps
// one history: asked again, it returns the one it has, so a broker shared
// across a server's restarts keeps its past.
func (b *Broker) KeepHistory(limits HistoryLimits) *History {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hist == nil {
		b.hist = &History{limits: limits.withDefaults()}
		b.active.Add(1)
	}
	return b.hist
}

// History is the window KeepHistory started, or nil.
func (b *Broker) History() *History {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.hist
}

// SubscribeSince starts a subscription as Subscribe does and, at the same
// instant, copies the events of the history window after seq that f
// keeps: nothing published is in neither, nor in both. The broker must
// keep a history.
func (b *Broker) SubscribeSince(f Filter, buffer int, seq uint64) (*Subscription, []Event) {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	f.Kinds = slices.Clone(f.Kinds)
	s := &Subscription{b: b, filter: f, ch: make(chan Event, buffer)}
	b.mu.Lock()
	defer b.mu.Unlock()
	var past []Event
	if b.hist != nil {
		past, _ = b.hist.Since(seq, &f, 0)
	}
	b.subs = append(b.subs, s)
	b.active.Add(1)
	return s, past
}

// add appends e to the window, making room by dropping the oldest, and
// notes a session's end. It runs in Publish.
func (h *History) add(e *Event) {
	size := eventBytes(e)
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.n > 0 && (h.n >= h.limits.Events || h.bytes+size > h.limits.Bytes) {
		h.dropOldest()
	}
	if h.n == len(h.ring) {
		h.grow()
	}
	*h.at(h.n) = *e
	h.n++
	h.bytes += size
	h.noteEnd(e)
}

// grow doubles the ring, up to the count limit, keeping the events in
// order. mu is held.
func (h *History) grow() {
	ring := make([]Event, min(max(2*len(h.ring), 64), h.limits.Events))
	for i := range h.n {
		ring[i] = *h.at(i)
	}
	h.ring, h.start = ring, 0
}

// dropOldest removes the oldest event of the window. mu is held.
func (h *History) dropOldest() {
	old := h.at(0)
	h.bytes -= eventBytes(old)
	*old = Event{} // let go of what it points to
	h.start = (h.start + 1) % len(h.ring)
	h.n--
	h.evicted++
}

// at returns the i-th oldest slot of the window. mu is held.
func (h *History) at(i int) *Event { return &h.ring[(h.start+i)%len(h.ring)] }

// noteEnd keeps a closed session in the ended list, and the watches its
// connection dropped with it. mu is held.
func (h *History) noteEnd(e *Event) {
	switch {
	case e.Kind == SessionClosed:
		cutoff := e.Time.Add(-h.limits.EndedFor)
		drop := 0
		for drop < len(h.ended) && (len(h.ended)-drop >= h.limits.Ended || h.ended[drop].Closed.Time.Before(cutoff)) {
			drop++
		}
		if drop > 0 {
			h.ended = slices.Delete(h.ended, 0, drop)
		}
		h.ended = append(h.ended, EndedSession{Closed: *e})
	case e.Kind == WatchRemoved && e.Reason == ReasonConnClosed:
		for i := len(h.ended) - 1; i >= 0 && i >= len(h.ended)-16; i-- {
			if h.ended[i].Closed.Session == e.Session {
				h.ended[i].Dropped = append(h.ended[i].Dropped, e.Ops...)
				return
			}
		}
	}
}

// Reasons a WatchRemoved gives.
const (
	// ReasonConnClosed: the connection that held the watches closed (its
	// session ended, or its client went).
	ReasonConnClosed = "connection closed"
	// ReasonRemoveWatches: the client removed them (removeWatches).
	ReasonRemoveWatches = "removeWatches"
)

// Reasons a SessionClosed gives.
const (
	// ReasonExpired: the server expired the session: its timeout passed
	// (or a test asked for its expiry).
	ReasonExpired = "expired"
	// ReasonClosed: its client closed it.
	ReasonClosed = "closed"
)

// Since copies the events of the window after seq (from the oldest when
// seq is 0) that f keeps (all, if f is nil), oldest first; with limit > 0,
// only the newest limit of them. last is the Seq of the window's newest
// event, kept or not: a stream that goes on from the copy starts after it.
// Like Scan it reads the window a piece at a time; with a limit, from the
// newest back.
func (h *History) Since(seq uint64, f *Filter, limit int) (events []Event, last uint64) {
	keep := func(e *Event) bool { return f == nil || f.Match(e) }
	if limit <= 0 {
		return h.Scan(seq, keep)
	}
	piece := make([]Event, 0, scanPiece)
	h.mu.Lock()
	if h.n > 0 {
		last = h.at(h.n - 1).Seq
	}
	h.mu.Unlock()
	before := last + 1 // read the events older than this: from the newest when it starts
	for len(events) < limit && last > 0 {
		piece = piece[:0]
		h.mu.Lock()
		lo := h.first(seq)
		i := h.first(before-1) - 1 // the newest older than before
		stop := max(i-scanPiece, lo-1)
		for ; i > stop; i-- {
			e := h.at(i)
			before = e.Seq
			if keep(e) {
				piece = append(piece, *e) // within capacity: no allocation
			}
		}
		done := i < lo
		h.mu.Unlock()
		events = append(events, piece...)
		if done {
			break
		}
	}
	if len(events) > limit {
		events = events[:limit]
	}
	slices.Reverse(events)
	return events, last
}

// scanPiece is how many events a Scan reads under one hold of the
// window's lock: Publish, on the server's apply path, waits for it at most
// that long, and nothing is allocated while it is held.
const scanPiece = 256

// Scan copies the events of the window after seq that keep keeps, oldest
// first, up to the newest event when it starts, whose Seq it returns (kept
// or not). It reads the window a piece at a time, each under its own short
// hold of the lock; events that leave the window meanwhile are skipped,
// and those published meanwhile are not read, so a scan ends however fast
// the server writes. keep runs under the lock: it must be quick and must
// not call back into the History.
func (h *History) Scan(seq uint64, keep func(*Event) bool) (events []Event, last uint64) {
	piece := make([]Event, 0, scanPiece)
	h.mu.Lock()
	if h.n > 0 {
		last = h.at(h.n - 1).Seq
	}
	h.mu.Unlock()
	for seq < last {
		piece = piece[:0]
		h.mu.Lock()
		i := h.first(seq)
		end := min(i+scanPiece, h.n)
		for ; i < end && seq < last; i++ {
			e := h.at(i)
			seq = e.Seq
			if keep(e) {
				piece = append(piece, *e) // within capacity: no allocation
			}
		}
		if i == h.n {
			seq = last // the window ended (it was cleared meanwhile)
		}
		h.mu.Unlock()
		events = append(events, piece...)
	}
	return events, last
}

// Get copies the event with Seq seq, false if it is not in the window.
func (h *History) Get(seq uint64) (Event, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i := h.first(seq - 1); i < h.n && h.at(i).Seq == seq {
		return *h.at(i), true
	}
	return Event{}, false
}

// first is the index of the window's first event after seq. mu is held.
func (h *History) first(seq uint64) int {
	lo, hi := 0, h.n
	for lo < hi {
		mid := (lo + hi) / 2
		if h.at(mid).Seq <= seq {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// SeqAt returns the Seq just before the first event of the window that
// satisfies at (a time or a zxid reached), for Since; the newest Seq if
// none does.
func (h *History) SeqAt(at func(*Event) bool) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.n {
		if e := h.at(i); at(e) {
			return e.Seq - 1
		}
	}
	if h.n == 0 {
		return 0
	}
	return h.at(h.n - 1).Seq
}

// Ended copies the list of sessions that ended lately, oldest first.
func (h *History) Ended() []EndedSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Clone(h.ended)
	for i := range out {
		out[i].Dropped = slices.Clone(out[i].Dropped)
	}
	return out
}

// HistoryStats describe the window.
type HistoryStats struct {
	Limits HistoryLimits
	// Events and Bytes are what the window holds now.
	Events int
	Bytes  int64
	// First and Last are the oldest and newest events' Seq and time.
	FirstSeq, LastSeq   uint64
	FirstTime, LastTime time.Time
	// Evicted counts the events that left the window.
	Evicted uint64
	// Ended is how many ended sessions are listed.
	Ended int
}

// Stats describes the window now.
func (h *History) Stats() HistoryStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := HistoryStats{Limits: h.limits, Events: h.n, Bytes: h.bytes, Evicted: h.evicted, Ended: len(h.ended)}
	if n := h.n; n > 0 {
		first, last := h.at(0), h.at(n-1)
		st.FirstSeq, st.LastSeq, st.FirstTime, st.LastTime = first.Seq, last.Seq, first.Time, last.Time
	}
	return st
}

// LastSeq is the newest event's Seq, 0 when the window is empty.
func (h *History) LastSeq() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.n; n > 0 {
		return h.at(n - 1).Seq
	}
	return 0
}

// Sizes that eventBytes counts.
var (
	eventSize  = int64(unsafe.Sizeof(Event{}))
	opSize     = int64(unsafe.Sizeof(Op{}))
	changeSize = int64(unsafe.Sizeof(Change{}))
)

// eventBytes is what an event holds in memory, as the window counts it:
// the event, its strings and the slices it points to. Strings and data it
// may share with the tree are counted all the same.
func eventBytes(e *Event) int64 {
	n := eventSize + int64(len(e.Path)+len(e.Op)+len(e.Err)+len(e.Type)+len(e.Reason)+len(e.Watch))
	for _, op := range e.Ops {
		n += opSize + int64(len(op.Op)+len(op.Path))
	}
	for _, c := range e.Changes {
		n += changeSize + int64(len(c.Type)+len(c.Path)+len(c.Data))
	}
	return n
}
