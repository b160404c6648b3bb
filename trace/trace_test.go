package trace

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"
)

// TestFilters: each filter keeps what it says and nothing else.
func TestFilters(t *testing.T) {
	create := Event{Kind: TxnApplied, Op: "create", Path: "/app/x", Session: 7}
	multi := Event{Kind: TxnApplied, Op: "multi", Session: 8, Ops: []Op{{"create", "/other"}, {"delete", "/app/y"}}}
	watch := Event{Kind: WatchDelivered, Type: "NodeCreated", Path: "/apple", Session: 9}
	closed := Event{Kind: SessionClosed, Session: 7, Expired: true}
	all := []Event{create, multi, watch, closed}
	tests := []struct {
		name string
		f    Filter
		keep []bool
	}{
		{"zero keeps all", Filter{}, []bool{true, true, true, true}},
		{"kind", Filter{Kinds: []Kind{WatchDelivered, SessionClosed}}, []bool{false, false, true, true}},
		{"subtree prefix", Filter{PathPrefix: "/app/"}, []bool{true, true, false, false}},
		{"plain prefix", Filter{PathPrefix: "/app"}, []bool{true, true, true, false}},
		{"session", Filter{Session: 7}, []bool{true, false, false, true}},
		{"session and path", Filter{Session: 8, PathPrefix: "/app/"}, []bool{false, true, false, false}},
	}
	for _, tc := range tests {
		for i, e := range all {
			if got := tc.f.Match(&e); got != tc.keep[i] {
				t.Errorf("%s: Match(%v) = %v", tc.name, e, got)
			}
		}
	}
}

// TestSlowSubscriberDropsAndCounts: a subscriber that does not read
// loses what overflows its buffer and counts it; Publish never waits, and
// other subscribers get everything.
func TestSlowSubscriberDropsAndCounts(t *testing.T) {
	var b Broker
	slow := b.Subscribe(Filter{}, 4)
	fast := b.Subscribe(Filter{}, 100)
	for i := range 10 {
		b.Publish(Event{Kind: TxnApplied, Zxid: int64(i + 1)})
	}
	if slow.Dropped() != 6 || fast.Dropped() != 0 {
		t.Fatalf("dropped %d and %d, want 6 and 0", slow.Dropped(), fast.Dropped())
	}
	for i := range 4 {
		if e := <-slow.Events(); e.Zxid != int64(i+1) || e.Seq != uint64(i+1) {
			t.Fatalf("slow subscriber got %v at %d", e, i)
		}
	}
	slow.Close()
	slow.Close()
	if _, ok := <-slow.Events(); ok {
		t.Fatal("closed subscription still delivers")
	}
	b.Publish(Event{Kind: TxnApplied})
	if len(fast.Events()) != 11 {
		t.Fatalf("fast subscriber holds %d", len(fast.Events()))
	}
}

// TestCloseWhilePublishing: subscriptions come and go while events are
// published from another goroutine (run with -race): nothing is sent on a
// closed channel.
func TestCloseWhilePublishing(t *testing.T) {
	var b Broker
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				b.Publish(Event{Kind: TxnApplied})
			}
		}
	})
	for range 200 {
		s := b.Subscribe(Filter{}, 1)
		r := b.Record(Filter{}, 10)
		s.Close()
		r.Close()
	}
	close(stop)
	wg.Wait()
	if b.Active() {
		t.Fatal("still active with every subscriber gone")
	}
}

// TestRecorderWait: Wait finds a past event, waits for a future one, and
// gives up with the context or once the recorder is full.
func TestRecorderWait(t *testing.T) {
	var b Broker
	r := b.Record(Filter{Kinds: []Kind{TxnApplied}}, 3)
	b.Publish(Event{Kind: TxnApplied, Path: "/a"})
	b.Publish(Event{Kind: WatchDelivered, Path: "/a"})
	isB := func(e Event) bool { return e.Path == "/b" }
	if e, err := r.Wait(context.Background(), 0, func(e Event) bool { return e.Path == "/a" }); err != nil || e.Kind != TxnApplied {
		t.Fatalf("past event: %v %v", e, err)
	}
	got := make(chan Event, 1)
	mark := r.Len()
	go func() {
		e, _ := r.Wait(context.Background(), mark, isB)
		got <- e
	}()
	b.Publish(Event{Kind: TxnApplied, Path: "/b"})
	if e := <-got; e.Path != "/b" {
		t.Fatalf("future event: %v", e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := r.Wait(ctx, 0, func(Event) bool { return false }); err != context.DeadlineExceeded {
		t.Fatalf("wait for nothing: %v", err)
	}
	b.Publish(Event{Kind: TxnApplied})
	b.Publish(Event{Kind: TxnApplied}) // over the limit
	if r.Dropped() != 1 || r.Len() != 3 {
		t.Fatalf("len %d dropped %d", r.Len(), r.Dropped())
	}
	if _, err := r.Wait(context.Background(), 0, func(Event) bool { return false }); err != ErrClosed {
		t.Fatalf("wait on a full recorder: %v", err)
	}
	r.Close()
}

// TestEventJSON: events encode with kinds by name, for JSON-lines
// streams, and decode back.
func TestEventJSON(t *testing.T) {
	in := Event{Seq: 3, Kind: WatchDelivered, Zxid: 5, Session: 9, Path: "/x", Type: "NodeDeleted", Time: time.UnixMilli(1700000000000).UTC()}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"seq":3,"kind":"watch","time":"2023-11-14T22:13:20Z","zxid":5,"session":9,"path":"/x","type":"NodeDeleted"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var out Event
	if err := json.Unmarshal(b, &out); err != nil || out.Kind != WatchDelivered || !out.Time.Equal(in.Time) {
		t.Fatalf("decoded %+v, %v", out, err)
	}
}

// BenchmarkPublishNoSubscriber is the cost a server pays on its apply
// path when nobody listens: one atomic load.
func BenchmarkPublishNoSubscriber(b *testing.B) {
	var br Broker
	e := Event{Kind: TxnApplied, Path: "/bench"}
	for b.Loop() {
		if br.Active() {
			br.Publish(e)
		}
	}
}

// BenchmarkPublishOneSubscriber is the cost with one reader keeping up.
func BenchmarkPublishOneSubscriber(b *testing.B) {
	var br Broker
	s := br.Subscribe(Filter{}, 1024)
	done := make(chan struct{})
	go func() {
		for range s.Events() {
		}
		close(done)
	}()
	e := Event{Kind: TxnApplied, Path: "/bench"}
	for b.Loop() {
		br.Publish(e)
	}
	s.Close()
	<-done
}
