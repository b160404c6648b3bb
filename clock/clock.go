package clock

import (
	"sync/atomic"
	"time"
)

// Clock tells the time and makes timers that fire by it.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that sends the time on its channel once d
	// has passed by this clock.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer, as time.Timer.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was
	// still pending.
	Stop() bool
	// Reset makes the timer fire d from now; it reports whether it was
	// still pending.
	Reset(d time.Duration) bool
}

// System is the machine's clock.
var System Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time        { return t.t.C }
func (t systemTimer) Stop() bool                 { return t.t.Stop() }
func (t systemTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

// Offset is a clock that runs Offset ahead of (or, negative, behind)
// another. The offset may be changed while the clock is in use; timers
// measure durations, so they are not affected.
type Offset struct {
	base   Clock
	offset atomic.Int64 // nanoseconds
}

// NewOffset returns base shifted by d.
func NewOffset(base Clock, d time.Duration) *Offset {
	o := &Offset{base: base}
	o.offset.Store(int64(d))
	return o
}

// Set changes the offset.
func (o *Offset) Set(d time.Duration) { o.offset.Store(int64(d)) }

// Now is the base clock's time plus the offset.
func (o *Offset) Now() time.Time { return o.base.Now().Add(time.Duration(o.offset.Load())) }

// NewTimer is the base clock's timer.
func (o *Offset) NewTimer(d time.Duration) Timer { return o.base.NewTimer(d) }
