package faultnet

import (
	"crypto/rand"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// FloodConfig sizes a Flood.
type FloodConfig struct {
	// Addr is the listener flooded.
	Addr string
	// FromIP is the loopback address the connections come from, such as
	// a member's own 127.0.0.1; "" lets the system pick.
	FromIP string
	// Total bounds the connections opened in all (10,000 by default).
	Total int
	// Hold bounds those open at once (500 by default).
	Hold int
	// For bounds the flood's duration (a minute by default).
	For time.Duration
	// GarbageEvery makes every n-th connection send random bytes, the
	// others staying idle after reading what the server sends; 2 by
	// default (half and half).
	GarbageEvery int
	// Pace is the least time between two dials of one of the Hold
	// workers, so that a flood the server refuses at once lasts rather
	// than spending Total in a burst (0: no pause).
	Pace time.Duration
}

// Flood opens connections to a listener from one address and abuses
// them, as someone without the peer secret can: some connections read
// what the server sends and then say nothing (idle), the others send
// random bytes (garbage). A connection is held until the server closes it
// or for ten seconds, then the next is opened, until Total were opened,
// For passed, or Stop.
type Flood struct {
	cfg    FloodConfig
	stop   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	next   atomic.Int64 // connections claimed, of Total
	opened atomic.Int64 // dials that connected
	failed atomic.Int64 // dials that did not
	closed atomic.Int64 // connections the server ended
}

// StartFlood starts flooding cfg.Addr.
func StartFlood(cfg FloodConfig) *Flood {
	if cfg.Total <= 0 {
		cfg.Total = 10_000
	}
	if cfg.Hold <= 0 {
		cfg.Hold = 500
	}
	if cfg.For <= 0 {
		cfg.For = time.Minute
	}
	if cfg.GarbageEvery <= 0 {
		cfg.GarbageEvery = 2
	}
	f := &Flood{cfg: cfg, stop: make(chan struct{})}
	deadline := time.Now().Add(cfg.For)
	for range min(cfg.Hold, cfg.Total) {
		f.wg.Go(func() { f.run(deadline) })
	}
	return f
}

func (f *Flood) run(deadline time.Time) {
	d := net.Dialer{Timeout: time.Second}
	if f.cfg.FromIP != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(f.cfg.FromIP)}
	}
	for {
		n := f.next.Add(1)
		if n > int64(f.cfg.Total) || time.Now().After(deadline) || f.stopped() {
			return
		}
		next := time.Now().Add(f.cfg.Pace)
		c, err := d.Dial("tcp", f.cfg.Addr)
		if err != nil {
			f.failed.Add(1)
			// Out of ports or descriptors: let some close first.
			select {
			case <-f.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		f.opened.Add(1)
		f.abuse(c, n%int64(f.cfg.GarbageEvery) == 0, deadline)
		if wait := time.Until(next); wait > 0 {
			select {
			case <-f.stop:
				return
			case <-time.After(wait):
			}
		}
	}
}

// abuse holds one connection: idle reads and says nothing, garbage
// writes random bytes; either waits for the server to close it.
func (f *Flood) abuse(c net.Conn, garbage bool, deadline time.Time) {
	defer c.Close()
	hold := min(time.Until(deadline), 10*time.Second)
	_ = c.SetDeadline(time.Now().Add(hold))
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-f.stop:
			c.Close()
		case <-done:
		}
	}()
	if garbage {
		junk := make([]byte, 96)
		_, _ = rand.Read(junk)
		_, _ = c.Write(junk)
	}
	if _, err := io.Copy(io.Discard, c); err == nil {
		f.closed.Add(1) // end of stream: the server closed it
	}
}

func (f *Flood) stopped() bool {
	select {
	case <-f.stop:
		return true
	default:
		return false
	}
}

// FloodStats counts what a flood did.
type FloodStats struct {
	Opened, Failed, ClosedByServer int64
}

// Stats returns the counts so far.
func (f *Flood) Stats() FloodStats {
	return FloodStats{Opened: f.opened.Load(), Failed: f.failed.Load(), ClosedByServer: f.closed.Load()}
}

// Stop ends the flood, closes its connections and returns its counts.
func (f *Flood) Stop() FloodStats {
	f.once.Do(func() { close(f.stop) })
	f.wg.Wait()
	return f.Stats()
}

// Done reports whether the flood has opened all it was allowed to (or ran
// out of time), without stopping it.
func (f *Flood) Done() bool {
	return f.next.Load() > int64(f.cfg.Total)
}
