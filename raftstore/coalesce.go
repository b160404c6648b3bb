package raftstore

import (
	"context"
	"sync"
)

// coalesced shares one run of an operation among concurrent callers:
// those that arrive while a run is under way wait for the next run, which
// starts after it, so every caller's answer comes from a run that began
// after it asked. A storm of syncs thus costs the leader one barrier (and
// a follower one question to the leader) at a time, not one each.
type coalesced struct {
	run func() (uint64, error)

	mu      sync.Mutex // guards running and next
	running bool
	next    *coalescedRound // callers waiting for the next run; nil if none
}

type coalescedRound struct {
	done chan struct{}
	v    uint64
	err  error
}

// do waits for the next run to finish and returns its result, or ctx's
// error if ctx ends first.
func (c *coalesced) do(ctx context.Context) (uint64, error) {
	c.mu.Lock()
	if c.next == nil {
		c.next = &coalescedRound{done: make(chan struct{})}
	}
	r := c.next
	if !c.running {
		c.running = true
		go c.loop()
	}
	c.mu.Unlock()
	select {
	case <-r.done:
		return r.v, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// loop runs rounds while callers wait for one, then ends. Each run is
// bounded by the operation's own timeout.
func (c *coalesced) loop() {
	for {
		c.mu.Lock()
		r := c.next
		c.next = nil
		if r == nil {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		r.v, r.err = c.run()
		close(r.done)
	}
}
