package session

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// maxTimeout bounds a session timeout so that deadline arithmetic in
// nanoseconds cannot overflow; no client asks for a century.
const maxTimeout = 100 * 365 * 24 * time.Hour

// Tracker knows when each live session expires. Like ZooKeeper's ExpiryQueue
// it rounds every deadline up to the next multiple of the tick and groups
// sessions by that rounded time, so expiring is one bucket per tick however
// many sessions there are, and a touch within the same tick costs nothing.
//
// A deadline of last touch + timeout is rounded to the first bucket strictly
// after it, so a session whose client goes silent is due between timeout
// (exclusive) and timeout+tick (inclusive) after its last touch; a caller that
// calls Expired as soon as NextDeadline comes round therefore closes it within
// [timeout, timeout+tick].
//
// Tracker is not safe for concurrent use: the caller guards it with a lock.
type Tracker struct {
	tick time.Duration
	// base is the origin of bucket numbering: bucket i falls due at
	// base + i*tick. Times are kept relative to it with Time.Sub, which uses
	// the monotonic clock when the caller's times carry it, so a wall-clock
	// step cannot expire every session at once.
	base    time.Time
	hasBase bool

	sessions map[int64]*entry
	buckets  map[int64]*bucket
	// due orders buckets by index. Buckets that have emptied stay in it until
	// they reach the front, which keeps Touch free of heap fix-ups; their
	// number is bounded by the distinct ticks between now and the longest
	// timeout.
	due  []*bucket
	free []*bucket // emptied buckets kept for reuse, so steady-state touches do not allocate
}

type entry struct {
	id         int64
	timeout    time.Duration
	touched    time.Time // the last Add or Touch
	bucket     *bucket
	prev, next *entry
}

type bucket struct {
	index      int64
	head, tail *entry
}

// NewTracker returns an empty tracker whose buckets are tick wide; ZooKeeper
// uses its tickTime. It panics if tick is not positive.
func NewTracker(tick time.Duration) *Tracker {
	if tick <= 0 {
		panic(fmt.Sprintf("session: tick must be positive, got %v", tick))
	}
	return &Tracker{
		tick:     tick,
		sessions: make(map[int64]*entry),
		buckets:  make(map[int64]*bucket),
	}
}

// Add starts tracking session id with the given timeout, or replaces the
// timeout of a session already tracked (a client that reconnects negotiates
// afresh), and touches it at now.
func (t *Tracker) Add(id int64, timeout time.Duration, now time.Time) {
	if !t.hasBase {
		t.base, t.hasBase = now, true
	}
	e := t.sessions[id]
	if e == nil {
		e = &entry{id: id}
		t.sessions[id] = e
	}
	e.timeout = clampTimeout(timeout)
	t.place(e, now)
}

// Touch records activity on session id at now, pushing its deadline back to
// now + its timeout. It reports false if the session is not tracked, which
// includes a session already handed out by Expired.
func (t *Tracker) Touch(id int64, now time.Time) bool {
	e := t.sessions[id]
	if e == nil {
		return false
	}
	t.place(e, now)
	return true
}

// Remove stops tracking session id; it is a no-op for an unknown id.
func (t *Tracker) Remove(id int64) {
	e := t.sessions[id]
	if e == nil {
		return
	}
	delete(t.sessions, id)
	unlink(e)
}

// Timeout returns the timeout session id was added with.
func (t *Tracker) Timeout(id int64) (time.Duration, bool) {
	e := t.sessions[id]
	if e == nil {
		return 0, false
	}
	return e.timeout, true
}

// Touched returns when session id was last added or touched.
func (t *Tracker) Touched(id int64) (time.Time, bool) {
	e := t.sessions[id]
	if e == nil {
		return time.Time{}, false
	}
	return e.touched, true
}

// Len returns the number of sessions tracked.
func (t *Tracker) Len() int { return len(t.sessions) }

// Expired stops tracking, and returns, every session whose bucket falls due
// at or before now. The caller closes them. Sessions come out in bucket order,
// and within a bucket in the order they entered it.
func (t *Tracker) Expired(now time.Time) []int64 {
	if !t.hasBase {
		return nil
	}
	limit := floorDiv(now.Sub(t.base), t.tick)
	var out []int64
	for len(t.due) > 0 && t.due[0].index <= limit {
		b := t.popDue()
		for e := b.head; e != nil; e = e.next {
			out = append(out, e.id)
			delete(t.sessions, e.id)
			e.bucket = nil
		}
		t.recycle(b)
	}
	return out
}

// NextDeadline returns the time the earliest non-empty bucket falls due, so
// the caller can sleep until then; false means no session is tracked. It may
// discard emptied buckets along the way.
func (t *Tracker) NextDeadline() (time.Time, bool) {
	for len(t.due) > 0 {
		b := t.due[0]
		if b.head != nil {
			return t.bucketTime(b.index), true
		}
		t.recycle(t.popDue())
	}
	return time.Time{}, false
}

// ResetAll touches every session at now, giving each a full timeout from now.
// A server that was unable to hear from clients for a while (a leader change,
// a long pause) uses it so that sessions are not blamed for its own silence.
func (t *Tracker) ResetAll(now time.Time) {
	for _, e := range t.sessions {
		t.place(e, now)
	}
}

// Shift pushes every deadline back by d. A server whose expiry loop was
// held up for d (a stop signal, a long pause) gives the time back, since
// the touches of that period were held up too and may still be unread.
func (t *Tracker) Shift(d time.Duration) {
	if d > 0 && t.hasBase {
		t.base = t.base.Add(d)
	}
}

// place moves e to the bucket its deadline rounds up to when touched at now.
func (t *Tracker) place(e *entry, now time.Time) {
	e.touched = now
	idx := t.bucketIndex(now, e.timeout)
	if e.bucket != nil && e.bucket.index == idx {
		return
	}
	unlink(e)
	b := t.buckets[idx]
	if b == nil {
		b = t.newBucket(idx)
	}
	e.bucket = b
	e.prev, e.next = b.tail, nil
	if b.tail != nil {
		b.tail.next = e
	} else {
		b.head = e
	}
	b.tail = e
}

// bucketIndex rounds now+timeout up to the next tick boundary strictly after
// it, as ExpiryQueue.roundToNextInterval does: (deadline/tick + 1) * tick.
func (t *Tracker) bucketIndex(now time.Time, timeout time.Duration) int64 {
	rel := now.Sub(t.base)
	// Sub saturates for times centuries apart; stop the sum from wrapping.
	if rel > math.MaxInt64-timeout {
		rel = math.MaxInt64 - timeout
	}
	return floorDiv(rel+timeout, t.tick) + 1
}

func (t *Tracker) bucketTime(index int64) time.Time {
	return t.base.Add(time.Duration(index) * t.tick)
}

func unlink(e *entry) {
	b := e.bucket
	if b == nil {
		return
	}
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		b.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		b.tail = e.prev
	}
	e.bucket, e.prev, e.next = nil, nil, nil
}

func (t *Tracker) newBucket(idx int64) *bucket {
	var b *bucket
	if n := len(t.free); n > 0 {
		b = t.free[n-1]
		t.free[n-1] = nil
		t.free = t.free[:n-1]
	} else {
		b = new(bucket)
	}
	b.index = idx
	t.buckets[idx] = b
	t.pushDue(b)
	return b
}

// recycle forgets a bucket already popped from due.
func (t *Tracker) recycle(b *bucket) {
	delete(t.buckets, b.index)
	*b = bucket{}
	t.free = append(t.free, b)
}

// pushDue and popDue keep due a binary min-heap on index. It is written out
// rather than using container/heap to keep the hot path free of interface
// calls.
func (t *Tracker) pushDue(b *bucket) {
	t.due = append(t.due, b)
	i := len(t.due) - 1
	for i > 0 {
		p := (i - 1) / 2
		if t.due[p].index <= t.due[i].index {
			break
		}
		t.due[p], t.due[i] = t.due[i], t.due[p]
		i = p
	}
}

func (t *Tracker) popDue() *bucket {
	h := t.due
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = nil
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].index < h[m].index {
			m = l
		}
		if r < len(h) && h[r].index < h[m].index {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	t.due = h
	return top
}

func clampTimeout(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	if d > maxTimeout {
		return maxTimeout
	}
	return d
}

// floorDiv divides rounding toward negative infinity, so times before base
// still land in the right bucket.
func floorDiv(a, b time.Duration) int64 {
	q := int64(a / b)
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Bucket is one expiry bucket as the dump command shows it: the time its
// sessions expire unless touched, and their ids.
type Bucket struct {
	Expires  time.Time
	Sessions []int64
}

// Buckets lists the non-empty buckets, soonest first.
func (t *Tracker) Buckets() []Bucket {
	out := make([]Bucket, 0, len(t.buckets))
	for idx, b := range t.buckets {
		var ids []int64
		for e := b.head; e != nil; e = e.next {
			ids = append(ids, e.id)
		}
		if len(ids) > 0 {
			out = append(out, Bucket{Expires: t.bucketTime(idx), Sessions: ids})
		}
	}
	slices.SortFunc(out, func(a, b Bucket) int { return a.Expires.Compare(b.Expires) })
	return out
}
