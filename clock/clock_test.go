package clock

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestFakeFiresInDeadlineOrder(t *testing.T) {
	f := NewFake(t0)
	a, b, c := f.NewTimer(3*time.Second), f.NewTimer(time.Second), f.NewTimer(10*time.Second)
	tests := []struct {
		advance time.Duration
		fired   []Timer
		now     time.Time
	}{
		{500 * time.Millisecond, nil, t0.Add(500 * time.Millisecond)},
		{time.Second, []Timer{b}, t0.Add(1500 * time.Millisecond)},
		{2 * time.Second, []Timer{a}, t0.Add(3500 * time.Millisecond)},
		{time.Hour, []Timer{c}, t0.Add(time.Hour + 3500*time.Millisecond)},
	}
	for i, tc := range tests {
		f.Advance(tc.advance)
		for _, tm := range []Timer{a, b, c} {
			want := false
			for _, x := range tc.fired {
				want = want || x == tm
			}
			select {
			case at := <-tm.C():
				if !want {
					t.Fatalf("step %d: unexpected fire at %v", i, at)
				}
			default:
				if want {
					t.Fatalf("step %d: timer did not fire", i)
				}
			}
		}
		if !f.Now().Equal(tc.now) {
			t.Fatalf("step %d: now %v, want %v", i, f.Now(), tc.now)
		}
	}
	if f.Pending() != 0 {
		t.Fatalf("%d timers still pending", f.Pending())
	}
}

func TestFakeStopAndReset(t *testing.T) {
	f := NewFake(t0)
	tm := f.NewTimer(time.Second)
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	if tm.Stop() {
		t.Fatal("second Stop reported true")
	}
	f.Advance(2 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("stopped timer fired")
	default:
	}
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a stopped timer reported it pending")
	}
	f.Advance(999 * time.Millisecond)
	select {
	case <-tm.C():
		t.Fatal("fired early")
	default:
	}
	f.Advance(time.Millisecond)
	if at := <-tm.C(); !at.Equal(t0.Add(3 * time.Second)) {
		t.Fatalf("fired at %v", at)
	}
}

func TestFakeWaitPending(t *testing.T) {
	f := NewFake(t0)
	done := make(chan bool)
	go func() { done <- f.WaitPending(2, 10*time.Second) }()
	f.NewTimer(time.Second)
	f.NewTimer(time.Second)
	if !<-done {
		t.Fatal("WaitPending gave up with two timers pending")
	}
	if f.WaitPending(3, 10*time.Millisecond) {
		t.Fatal("WaitPending(3) true with two timers")
	}
}

func TestOffset(t *testing.T) {
	f := NewFake(t0)
	o := NewOffset(f, time.Hour)
	if got := o.Now(); !got.Equal(t0.Add(time.Hour)) {
		t.Fatalf("Now = %v", got)
	}
	o.Set(-time.Minute)
	if got := o.Now(); !got.Equal(t0.Add(-time.Minute)) {
		t.Fatalf("Now after Set = %v", got)
	}
	tm := o.NewTimer(time.Second)
	f.Advance(time.Second)
	select {
	case <-tm.C():
	default:
		t.Fatal("timer of the offset clock did not fire with its base")
	}
}

func TestFakeJumpFiresLate(t *testing.T) {
	f := NewFake(t0)
	due, later := f.NewTimer(time.Second), f.NewTimer(time.Hour)
	f.Jump(5 * time.Second)
	select {
	case at := <-due.C():
		if !at.Equal(t0.Add(time.Second)) || !f.Now().Equal(t0.Add(5*time.Second)) {
			t.Fatalf("fired with %v at %v, want its deadline, the clock after the jump", at, f.Now())
		}
	default:
		t.Fatal("due timer did not fire")
	}
	select {
	case <-later.C():
		t.Fatal("timer not yet due fired")
	default:
	}
	if f.Pending() != 1 {
		t.Fatalf("%d pending, want 1", f.Pending())
	}
}
