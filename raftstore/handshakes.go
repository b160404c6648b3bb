package raftstore

import (
	"container/list"
	"net"
	"time"

	"github.com/hutchzk/hutch/internal/netaddr"
)

// handshakeSlots tracks the peer connections accepted but not yet
// authenticated, in two stages: waiting for the dialer's knock (anyone can
// hold one of these, so they are bounded per source address and overall,
// and the oldest gives way to a newcomer), and knocked (only a member, or
// someone replaying a member's knock, gets here; bounded, oldest first).
// It does no locking: the mux's pendingMu guards it.
type handshakeSlots struct {
	maxWaiting, maxWaitingPerIP, maxKnocked int
	hardCap                                 int // waiting connections past which newcomers are refused

	waiting map[net.Conn]*list.Element
	byIP    map[string]*list.List // waiters of each source address, oldest first
	knocked map[net.Conn]*list.Element
	order   *list.List // knocked connections, oldest first
}

func newHandshakeSlots(maxWaiting, maxWaitingPerIP, maxKnocked int) *handshakeSlots {
	return &handshakeSlots{
		maxWaiting: maxWaiting, maxWaitingPerIP: maxWaitingPerIP, maxKnocked: maxKnocked, hardCap: 4 * maxWaiting,
		waiting: make(map[net.Conn]*list.Element),
		byIP:    make(map[string]*list.List),
		knocked: make(map[net.Conn]*list.Element),
		order:   list.New(),
	}
}

// admit adds a newly accepted connection from ip to the waiting ones. It
// returns the connection that gave way for it, to be closed: the oldest
// of ip's if ip has its share, else, when every slot is taken, the oldest
// of the address holding the most. A connection gives way only once it
// has waited minEvictAge and busy says no bytes wait on it: a member that
// was slow to send its knock after connecting (its goroutine starved), or
// whose knock has arrived but not been read yet, is passed over. If the
// oldest few all are, none gives way and the bound is exceeded until
// they catch up, up to hardCap waiting in all; past that the newcomer
// itself is refused (refused true: close c).
func (h *handshakeSlots) admit(c net.Conn, ip string, now time.Time, busy func(net.Conn) bool) (evicted net.Conn, refused bool) {
	q := h.byIP[ip]
	if q == nil || q.Len() < h.maxWaitingPerIP {
		q = nil
		if len(h.waiting) >= h.maxWaiting {
			for _, other := range h.byIP {
				if q == nil || other.Len() > q.Len() {
					q = other
				}
			}
		}
	}
	if q != nil {
		e := q.Front()
		for tries := 0; e != nil && tries < maxPassedOver; tries++ {
			w := e.Value.(waiter)
			if now.Sub(w.since) < minEvictAge {
				break // the rest are younger still
			}
			if !busy(w.c) {
				evicted = w.c
				break
			}
			e = e.Next()
		}
		if evicted == nil && len(h.waiting) >= h.hardCap {
			return nil, true
		}
	}
	if evicted != nil {
		h.forget(evicted)
	}
	if q = h.byIP[ip]; q == nil {
		q = list.New()
		h.byIP[ip] = q
	}
	h.waiting[c] = q.PushBack(waiter{c: c, since: now})
	return evicted, false
}

// waiter is a connection waiting for its knock, and since when.
type waiter struct {
	c     net.Conn
	since time.Time
}

// maxPassedOver bounds how many connections admit looks past;
// minEvictAge is how long a connection may stay silent before it can be
// made to give way.
const (
	maxPassedOver = 16
	minEvictAge   = 100 * time.Millisecond
)

// knock moves c from the waiting connections to the knocked ones, and
// returns the knocked connection that gave way for it, if any. It reports
// false when c was neither waiting nor knocked (it gave way already).
func (h *handshakeSlots) knock(c net.Conn) (evicted net.Conn, ok bool) {
	if _, ok := h.knocked[c]; ok {
		return nil, true // its knock was seen as it was accepted
	}
	if _, ok := h.waiting[c]; !ok {
		return nil, false
	}
	h.forget(c)
	return h.admitKnocked(c), true
}

// admitKnocked adds c, whose knock has been read, to the knocked
// connections, and returns the oldest of them if it gave way for c.
func (h *handshakeSlots) admitKnocked(c net.Conn) (evicted net.Conn) {
	if h.order.Len() >= h.maxKnocked {
		evicted = h.order.Front().Value.(net.Conn)
		h.forget(evicted)
	}
	h.knocked[c] = h.order.PushBack(c)
	return evicted
}

// forget drops c from whichever stage holds it.
func (h *handshakeSlots) forget(c net.Conn) {
	if e, ok := h.knocked[c]; ok {
		delete(h.knocked, c)
		h.order.Remove(e)
		return
	}
	e, ok := h.waiting[c]
	if !ok {
		return
	}
	delete(h.waiting, c)
	ip := netaddr.Host(c.RemoteAddr())
	q := h.byIP[ip]
	q.Remove(e)
	if q.Len() == 0 {
		delete(h.byIP, ip)
	}
}

// counts returns how many connections wait for their knock and how many
// knocked.
func (h *handshakeSlots) counts() (waiting, knocked int) {
	return len(h.waiting), len(h.knocked)
}

// all lists every connection held, for closing.
func (h *handshakeSlots) all() []net.Conn {
	out := make([]net.Conn, 0, len(h.waiting)+len(h.knocked))
	for c := range h.waiting {
		out = append(out, c)
	}
	for c := range h.knocked {
		out = append(out, c)
	}
	return out
}
