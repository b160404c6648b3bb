package raftstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hutchzk/hutch/zkdb"
)

// Forwarding protocol: the frames a follower sends its leader over the
// pipelined connections of pipe.go, where their framing is described.
// Each is a kind and a payload: frameCommands (payload: commands as
// zkdb.AppendCommands writes them), frameIndex (no payload: "what index
// must I reach for sync?"), frameTouches (payload: uvarint count, varint
// session ids: sessions its clients were active on) or frameNotice
// (payload: uvarint index: "tell me when you have applied past it", see
// notices.go) or frameReconfig (payload: a client's reconfig, see
// reconfig.go; answered once its outcome is logged and applied on the
// leader). The leader answers each with a status and two values: the
// index for frameIndex, the index and term of the newest entry applied
// for frameNotice, the index applied for frameTouches. Commands are acknowledged once handed to Raft, not
// once committed; the origin learns the outcome when they reach its own
// state.
const (
	frameCommands byte = 'B'
	frameIndex    byte = 'I'
	frameTouches  byte = 'T'
	frameNotice   byte = 'N'
	// frameNoticeStream (payload as frameNotice's) is a standing
	// question: answered with a notice each time the leader applies more
	// (notices.go). A leader that does not know it fails it.
	frameNoticeStream byte = 'S'
	frameReconfig     byte = 'R'

	statusOK        byte = 0
	statusNotLeader byte = 1
	statusFailed    byte = 2

	replySize = 17
	// maxForwardConns bounds the forwarding connections a node serves:
	// each follower keeps maxPipes.
	maxForwardConns = 64
)

// DefaultMaxForwardFrame bounds a forwarded frame: a batch of client
// requests, each at most jute.maxbuffer (1 MiB by default); the server
// caps its batches well below this.
const DefaultMaxForwardFrame = 64 << 20

// Errors returned by Forward, ReportTouches and WaitApplied.
var (
	ErrNoLeader  = errors.New("raftstore: no leader")
	ErrNotLeader = errors.New("raftstore: not the leader")
	// ErrUnreachable: the frame never reached the leader whole (no
	// connection could be opened, or it broke before the frame was
	// written), so nothing was done (typically the leader has just died).
	ErrUnreachable = errors.New("raftstore: leader unreachable")
	ErrClosed      = errors.New("raftstore: closed")
	errFailed      = errors.New("raftstore: leader failed the request")
)

// errNotSent is a round trip that failed before its frame was written
// whole.
type errNotSent struct{ err error }

func (e errNotSent) Error() string { return "frame not sent: " + e.err.Error() }
func (e errNotSent) Unwrap() error { return e.err }

// call sends one frame to the current leader over a pipe (pipe.go) and
// waits for its answer. It gives up when ctx ends or, without a deadline
// in ctx, after ForwardTimeout.
func (s *Store) call(ctx context.Context, kind byte, payload []byte) (uint64, error) {
	v, _, err := s.call2(ctx, kind, payload)
	return v, err
}

// call2 is call for frames answered with two values.
func (s *Store) call2(ctx context.Context, kind byte, payload []byte) (uint64, uint64, error) {
	_, addr := s.Leader()
	if addr == "" {
		return 0, 0, ErrNoLeader
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.ForwardTimeout)
		defer cancel()
	}
	v, v2, status, err := s.roundTrip(ctx, addr, kind, payload)
	if err != nil {
		var notSent errNotSent
		if errors.As(err, &notSent) {
			// The leader cannot act on a frame it did not get whole.
			return 0, 0, fmt.Errorf("%w: forward to %s: %w", ErrUnreachable, addr, notSent.err)
		}
		if errors.Is(err, ErrClosed) {
			return 0, 0, err
		}
		return 0, 0, fmt.Errorf("raftstore: forward to %s: %w", addr, err)
	}
	switch status {
	case statusOK:
		return v, v2, nil
	case statusNotLeader:
		return 0, 0, ErrNotLeader
	}
	return 0, 0, errFailed
}

// serveFrame handles one request on the leader.
func (s *Store) serveFrame(kind byte, payload []byte) (status byte, v, v2 uint64) {
	if !s.IsLeader() {
		return statusNotLeader, 0, 0
	}
	switch kind {
	case frameCommands:
		// Check before the bytes enter the log: a corrupt entry would
		// halt every replica, and the sender should hear now.
		if err := zkdb.CheckCommands(payload); err != nil {
			s.log.Warn("raftstore: corrupt forwarded commands", "err", err)
			return statusFailed, 0, 0
		}
		s.append(payload)
		return statusOK, 0, 0
	case frameIndex:
		idx, err := s.syncIndex()
		if errors.Is(err, ErrNotLeader) {
			return statusNotLeader, 0, 0
		}
		if err != nil {
			return statusFailed, 0, 0
		}
		return statusOK, idx, 0
	case frameTouches:
		ids, ok := decodeTouches(payload)
		if !ok {
			return statusFailed, 0, 0
		}
		s.db.TouchAll(ids, s.cfg.Clock.Now())
		// The index applied here: the reporter vouches for its clients
		// only once it has applied as much (Node.settleVouches).
		return statusOK, s.db.Applied(), 0
	case frameNotice:
		return s.serveNotice(payload)
	case frameDigest:
		return s.serveDigest(payload)
	case frameReconfig:
		if serve := s.onReconfig.Load(); serve != nil {
			return (*serve)(payload), 0, 0
		}
	}
	return statusFailed, 0, 0
}

func encodeTouches(ids []int64) []byte {
	b := binary.AppendUvarint(nil, uint64(len(ids)))
	for _, id := range ids {
		b = binary.AppendVarint(b, id)
	}
	return b
}

func decodeTouches(b []byte) ([]int64, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, false
	}
	b = b[k:]
	ids := make([]int64, 0, n)
	for range n {
		id, k := binary.Varint(b)
		if k <= 0 {
			return nil, false
		}
		ids = append(ids, id)
		b = b[k:]
	}
	return ids, len(b) == 0
}
