package raftstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"
)

// Members compare the digest of their state at the same log index (see
// zkdb's statedigest.go): every digestEvery a follower sends the leader
// its newest (index, digest) in a frameDigest, and the leader compares it
// with its own at that index. A member whose state differs stops (halt).
// Which one differs is decided by the majority: the leader's state is
// taken as right while another member agrees with it at that index or
// later, or when no other member's opinion comes within digestPatience;
// when a majority of the members disagree with the leader, the leader is
// the one that stops, and the others elect a new one.

const frameDigest byte = 'D'

// The leader's answers to a frameDigest (its first value; the second is
// its own digest at that index).
const (
	digestUnknown uint64 = 0 // no digest at that index here, or not decided yet
	digestMatch   uint64 = 1
	digestDiffers uint64 = 2 // the follower's state is the one that differs: it stops
)

// digestEvery is how often a follower sends its digest; digestPatience
// how long the leader waits for another member's opinion before it takes
// its own state as right.
const (
	digestEvery    = time.Second
	digestPatience = 5 * time.Second
)

// digestJudge is the leader's record of its followers' comparisons.
type digestJudge struct {
	mu sync.Mutex // guards results and term
	// results holds each follower's newest comparison, by node id.
	results map[uint64]digestResult
	term    uint64 // the leadership term results belong to
}

type digestResult struct {
	index uint64
	match bool
	at    time.Time
	// since is when this follower's differing run began (zero when its
	// newest comparison matched).
	since time.Time
	// first is the index at which that run began: another member that
	// agreed with the leader at it or later proves this one differs.
	first uint64
}

func encodeDigest(node, index, digest uint64) []byte {
	b := binary.AppendUvarint(nil, node)
	b = binary.AppendUvarint(b, index)
	return binary.LittleEndian.AppendUint64(b, digest)
}

func decodeDigest(b []byte) (node, index, digest uint64, ok bool) {
	node, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, 0, 0, false
	}
	b = b[n:]
	index, n = binary.Uvarint(b)
	if n <= 0 || len(b[n:]) != 8 {
		return 0, 0, 0, false
	}
	return node, index, binary.LittleEndian.Uint64(b[n:]), true
}

// serveDigest compares a follower's digest with the leader's.
func (s *Store) serveDigest(payload []byte) (status byte, verdict, own uint64) {
	node, index, digest, ok := decodeDigest(payload)
	if !ok {
		return statusFailed, 0, 0
	}
	own, known := s.db.StateDigestAt(index)
	if !known {
		return statusOK, digestUnknown, 0
	}
	voters := 0
	if replicas, _, err := s.Configuration(); err == nil {
		for _, r := range replicas {
			if r.Voter {
				voters++
			}
		}
	}
	verdict, leaderOdd := s.judge.compare(s.Term(), node, index, digest == own, voters, time.Now())
	if leaderOdd {
		s.halt(fmt.Errorf("the state here differs from a majority of the members': at entry %d its digest is %016x, member %d's is %016x, "+
			"and the other followers' differ from this one too", index, own, node, digest))
		return statusOK, digestUnknown, own
	}
	return statusOK, verdict, own
}

// compare records follower node's comparison at index and decides: the
// verdict for the follower, and whether the leader itself is the one
// that differs. voters counts the voting members, the leader included.
func (j *digestJudge) compare(term, node, index uint64, match bool, voters int, now time.Time) (verdict uint64, leaderOdd bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.term != term || j.results == nil {
		j.results, j.term = make(map[uint64]digestResult), term
	}
	r := digestResult{index: index, match: match, at: now}
	if !match {
		r.since, r.first = now, index
		if prev, ok := j.results[node]; ok && !prev.match {
			r.since, r.first = prev.since, prev.first
		}
	}
	j.results[node] = r
	if match {
		return digestMatch, false
	}
	agree, disagree := 0, 1 // this follower disagrees
	for id, o := range j.results {
		if id == node || now.Sub(o.at) > 2*digestPatience {
			continue
		}
		switch {
		case o.match && o.index >= r.first:
			// Agreed with the leader where this follower already
			// differed, or later: a state that differed there would
			// still differ.
			agree++
		case !o.match:
			disagree++
		}
	}
	switch {
	case agree > 0:
		return digestDiffers, false
	case disagree > voters/2:
		return digestUnknown, true
	case now.Sub(r.since) > digestPatience:
		return digestDiffers, false // no second opinion came: the leader's state stands
	}
	return digestUnknown, false
}

// sendDigest sends this follower's newest digest to the leader and halts
// the member if the leader finds it differs.
func (n *Node) sendDigest(ctx context.Context) {
	d, ok := n.db.LatestStateDigest()
	if !ok {
		return
	}
	// Bounded like a report, so the reports it sits between stay on time.
	callCtx, cancel := context.WithTimeout(ctx, max(n.cfg.ReportInterval, 100*time.Millisecond))
	defer cancel()
	verdict, theirs, err := n.store.call2(callCtx, frameDigest, encodeDigest(n.cfg.NodeID, d.Index, d.Digest))
	if err != nil || verdict != digestDiffers {
		return // a leader that cannot tell (or is too old to) says nothing
	}
	leader, _ := n.store.Leader()
	n.store.halt(fmt.Errorf("the state here differs from the others': at entry %d its digest is %016x, the leader's (member %d) %016x, "+
		"which another member shares or none disputed", d.Index, d.Digest, leader, theirs))
}
