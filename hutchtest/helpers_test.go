package hutchtest

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var open = zk.WorldACL(zk.PermAll)

// waitState reads events until one reports state, failing after 30s.
func waitState(tb testing.TB, events <-chan zk.Event, state zk.State) {
	tb.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	var seen []zk.State
	for {
		select {
		case ev := <-events:
			if ev.Type == zk.EventSession && ev.State == state {
				return
			}
			seen = append(seen, ev.State)
		case <-deadline.C:
			tb.Fatalf("no %v event after 30s (saw %v)", state, seen)
		}
	}
}

// waitWatch waits for a watch event of type typ, failing after 30s.
func waitWatch(tb testing.TB, ch <-chan zk.Event, typ zk.EventType) zk.Event {
	tb.Helper()
	select {
	case ev := <-ch:
		if ev.Type != typ {
			tb.Fatalf("watch fired %v on %s (%v), want %v", ev.Type, ev.Path, ev.Err, typ)
		}
		return ev
	case <-time.After(30 * time.Second):
		tb.Fatalf("watch did not fire %v within 30s", typ)
	}
	return zk.Event{}
}

// must fails the test on err.
func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// waitUntil polls cond until it holds, failing after 30s.
func waitUntil(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fatalTB is a testing.TB whose Fatal records the message and ends the
// goroutine, as the real one does, without failing the real test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

// runFatal runs f with a fatalTB wrapping tb and returns the message it
// failed with ("" if it did not), failing tb if f has not ended in 60s.
func runFatal(tb testing.TB, f func(*fatalTB)) string {
	tb.Helper()
	ft := &fatalTB{TB: tb}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(ft)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		tb.Fatal("still running after 60s")
	}
	return ft.msg
}
