package clock

import (
	"slices"
	"sync"
	"time"
)

// Fake is a clock that only moves when told to. Advance fires, in
// deadline order, every timer that falls due, so loops waiting on it run
// as if that much time had passed.
type Fake struct {
	mu      sync.Mutex // guards now, timers and waiters
	now     time.Time
	timers  []*fakeTimer // pending, unordered
	waiters []waiter
}

type waiter struct {
	n  int
	ch chan struct{}
}

// NewFake returns a fake clock showing start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer returns a timer that fires once the clock has been advanced
// by d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{f: f, c: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// Advance moves the clock forward by d and fires every timer due by
// then, earliest first; each fires with its own deadline as the time.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	end := f.now.Add(d)
	for {
		i := f.earliest()
		if i < 0 || f.timers[i].at.After(end) {
			break
		}
		t := f.timers[i]
		f.timers = slices.Delete(f.timers, i, i+1)
		f.now = t.at
		select {
		case t.c <- t.at:
		default: // as time.Timer: an unread value is not doubled
		}
	}
	f.now = end
	f.mu.Unlock()
}

// Jump moves the clock forward by d at once, as a process stopped for d
// (by a signal, a pause, a starved machine) sees it when it runs again:
// every timer due by then fires together, late, after the clock has
// moved. Like Go's timers, each still sends its deadline, not the time it
// fired; only the clock shows how late it is.
func (f *Fake) Jump(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	kept := f.timers[:0]
	for _, t := range f.timers {
		if t.at.After(f.now) {
			kept = append(kept, t)
			continue
		}
		select {
		case t.c <- t.at:
		default:
		}
	}
	clear(f.timers[len(kept):])
	f.timers = kept
}

// Pending returns how many timers are waiting to fire.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// WaitPending blocks until at least n timers are waiting, or until
// timeout of real time; it reports whether they were. Tests use it to know
// that a loop has gone back to sleep before they advance the clock.
func (f *Fake) WaitPending(n int, timeout time.Duration) bool {
	f.mu.Lock()
	if len(f.timers) >= n {
		f.mu.Unlock()
		return true
	}
	w := waiter{n: n, ch: make(chan struct{})}
	f.waiters = append(f.waiters, w)
	f.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.ch:
		return true
	case <-t.C:
		return false
	}
}

func (f *Fake) earliest() int {
	best := -1
	for i, t := range f.timers {
		if best < 0 || t.at.Before(f.timers[best].at) {
			best = i
		}
	}
	return best
}

// schedule adds t; the caller holds f.mu.
func (f *Fake) schedule(t *fakeTimer) {
	f.timers = append(f.timers, t)
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if len(f.timers) >= w.n {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	f.waiters = kept
}

// unschedule removes t and reports whether it was pending; the caller
// holds f.mu.
func (f *Fake) unschedule(t *fakeTimer) bool {
	i := slices.Index(f.timers, t)
	if i < 0 {
		return false
	}
	f.timers = slices.Delete(f.timers, i, i+1)
	return true
}

type fakeTimer struct {
	f  *Fake
	at time.Time
	c  chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return t.f.unschedule(t)
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.f.unschedule(t)
	t.at = t.f.now.Add(d)
	t.f.schedule(t)
	return was
}
