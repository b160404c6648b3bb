package raftstore

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Forwarding protocol, on connections tagged 'F'. The follower sends
//
//	uint32 length | kind | payload
//
// where kind is frameBatch (payload: a batch in the command codec) or
// frameIndex (no payload: "what index must I reach for sync?"). The leader
// answers each frame, in order, with
//
//	status | uint64 value
//
// value being the index for frameIndex. A batch is acknowledged once it is
// handed to Raft, not once committed; the origin learns the outcome when the
// entries reach its own Applier.
const (
	frameBatch byte = 'B'
	frameIndex byte = 'I'

	statusOK        byte = 0
	statusNotLeader byte = 1
	statusFailed    byte = 2

	replySize = 9
	// maxFrame bounds a forwarded frame; ZooKeeper requests are at most
	// jute.maxbuffer (1 MiB) each, and a batch holds a few hundred.
	maxFrame = 256 << 20
	// maxIdleForward bounds the pooled connections to the leader.
	maxIdleForward = 4
)

// Errors returned by Forward and WaitApplied.
var (
	ErrNoLeader  = errors.New("raftstore: no leader")
	ErrNotLeader = errors.New("raftstore: not the leader")
	// ErrUnreachable: no connection to the leader could be opened, so
	// nothing was sent (typically the leader has just died).
	ErrUnreachable = errors.New("raftstore: leader unreachable")
	ErrClosed      = errors.New("raftstore: closed")
	errFailed      = errors.New("raftstore: leader failed the request")
)

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
	c, err := dialTagged(s.cfg.Dial, addr, tagForward, time.Until(deadline))
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

// call sends one frame to the current leader and reads its reply.
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
		return 0, fmt.Errorf("%w: forward to %s: %w", ErrUnreachable, addr, err)
	}
	v, status, err := fc.roundTrip(ctx, deadline, kind, payload)
	if err != nil {
		fc.c.Close()
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

func (fc *fwdConn) roundTrip(ctx context.Context, deadline time.Time, kind byte, payload []byte) (uint64, byte, error) {
	fc.c.SetDeadline(deadline)
	// A cancelled context unblocks the read by moving the deadline.
	stop := context.AfterFunc(ctx, func() { fc.c.SetDeadline(time.Now()) })
	defer stop()
	fc.buf = binary.BigEndian.AppendUint32(fc.buf[:0], uint32(len(payload)+1))
	fc.buf = append(fc.buf, kind)
	fc.buf = append(fc.buf, payload...)
	if _, err := fc.c.Write(fc.buf); err != nil {
		return 0, 0, err
	}
	if cap(fc.buf) > 1<<20 {
		fc.buf = nil // do not pin a large batch's buffer in the pool
	}
	var reply [replySize]byte
	if _, err := io.ReadFull(fc.r, reply[:]); err != nil {
		if ctx.Err() != nil {
			return 0, 0, ctx.Err()
		}
		return 0, 0, err
	}
	fc.c.SetDeadline(time.Time{})
	return binary.BigEndian.Uint64(reply[1:]), reply[0], nil
}

// handleForward serves one inbound forwarding connection until it fails or
// the store closes. It runs on the mux's routing goroutine.
func (s *Store) handleForward(c net.Conn) {
	s.fwdMu.Lock()
	if s.closed {
		s.fwdMu.Unlock()
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
	var buf []byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n == 0 || n > maxFrame {
			s.log.Warn("raftstore: bad forward frame", "len", n, "remote", c.RemoteAddr().String())
			return
		}
		if uint32(cap(buf)) < n {
			buf = make([]byte, n)
		}
		frame := buf[:n]
		if _, err := io.ReadFull(r, frame); err != nil {
			return
		}
		status, v := s.serveFrame(frame[0], frame[1:])
		var reply [replySize]byte
		reply[0] = status
		binary.BigEndian.PutUint64(reply[1:], v)
		if _, err := c.Write(reply[:]); err != nil {
			return
		}
		if cap(buf) > 1<<20 {
			buf = nil
		}
	}
}

// serveFrame handles one request on the leader.
func (s *Store) serveFrame(kind byte, payload []byte) (byte, uint64) {
	if !s.IsLeader() {
		return statusNotLeader, 0
	}
	switch kind {
	case frameBatch:
		// Validate before the bytes enter the log: a corrupt entry would be
		// skipped by every FSM, but the sender should hear about it now.
		if _, err := DecodeBatch(payload); err != nil {
			s.log.Warn("raftstore: corrupt forwarded batch", "err", err)
			return statusFailed, 0
		}
		// raft keeps the slice in its log; payload aliases our read buffer.
		s.raft.Apply(append([]byte(nil), payload...), 0)
		return statusOK, 0
	case frameIndex:
		idx, err := s.syncIndex()
		if errors.Is(err, ErrNotLeader) {
			return statusNotLeader, 0
		}
		if err != nil {
			return statusFailed, 0
		}
		return statusOK, idx
	}
	return statusFailed, 0
}
