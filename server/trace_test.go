package server

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/trace"
)

// TestTraceHistoryOfALock: the server keeps the trace's window by default,
// and it says enough to replay a lock's handover: the contenders' nodes
// with their owners and data, the watch the waiter set, the close with
// its reason, member, timeout and the ephemeral it deleted (kept under a
// path filter on that ephemeral), and the watches the closed session's
// connection dropped, which the list of ended sessions keeps.
func TestTraceHistoryOfALock(t *testing.T) {
	s := startServer(t, Config{})
	h := s.Trace().History()
	if h == nil {
		t.Fatal("no history by default")
	}
	admin, _ := dial(t, s.Addr().String(), 10*time.Second)
	if _, err := admin.Create("/lock", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	holder, _ := dial(t, s.Addr().String(), 10*time.Second)
	waiter, _ := dial(t, s.Addr().String(), 10*time.Second)
	first, err := holder.Create("/lock/n-", []byte("worker-1"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	second, err := waiter.Create("/lock/n-", []byte("worker-2"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := waiter.ExistsW(first); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := holder.GetW("/lock"); err != nil { // a watch the close drops
		t.Fatal(err)
	}
	holderID := holder.SessionID()
	holder.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if ended := h.Ended(); len(ended) == 1 && len(ended[0].Dropped) == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no ended session with its dropped watch: %+v", h.Ended())
		case <-time.After(10 * time.Millisecond):
		}
	}
	events, _ := h.Since(0, &trace.Filter{PathPrefix: "/lock/"}, 0)
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Kind.String()+" "+e.Op+e.Type+e.Watch)
	}
	want := []string{"txn create", "txn create", "setwatch data", "txn closeSession", "watch NodeDeleted", "close "}
	if !slices.Equal(kinds, want) {
		t.Fatalf("under /lock/: %q, want %q\n%v", kinds, want, events)
	}
	created := events[0].Changes
	if len(created) != 1 || created[0].Path != first || created[0].Owner != holderID || string(created[0].Data) != "worker-1" {
		t.Errorf("the holder's create: %+v", created)
	}
	if w := events[2]; w.Session != waiter.SessionID() || w.Path != first {
		t.Errorf("the waiter's watch: %v", w)
	}
	cs := events[3]
	if cs.Session != holderID || cs.Reason != trace.ReasonClosed || cs.Timeout <= 0 || cs.Member != 1 ||
		len(cs.Changes) != 1 || cs.Changes[0].Type != "NodeDeleted" || cs.Changes[0].Path != first || string(cs.Changes[0].Data) != "worker-1" {
		t.Errorf("the close: %+v", cs)
	}
	if e := events[4]; e.Session != waiter.SessionID() || e.Path != first {
		t.Errorf("the watch event: %v", e)
	}
	ended := h.Ended()[0]
	if ended.Closed.Session != holderID || ended.Closed.Reason != trace.ReasonClosed || len(ended.Closed.Changes) != 1 ||
		!slices.Equal(ended.Dropped, []trace.Op{{Op: "data", Path: "/lock"}}) {
		t.Errorf("ended: %+v", ended)
	}
	if st := h.Stats(); st.Events == 0 || st.Bytes <= 0 || st.Bytes > st.Limits.Bytes {
		t.Errorf("stats %+v", st)
	}

	// The waiter expires: its close says so, and lists its node.
	if err := s.ExpireSession(waiter.SessionID()); err != nil {
		t.Fatal(err)
	}
	for len(h.Ended()) < 2 {
		select {
		case <-ctx.Done():
			t.Fatalf("the expiry is not listed: %+v", h.Ended())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if e := h.Ended()[1].Closed; e.Session != waiter.SessionID() || e.Reason != trace.ReasonExpired || !e.Expired ||
		len(e.Changes) != 1 || e.Changes[0].Path != second {
		t.Errorf("the expiry: %+v", e)
	}
}

// TestTraceHistoryOff: a server asked to keep no history keeps none, and
// publishes nothing while nobody listens.
func TestTraceHistoryOff(t *testing.T) {
	s := startServer(t, Config{TraceHistory: trace.HistoryLimits{Events: -1}})
	if s.Trace().History() != nil || s.Trace().Active() {
		t.Fatal("history kept, or trace active, with none asked for")
	}
}
