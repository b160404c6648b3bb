package trace

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHistoryBounds: the window keeps the newest events within its count
// and byte limits, counts what it evicted and what it holds, and reads
// back by Seq, filter and limit.
func TestHistoryBounds(t *testing.T) {
	var b Broker
	h := b.KeepHistory(HistoryLimits{Events: 10, Bytes: 1 << 20})
	if b.KeepHistory(HistoryLimits{Events: 99}) != h || b.History() != h || !b.Active() {
		t.Fatal("a broker keeps one history, and is active with it")
	}
	for i := range 100 {
		b.Publish(Event{Kind: TxnApplied, Zxid: int64(i + 1), Path: "/n"})
	}
	st := h.Stats()
	if st.Events != 10 || st.Evicted != 90 || st.FirstSeq != 91 || st.LastSeq != 100 || st.Bytes != 10*eventBytes(&Event{Path: "/n"}) {
		t.Fatalf("stats %+v", st)
	}
	got, _ := h.Since(95, nil, 0)
	if len(got) != 5 || got[0].Seq != 96 || got[4].Seq != 100 {
		t.Fatalf("since 95: %v", got)
	}
	if got, last := h.Since(0, nil, 3); last != 100 || len(got) != 3 || got[0].Seq != 98 {
		t.Fatalf("the newest 3: %v", got)
	}
	// Read back in pieces: a filter and a limit over more events than one
	// piece holds.
	var many Broker
	hb0 := many.KeepHistory(HistoryLimits{Events: 5000})
	for i := range 4000 {
		many.Publish(Event{Kind: TxnApplied, Zxid: int64(i + 1)})
	}
	odd := &Filter{}
	odd.Kinds = []Kind{TxnApplied}
	keepOdd := func(e *Event) bool { return e.Zxid%2 == 1 }
	all, _ := hb0.Scan(0, keepOdd)
	newest, last := hb0.Since(0, odd, 700)
	if len(all) != 2000 || all[0].Zxid != 1 || all[1999].Zxid != 3999 || len(newest) != 700 || newest[0].Zxid != 3301 || newest[699].Zxid != 4000 || last != 4000 {
		t.Fatalf("pieces: scan %d from %d, since %d from %d to %d, last %d", len(all), all[0].Zxid, len(newest), newest[0].Zxid, newest[len(newest)-1].Zxid, last)
	}
	if got := h.SeqAt(func(e *Event) bool { return e.Zxid >= 93 }); got != 92 {
		t.Fatalf("seq before zxid 93: %d", got)
	}

	// Bytes: large events push out the old ones; the window never holds
	// more than its budget (but always the newest event).
	var bb Broker
	hb := bb.KeepHistory(HistoryLimits{Events: 1000, Bytes: 10_000})
	big := strings.Repeat("x", 3000)
	for i := range 20 {
		bb.Publish(Event{Kind: TxnApplied, Zxid: int64(i + 1), Path: "/" + big})
		if st := hb.Stats(); st.Bytes > 10_000 || st.LastSeq != uint64(i+1) {
			t.Fatalf("after %d: %+v", i+1, st)
		}
	}
	if st := hb.Stats(); st.Events != 3 || st.Evicted != 17 {
		t.Fatalf("3 events of 3 KB fit in 10 KB: %+v", st)
	}
}

// TestHistoryFiltersDeletedEphemerals: a session's close concerns the
// ephemerals it deleted, so a path filter on one of them keeps it.
func TestHistoryFiltersDeletedEphemerals(t *testing.T) {
	var b Broker
	h := b.KeepHistory(HistoryLimits{})
	b.Publish(Event{Kind: TxnApplied, Op: "create", Path: "/locks/l-0000000001", Session: 7})
	closed := Event{Kind: TxnApplied, Op: "closeSession", Session: 7, Reason: ReasonExpired,
		Changes: []Change{Changed("NodeDeleted", "/locks/l-0000000001", 7, []byte("worker-1"))}}
	b.Publish(closed)
	b.Publish(Event{Kind: TxnApplied, Op: "create", Path: "/other"})
	got, _ := h.Since(0, &Filter{PathPrefix: "/locks/"}, 0)
	if len(got) != 2 || got[1].Op != "closeSession" || string(got[1].Changes[0].Data) != "worker-1" {
		t.Fatalf("under /locks/: %v", got)
	}
}

// TestHistoryEnded: closed sessions are listed with what they deleted and
// the watches their connection dropped, within the list's count and age.
func TestHistoryEnded(t *testing.T) {
	var b Broker
	h := b.KeepHistory(HistoryLimits{Ended: 3, EndedFor: time.Minute})
	t0 := time.Unix(1_800_000_000, 0)
	for i := range 5 {
		b.Publish(Event{Kind: SessionClosed, Session: int64(i + 1), Time: t0.Add(time.Duration(i) * time.Second), Reason: ReasonClosed})
	}
	b.Publish(Event{Kind: WatchRemoved, Session: 5, Reason: ReasonConnClosed, Ops: []Op{{"exist", "/locks/l-1"}}})
	ended := h.Ended()
	if len(ended) != 3 || ended[0].Closed.Session != 3 || ended[2].Closed.Session != 5 || len(ended[2].Dropped) != 1 {
		t.Fatalf("ended %+v", ended)
	}
	// Two minutes later, the old ones have aged out.
	b.Publish(Event{Kind: SessionClosed, Session: 6, Time: t0.Add(2 * time.Minute), Reason: ReasonExpired})
	if ended := h.Ended(); len(ended) != 1 || ended[0].Closed.Session != 6 {
		t.Fatalf("after two minutes: %+v", ended)
	}
}

// TestSubscribeSince: a stream opened on the history while events are
// published gets every event exactly once, in order: the past copied and
// the future subscribed at one instant (run with -race).
func TestSubscribeSince(t *testing.T) {
	var b Broker
	b.KeepHistory(HistoryLimits{Events: 100_000})
	const total = 20_000
	var wg sync.WaitGroup
	started := make(chan struct{})
	wg.Go(func() {
		for i := range total {
			if i == total/4 {
				close(started)
			}
			b.Publish(Event{Kind: TxnApplied, Zxid: int64(i + 1)})
		}
	})
	<-started
	sub, past := b.SubscribeSince(Filter{}, total, 0)
	wg.Wait()
	sub.Close()
	next := uint64(1)
	for _, e := range past {
		if e.Seq != next {
			t.Fatalf("history: seq %d, want %d", e.Seq, next)
		}
		next++
	}
	for e := range sub.Events() {
		if e.Seq != next {
			t.Fatalf("stream: seq %d, want %d (history ended at %d)", e.Seq, next, len(past))
		}
		next++
	}
	if next != total+1 || len(past) < total/4 {
		t.Fatalf("got %d events, %d from the history", next-1, len(past))
	}
}

// BenchmarkPublishWithHistory is the cost a server pays on its apply path
// for the window.
func BenchmarkPublishWithHistory(b *testing.B) {
	var br Broker
	br.KeepHistory(HistoryLimits{})
	e := Event{Kind: TxnApplied, Op: "setData", Path: "/bench/node-0000000001", Changes: []Change{Changed("NodeDataChanged", "/bench/node-0000000001", 0, []byte("value"))}}
	for b.Loop() {
		br.Publish(e)
	}
}
