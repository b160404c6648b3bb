package raftstore

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Commit notices. hashicorp/raft tells a follower that entries committed
// only with its next append to it, or after CommitTimeout without one: a
// follower whose client waits for its own write, a watch event or a sync
// would wait for that, or for an entry appended (and fsynced on every
// node) only to carry the commit index. Instead each follower keeps one
// question standing on the forwarding channel, "tell me whenever you
// have applied past index n", and the leader answers with the newest
// entry it applied, (index, term), each time there is a newer one
// (frameNoticeStream): one frame from the follower serves every commit,
// where a question answered once had to be asked again after each
// answer, a third of the socket writes of a lone write's round. A leader
// that does not know the standing question (an older hutch) is asked
// once per answer, as before (frameNotice). An applied entry is committed,
// so once the follower's own log holds an entry of that index and term it
// holds, by Raft's log matching, every committed entry up to it, and
// applies them (fsm.applyCommitted) without waiting for Raft to say so.
// Nothing is logged or fsynced for a notice, and an idle leader answers
// nothing but a question that has waited noticeWait.

// noticeWait is how long the leader keeps a question open before it
// answers with what it has, so a follower notices a dead leader.
const noticeWait = 5 * time.Second

// notice is a committed entry: its index and term.
type notice struct{ index, term uint64 }

// notices is a follower's side: the newest notice heard, and the applier
// it wakes, together with every entry stored in the log.
type notices struct {
	mu     sync.Mutex // guards latest
	latest notice
	kick   chan struct{} // capacity 1: there is something to look at
}

func newNotices() *notices { return &notices{kick: make(chan struct{}, 1)} }

// heard records a notice and wakes the applier.
func (n *notices) heard(nt notice) {
	n.mu.Lock()
	if nt.index > n.latest.index {
		n.latest = nt
	}
	n.mu.Unlock()
	n.wake()
}

func (n *notices) wake() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

func (n *notices) newest() notice {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.latest
}

// storedLogs is the log store with a hook run after every store, given
// the last index stored: an entry that arrives after the notice covering
// it is applied then.
type storedLogs struct {
	raft.LogStore
	stored func(last uint64)
}

func (l storedLogs) StoreLog(e *raft.Log) error {
	err := l.LogStore.StoreLog(e)
	l.stored(e.Index)
	return err
}

// IsMonotonic passes on whether the store holds only consecutive
// indexes (raft.MonotonicLogStore), which Raft looks for to remove the
// whole log after installing a snapshot.
func (l storedLogs) IsMonotonic() bool {
	m, ok := l.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

func (l storedLogs) StoreLogs(es []*raft.Log) error {
	err := l.LogStore.StoreLogs(es)
	if len(es) > 0 {
		l.stored(es[len(es)-1].Index)
	}
	return err
}

// applyNotices applies what the notices heard cover, whenever a notice
// arrives or an entry is stored, until the store stops.
func (s *Store) applyNotices() {
	for {
		select {
		case <-s.notices.kick:
		case <-s.stop:
			return
		}
		nt := s.notices.newest()
		if nt.index == 0 || s.raft.State() == raft.Leader {
			continue
		}
		s.fsm.applyCommitted(s.noticeLogs, nt.index, nt.term)
	}
}

// followNotices keeps a question open with the leader while this node
// follows one, and hands every answer to the applier. The question shares
// the forwarding pipes (pipe.go): the leader answers it beside the frames
// that follow it.
func (s *Store) followNotices() {
	for {
		changed := s.changes.next()
		_, addr := s.Leader()
		if addr == "" || s.IsLeader() {
			// Nobody to ask: wait for a leader, or to stop leading.
			if !s.waitChange(changed, noticeWait) {
				return
			}
			continue
		}
		err := s.hearNotices(addr)
		if errors.Is(err, errNoStream) {
			err = s.askNotices(addr)
		}
		if errors.Is(err, ErrClosed) {
			return
		}
		// Failed or the leader changed: a moment before asking again.
		if !s.sleep(noticeRetry) {
			return
		}
	}
}

// noticeRetry is how long followNotices waits after a question failed.
const noticeRetry = 20 * time.Millisecond

// sleep waits d and reports whether the store is still open.
func (s *Store) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.stop:
		return false
	}
}

// errNoStream: the leader failed the standing question, as one that
// does not know it does.
var errNoStream = errors.New("raftstore: the leader does not stream notices")

// hearNotices keeps a standing question open with addr and hands every
// notice to the applier, until addr fails, stops leading, another member
// is known to lead, or nothing at all comes back on the pipe for longer
// than the leader's keep-alive and a forward's timeout (it is gone).
// While no leader is known it keeps listening: the same member may win.
func (s *Store) hearNotices(addr string) error {
	silent := noticeWait + s.cfg.ForwardTimeout
	p, err := s.pipeTo(addr, time.Now().Add(s.cfg.ForwardTimeout))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(s.stopCtx, s.cfg.ForwardTimeout)
	after := binary.AppendUvarint(nil, s.notices.newest().index)
	pc := p.sendStream(ctx, frameNoticeStream, after, func(index, term uint64) {
		s.notices.heard(notice{index: index, term: term})
	})
	cancel()
	defer p.forget(pc)
	t := time.NewTimer(silent)
	defer t.Stop()
	for {
		changed := s.changes.next()
		if _, leader := s.Leader(); leader != addr && leader != "" {
			return nil // a new leader: ask it
		}
		select {
		case r := <-pc.res:
			switch {
			case r.err != nil && s.stopCtx.Err() != nil:
				return ErrClosed
			case r.err != nil:
				return r.err
			case r.status == statusNotLeader:
				return ErrNotLeader
			}
			return errNoStream
		case <-changed:
		case <-t.C:
			if time.Since(time.Unix(0, p.heard.Load())) >= silent {
				p.fail(errPipeSilent) // answers pc.res
			}
			t.Reset(silent)
		case <-s.stop:
			return ErrClosed
		}
	}
}

// streamNotices answers a standing question on the leader: a notice each
// time the entry applied moves past the last one sent, and the current
// one every noticeWait (so the follower hears a live leader), until the
// connection ends (done), a newer question on it replaces this one
// (replaced), or this node stops leading.
func (s *Store) streamNotices(payload []byte, done, replaced <-chan struct{}, send func(status byte, index, term uint64)) {
	after, k := binary.Uvarint(payload)
	if k <= 0 || k != len(payload) {
		send(statusFailed, 0, 0)
		return
	}
	t := time.NewTimer(noticeWait)
	defer t.Stop()
	for {
		changed := s.changes.next()
		if !s.IsLeader() {
			send(statusNotLeader, 0, 0)
			return
		}
		index, term, moved := s.fsm.last()
		if index > after {
			send(statusOK, index, term)
			after = index
			continue
		}
		select {
		case <-moved:
		case <-changed:
		case <-t.C:
			send(statusOK, index, term)
			t.Reset(noticeWait)
		case <-done:
			return
		case <-replaced:
			return
		case <-s.stop:
			return
		}
	}
}

// askNotices asks addr for notice after notice until it fails or stops
// leading: the question of a leader that does not stream.
func (s *Store) askNotices(addr string) error {
	var after [binary.MaxVarintLen64]byte
	for {
		if _, leader := s.Leader(); leader != addr {
			return nil // a new leader: ask it
		}
		n := binary.PutUvarint(after[:], s.notices.newest().index)
		ctx, cancel := context.WithTimeout(s.stopCtx, noticeWait+s.cfg.ForwardTimeout)
		index, term, status, err := s.roundTrip(ctx, addr, frameNotice, after[:n])
		cancel()
		if err != nil {
			if s.stopCtx.Err() != nil {
				return ErrClosed
			}
			return err
		}
		if status != statusOK {
			return ErrNotLeader
		}
		s.notices.heard(notice{index: index, term: term})
	}
}

// serveNotice answers a follower's question on the leader: the newest
// entry applied, once it is past after, or whatever it is after
// noticeWait.
func (s *Store) serveNotice(payload []byte) (byte, uint64, uint64) {
	after, k := binary.Uvarint(payload)
	if k <= 0 || k != len(payload) {
		return statusFailed, 0, 0
	}
	t := time.NewTimer(noticeWait)
	defer t.Stop()
	for {
		index, term, moved := s.fsm.last()
		if index > after {
			return statusOK, index, term
		}
		select {
		case <-moved:
		case <-t.C:
			return statusOK, index, term
		case <-s.stop:
			return statusFailed, 0, 0
		}
		if !s.IsLeader() {
			return statusNotLeader, 0, 0
		}
	}
}
