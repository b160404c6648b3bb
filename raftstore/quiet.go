package raftstore

import (
	"time"

	"github.com/hashicorp/raft"
)

// Quiet timing. hashicorp/raft's leader sends each follower a heartbeat
// every tenth to fifth of the heartbeat timeout, and on an idle ensemble
// those wake-ups are nearly all it costs. When the ensemble holds no
// session at all (every member knows that from the replicated session
// table), there is no client for a fast failover to serve, so the members
// stretch their heartbeat and election timeouts quietFactor times (a dead
// leader is then noticed in 2 to 4 s by default, still sooner than
// ZooKeeper's syncLimit × tickTime of 10 s); the first session brings the
// usual timing back. The factor is bounded by the leader's lease, which
// Raft cannot reload: the leader steps down if it has not heard from a
// quorum within it, so its slowest stretched heartbeat interval
// (quietFactor/5 of a heartbeat timeout) must stay inside it, and the
// lease is the whole heartbeat timeout (see Config.LeaderLeaseTimeout). Followers stretch their timeouts
// before the leader slows its heartbeats (QuietAfter), and the leader
// speeds up before the followers shorten theirs (quietWake), so that a
// follower does not wait on a short timeout for a slow heartbeat; if one
// ever does, its pre-vote is refused by every member that still knows the
// leader, and nothing is disturbed.
const (
	quietFactor = 4
	// DefaultQuietAfter is how long a follower waits with no session
	// before it stretches its timing (Config.QuietAfter); the leader
	// waits twice as long, so the followers' longer timeouts are in place
	// before its heartbeats slow down.
	DefaultQuietAfter = 10 * time.Second
)

// quietWake is how long a follower keeps its stretched timeout once a
// session exists: longer than the leader's stretched heartbeat interval
// (at most quietFactor/5 heartbeat timeouts), so the leader's faster
// heartbeats arrive first.
func (s *Store) quietWake() time.Duration { return 2 * s.reloadable.HeartbeatTimeout }

// quietState is what tuneQuiet remembers between looks.
type quietState struct {
	quiet      bool
	emptySince time.Time // since when no session exists; zero while one does
	busySince  time.Time // since when one exists; zero while none does
}

// tuneQuiet stretches Raft's timing once the ensemble has held no session
// for a while, and brings it back once it holds one.
func (n *Node) tuneQuiet(q *quietState, now time.Time) {
	empty := n.db.SessionCount() == 0
	if empty {
		q.busySince = time.Time{}
		if q.emptySince.IsZero() {
			q.emptySince = now
		}
	} else {
		q.emptySince = time.Time{}
		if q.busySince.IsZero() {
			q.busySince = now
		}
	}
	if n.cfg.QuietAfter < 0 || n.store.quietFactor() < 2 {
		return
	}
	leader := n.store.IsLeader()
	after := n.cfg.QuietAfter
	if leader {
		after *= 2
	}
	switch {
	case !q.quiet && empty && now.Sub(q.emptySince) >= after:
		if n.store.setQuiet(true) == nil {
			q.quiet = true
			n.cfg.Logger.Info("no sessions: Raft heartbeats slowed", "factor", quietFactor)
		}
	case q.quiet && !empty && (leader || now.Sub(q.busySince) >= n.store.quietWake()):
		if n.store.setQuiet(false) == nil {
			q.quiet = false
			n.cfg.Logger.Info("sessions again: Raft heartbeats at their usual pace")
		}
	}
}

// setQuiet reloads Raft's heartbeat and election timeouts: stretched, or
// as configured.
func (s *Store) setQuiet(quiet bool) error {
	rc := s.reloadable
	if quiet {
		f := s.quietFactor()
		rc.HeartbeatTimeout *= f
		rc.ElectionTimeout *= f
	}
	return s.raft.ReloadConfig(rc)
}

// quietFactor is how far this store may stretch its timing: quietFactor,
// or less where the configured lease is shorter than the heartbeat
// timeout, so that the slowest stretched heartbeat interval (factor/5 of
// a heartbeat timeout) stays within four fifths of the lease. 1 means
// not at all.
func (s *Store) quietFactor() time.Duration {
	f := 4 * s.cfg.LeaderLeaseTimeout / s.reloadable.HeartbeatTimeout
	return max(min(f, quietFactor), 1)
}

// reloadableOf is the part of a Raft configuration ReloadConfig sets.
func reloadableOf(c *raft.Config) raft.ReloadableConfig {
	return raft.ReloadableConfig{
		TrailingLogs:      c.TrailingLogs,
		SnapshotInterval:  c.SnapshotInterval,
		SnapshotThreshold: c.SnapshotThreshold,
		HeartbeatTimeout:  c.HeartbeatTimeout,
		ElectionTimeout:   c.ElectionTimeout,
	}
}
