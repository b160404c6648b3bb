package raftstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hutchzk/hutch/zkdb"
)

// Forwarding protocol, on authenticated connections tagged 'F'. The
// follower sends
//
//	uint32 length | kind | payload
//
// where kind is frameCommands (payload: commands as zkdb.AppendCommands
// writes them), frameIndex (no payload: "what index must I reach for
// sync?"), frameTouches (payload: uvarint count, varint session ids:
// sessions its clients were active on) or frameNotice (payload: uvarint
// index: "tell me when you have applied past it", see notices.go). The
// leader answers each frame, in order, with
//
//	status | uint64 value | uint64 value2
//
// value being the index for frameIndex, and the index and term of the
// newest entry applied for frameNotice. Commands are acknowledged once
// handed to Raft, not once committed; the origin learns the outcome when
// they reach its own state.
const (
	frameCommands byte = 'B'
	frameIndex    byte = 'I'
	frameTouches  byte = 'T'
	frameNotice   byte = 'N'

	statusOK        byte = 0
	statusNotLeader byte = 1
	statusFailed    byte = 2

	replySize = 17
	// maxIdleForward bounds the pooled connections to the leader.
	maxIdleForward = 4
	// maxForwardConns bounds the forwarding connections a node serves.
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
	// ErrUnreachable: no connection to the leader could be opened, so
	// nothing was sent (typically the leader has just died).
	ErrUnreachable = errors.New("raftstore: leader unreachable")
	ErrClosed      = errors.New("raftstore: closed")
	errFailed      = errors.New("raftstore: leader failed the request")
)

// errNotSent is a round trip that failed before its frame was written
// whole.
type errNotSent struct{ err error }

func (e errNotSent) Error() string { return "frame not sent: " + e.err.Error() }
func (e errNotSent) Unwrap() error { return e.err }

// fwdConn is a client connection to a leader's forwarding channel.
type fwdConn struct {
	addr string
	c    net.Conn
	r    *bufio.Reader
	buf  []byte // frame being written, reused
}

// getConn returns an idle connection to addr or dials one. Idle
// connections to a former leader are closed on the way.
func (s *Store) getConn(addr string, deadline time.Time) (*fwdConn, error) {
	s.fwdMu.Lock()
	if s.closed {
		s.fwdMu.Unlock()
		return nil, ErrClosed
	}
	var fc *fwdConn
	for len(s.idle) > 0 && fc == nil {
		c := s.idle[len(s.idle)-1]
		s.idle = s.idle[:len(s.idle)-1]
		if c.addr == addr {
			fc = c
		} else {
			c.c.Close()
		}
	}
	s.fwdMu.Unlock()
	if fc != nil {
		return fc, nil
	}
	return s.dialForward(addr, deadline)
}

// dialForward opens a new forwarding connection to addr.
func (s *Store) dialForward(addr string, deadline time.Time) (*fwdConn, error) {
	c, err := dialPeer(s.cfg.Dial, s.cfg.Secret, addr, tagForward, time.Until(deadline))
	if err != nil {
		return nil, err
	}
	return &fwdConn{addr: addr, c: c, r: bufio.NewReaderSize(c, 64)}, nil
}

// putConn returns a healthy connection to the pool.
func (s *Store) putConn(fc *fwdConn) {
	s.fwdMu.Lock()
	defer s.fwdMu.Unlock()
	if s.closed || len(s.idle) >= maxIdleForward {
		fc.c.Close()
		return
	}
	s.idle = append(s.idle, fc)
}

// call sends one frame to the current leader and reads its reply. It
// gives up when ctx ends or, without a deadline in ctx, after
// ForwardTimeout.
func (s *Store) call(ctx context.Context, kind byte, payload []byte) (uint64, error) {
	_, addr := s.Leader()
	if addr == "" {
		return 0, ErrNoLeader
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(s.cfg.ForwardTimeout)
	}
	fc, err := s.getConn(addr, deadline)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return 0, err
		}
		return 0, fmt.Errorf("%w: forward to %s: %w", ErrUnreachable, addr, err)
	}
	v, _, status, err := fc.roundTrip(ctx, deadline, kind, payload)
	if err != nil {
		fc.c.Close()
		var notSent errNotSent
		if errors.As(err, &notSent) {
			// The leader cannot act on a frame it did not get whole.
			return 0, fmt.Errorf("%w: forward to %s: %w", ErrUnreachable, addr, notSent.err)
		}
		return 0, fmt.Errorf("raftstore: forward to %s: %w", addr, err)
	}
	s.putConn(fc)
	switch status {
	case statusOK:
		return v, nil
	case statusNotLeader:
		return 0, ErrNotLeader
	}
	return 0, errFailed
}

func (fc *fwdConn) roundTrip(ctx context.Context, deadline time.Time, kind byte, payload []byte) (v, v2 uint64, status byte, err error) {
	fc.c.SetDeadline(deadline)
	// A cancelled context unblocks the I/O by moving the deadline.
	stop := context.AfterFunc(ctx, func() { fc.c.SetDeadline(time.Now()) })
	defer stop()
	fc.buf = binary.BigEndian.AppendUint32(fc.buf[:0], uint32(len(payload)+1))
	fc.buf = append(fc.buf, kind)
	fc.buf = append(fc.buf, payload...)
	if _, err := fc.c.Write(fc.buf); err != nil {
		// Not all of the frame left, so the leader, which reads whole
		// frames, never acts on it: typically a pooled connection to a
		// leader that has gone.
		return 0, 0, 0, errNotSent{err}
	}
	if cap(fc.buf) > 1<<20 {
		fc.buf = nil // do not pin a large batch's buffer in the pool
	}
	var reply [replySize]byte
	if _, err := io.ReadFull(fc.r, reply[:]); err != nil {
		if ctx.Err() != nil {
			return 0, 0, 0, ctx.Err()
		}
		return 0, 0, 0, err
	}
	fc.c.SetDeadline(time.Time{})
	return binary.BigEndian.Uint64(reply[1:]), binary.BigEndian.Uint64(reply[9:]), reply[0], nil
}

// handleForward serves one inbound forwarding connection until it fails or
// the store closes. It runs on the mux's routing goroutine. A peer may
// connect while this node is still starting (replaying its log); its
// frames wait until Raft is up.
func (s *Store) handleForward(c net.Conn) {
	select {
	case <-s.ready:
	case <-s.stop:
		c.Close()
		return
	}
	s.fwdMu.Lock()
	if s.closed || len(s.inbound) >= maxForwardConns {
		full := !s.closed
		s.fwdMu.Unlock()
		if full {
			s.log.Warn("raftstore: too many forwarding connections; refusing one", "remote", c.RemoteAddr().String())
		}
		c.Close()
		return
	}
	s.inbound[c] = struct{}{}
	s.handlers.Add(1)
	s.fwdMu.Unlock()
	defer func() {
		s.fwdMu.Lock()
		delete(s.inbound, c)
		s.fwdMu.Unlock()
		c.Close()
		s.handlers.Done()
	}()

	r := bufio.NewReaderSize(c, 64<<10)
	var hdr [4]byte
	var frame bytes.Buffer
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n == 0 || int64(n) > s.cfg.MaxForwardFrame {
			s.log.Warn("raftstore: bad forward frame", "len", n, "max", s.cfg.MaxForwardFrame, "remote", c.RemoteAddr().String())
			return
		}
		// The buffer grows with the bytes that actually arrive, so a
		// length that lies costs nothing until the data is sent.
		frame.Reset()
		if _, err := io.CopyN(&frame, r, int64(n)); err != nil {
			return
		}
		b := frame.Bytes()
		status, v, v2 := s.serveFrame(b[0], b[1:])
		var reply [replySize]byte
		reply[0] = status
		binary.BigEndian.PutUint64(reply[1:], v)
		binary.BigEndian.PutUint64(reply[9:], v2)
		if _, err := c.Write(reply[:]); err != nil {
			return
		}
		if frame.Cap() > 1<<20 {
			frame = bytes.Buffer{}
		}
	}
}

// serveFrame handles one request on the leader.
func (s *Store) serveFrame(kind byte, payload []byte) (status byte, v, v2 uint64) {
	if !s.IsLeader() {
		return statusNotLeader, 0, 0
	}
	switch kind {
	case frameCommands:
		// Check before the bytes enter the log: a corrupt entry would be
		// skipped by every replica, but the sender should hear now.
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
		return statusOK, 0, 0
	case frameNotice:
		return s.serveNotice(payload)
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
