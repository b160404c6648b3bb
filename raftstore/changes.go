package raftstore

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// changes tells waiters that Raft's state or its known leader changed,
// so that loops which follow them wait for that instead of polling. A
// waiter takes the current channel, looks at the state, and waits for
// the channel to close; every change closes it and makes a new one.
type changes struct {
	mu sync.Mutex // guards ch and leaderLost
	ch chan struct{}
	// leaderLost is when Raft last said it stopped knowing a leader (zero
	// if never): one was known until then.
	leaderLost time.Time
}

func newChanges() *changes { return &changes{ch: make(chan struct{})} }

// next returns the channel the next change closes.
func (c *changes) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ch
}

func (c *changes) fire() {
	c.mu.Lock()
	close(c.ch)
	c.ch = make(chan struct{})
	c.mu.Unlock()
}

// noteLeaderLost records that Raft stopped knowing a leader at t; the
// change is fired after, so that the look it wakes sees the time.
func (c *changes) noteLeaderLost(t time.Time) {
	c.mu.Lock()
	c.leaderLost = t
	c.mu.Unlock()
}

// lastLeaderLost returns when Raft last said it stopped knowing a leader.
func (c *changes) lastLeaderLost() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leaderLost
}

// changeFallback bounds a wait for a change: observations are dropped
// when their channel is full, so a waiter looks again this often anyway.
const changeFallback = 2 * time.Second

// observe relays Raft's leader and state observations to s.changes until
// the store stops.
func (s *Store) observe() {
	ch := make(chan raft.Observation, 16)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.LeaderObservation, raft.RaftState:
			return true
		}
		return false
	})
	s.raft.RegisterObserver(obs)
	defer s.raft.DeregisterObserver(obs)
	for {
		select {
		case o := <-ch:
			if l, ok := o.Data.(raft.LeaderObservation); ok && l.LeaderAddr == "" {
				s.changes.noteLeaderLost(time.Now())
			}
			s.changes.fire()
		case <-s.stop:
			return
		}
	}
}

// waitChange waits for a change of Raft's state or leader, at most d, and
// reports whether the store is still open.
func (s *Store) waitChange(changed <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-s.stop:
		return false
	}
	return true
}
