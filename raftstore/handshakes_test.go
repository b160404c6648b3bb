package raftstore

import (
	"fmt"
	"net"
	"testing"
	"time"
)

// fakeConn is a connection known only by its name and source address.
type fakeConn struct {
	net.Conn
	name string
	ip   string
}

func (c *fakeConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.ParseIP(c.ip), Port: 1}
}

func TestHandshakeSlots(t *testing.T) {
	t0 := time.Unix(1000, 0)
	old := t0.Add(-time.Second) // past minEvictAge
	type step struct {
		name    string
		ip      string
		at      time.Time
		busy    bool   // every waiting connection has bytes waiting
		evicted string // name of the connection that gives way, "" none
		refused bool
	}
	tests := []struct {
		name                     string
		maxWaiting, perIP, hard  int
		steps                    []step
		wantWaiting, wantKnocked int
	}{
		{name: "under the bounds nobody gives way", maxWaiting: 4, perIP: 2, hard: 16,
			steps:       []step{{name: "a1", ip: "10.0.0.1", at: old}, {name: "b1", ip: "10.0.0.2", at: old}},
			wantWaiting: 2},
		{name: "an address at its share loses its oldest", maxWaiting: 8, perIP: 2, hard: 16,
			steps: []step{{name: "a1", ip: "10.0.0.1", at: old}, {name: "a2", ip: "10.0.0.1", at: old},
				{name: "b1", ip: "10.0.0.2", at: old}, {name: "a3", ip: "10.0.0.1", at: t0, evicted: "a1"}},
			wantWaiting: 3},
		{name: "when all slots are taken the address holding most gives way", maxWaiting: 3, perIP: 8, hard: 16,
			steps: []step{{name: "a1", ip: "10.0.0.1", at: old}, {name: "a2", ip: "10.0.0.1", at: old},
				{name: "b1", ip: "10.0.0.2", at: old}, {name: "m1", ip: "10.0.0.9", at: t0, evicted: "a1"}},
			wantWaiting: 3},
		{name: "a connection younger than minEvictAge is not pushed out", maxWaiting: 8, perIP: 1, hard: 16,
			steps:       []step{{name: "a1", ip: "10.0.0.1", at: t0}, {name: "a2", ip: "10.0.0.1", at: t0.Add(time.Millisecond)}},
			wantWaiting: 2},
		{name: "a busy connection is passed over", maxWaiting: 8, perIP: 1, hard: 16,
			steps:       []step{{name: "a1", ip: "10.0.0.1", at: old}, {name: "a2", ip: "10.0.0.1", at: t0, busy: true}},
			wantWaiting: 2},
		{name: "past the hard cap with nobody to push out, the newcomer is refused", maxWaiting: 2, perIP: 1, hard: 2,
			steps: []step{{name: "a1", ip: "10.0.0.1", at: t0}, {name: "a2", ip: "10.0.0.1", at: t0},
				{name: "a3", ip: "10.0.0.1", at: t0, refused: true}},
			wantWaiting: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHandshakeSlots(tc.maxWaiting, tc.perIP, 2)
			h.hardCap = tc.hard
			for _, st := range tc.steps {
				c := &fakeConn{name: st.name, ip: st.ip}
				busy := func(net.Conn) bool { return st.busy }
				evicted, refused := h.admit(c, st.ip, st.at, busy)
				got := ""
				if evicted != nil {
					got = evicted.(*fakeConn).name
				}
				if got != st.evicted || refused != st.refused {
					t.Fatalf("admit %s: evicted %q refused %v, want %q %v", st.name, got, refused, st.evicted, st.refused)
				}
			}
			if w, k := h.counts(); w != tc.wantWaiting || k != tc.wantKnocked {
				t.Fatalf("counts %d waiting %d knocked, want %d %d", w, k, tc.wantWaiting, tc.wantKnocked)
			}
		})
	}
}

func TestHandshakeSlotsKnock(t *testing.T) {
	h := newHandshakeSlots(8, 8, 2)
	now := time.Unix(1000, 0)
	var cs []*fakeConn
	for i := range 4 {
		c := &fakeConn{name: fmt.Sprint(i), ip: "10.0.0.1"}
		cs = append(cs, c)
		if ev, refused := h.admit(c, c.ip, now, func(net.Conn) bool { return false }); ev != nil || refused {
			t.Fatalf("admit %d: %v %v", i, ev, refused)
		}
	}
	if ev, ok := h.knock(cs[0]); ev != nil || !ok {
		t.Fatalf("knock 0: %v %v", ev, ok)
	}
	if ev, ok := h.knock(cs[0]); ev != nil || !ok {
		t.Fatalf("a second knock of a knocked connection: %v %v", ev, ok)
	}
	if ev, ok := h.knock(cs[1]); ev != nil || !ok {
		t.Fatalf("knock 1: %v %v", ev, ok)
	}
	// The knocked are bounded too, oldest first.
	if ev, ok := h.knock(cs[2]); !ok || ev != cs[0] {
		t.Fatalf("knock 2 past maxKnocked: evicted %v, want connection 0", ev)
	}
	h.forget(cs[3])
	if _, ok := h.knock(cs[3]); ok {
		t.Fatal("a connection that gave way knocked")
	}
	if w, k := h.counts(); w != 0 || k != 2 {
		t.Fatalf("counts %d waiting %d knocked, want 0 2", w, k)
	}
	if n := len(h.all()); n != 2 {
		t.Fatalf("all lists %d, want 2", n)
	}
}
