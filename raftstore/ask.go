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

	"github.com/hutchzk/hutch/internal/record"
)

// Questions between members, on authenticated connections tagged 'Q': a
// member asks another for something only that member knows (the live
// view asks for what its clients' sessions and watches are) and gets one
// answer. Unlike forwarding, every member answers, not just the leader,
// and nothing in the state changes. It is a protocol of its own, beside
// forwarding's frames, so that neither constrains the other. The asker
// sends one question,
//
//	uint32 length | question
//
// the answerer replies
//
//	status(1) | uint32 length | answer
//
// and closes the connection. Questions are rare (a viewer's redraw, at
// most once a second whoever looks), so a connection per question costs
// nothing worth pooling. Questions whose first byte is 0 are the store's
// own and never reach Config.Answer: askStatus's is the only one.
const tagAsk byte = 'Q'

// Bounds on questions.
const (
	// MaxQuestion bounds a question a member reads.
	MaxQuestion = 64 << 10
	// DefaultMaxAnswer bounds the answer Ask reads when not told otherwise.
	DefaultMaxAnswer = 64 << 20
	// maxAnswering bounds the questions a member answers at once; more
	// are closed unanswered.
	maxAnswering = 8
	// answerStatus values.
	answerOK   byte = 0
	answerNone byte = 1
)

// Answerer answers another member's question (Config.Answer). It runs on
// its own goroutine; ctx ends when the store closes.
type Answerer func(ctx context.Context, question []byte) ([]byte, error)

// Errors of Ask.
var (
	// ErrNoAnswer: the member asked has nothing to answer with.
	ErrNoAnswer = errors.New("raftstore: the member has no answer")
	// ErrAnswerTooLarge: the answer exceeded the bound the asker set.
	ErrAnswerTooLarge = errors.New("raftstore: answer too large")
)

// Ask puts question to the member at addr (its Raft address) over an
// authenticated connection and returns its answer, at most maxAnswer
// bytes (DefaultMaxAnswer if maxAnswer <= 0). Without a deadline in ctx
// it gives up after ForwardTimeout.
func (s *Store) Ask(ctx context.Context, addr string, question []byte, maxAnswer int) ([]byte, error) {
	if len(question) > MaxQuestion {
		return nil, fmt.Errorf("raftstore: question of %d bytes exceeds %d", len(question), MaxQuestion)
	}
	if maxAnswer <= 0 {
		maxAnswer = DefaultMaxAnswer
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(s.cfg.ForwardTimeout)
	}
	c, err := dialPeer(s.cfg.Dial, s.cfg.Secret, addr, tagAsk, time.Until(deadline))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	msg := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(question)), uint32(len(question)))
	if _, err := c.Write(append(msg, question...)); err != nil {
		return nil, fmt.Errorf("raftstore: ask %s: %w", addr, err)
	}
	r := bufio.NewReader(c)
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("raftstore: ask %s: %w", addr, errors.Join(ctx.Err(), err))
	}
	if hdr[0] != answerOK {
		return nil, ErrNoAnswer
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if int64(n) > int64(maxAnswer) {
		return nil, fmt.Errorf("%w: %d bytes from %s, at most %d", ErrAnswerTooLarge, n, addr, maxAnswer)
	}
	answer := make([]byte, n)
	if _, err := io.ReadFull(r, answer); err != nil {
		return nil, fmt.Errorf("raftstore: ask %s: %w", addr, errors.Join(ctx.Err(), err))
	}
	return answer, nil
}

// handleAsk answers one question on an authenticated connection, then
// closes it. It runs on the mux's routing goroutine.
func (s *Store) handleAsk(c net.Conn) {
	s.fwdMu.Lock()
	if s.closed || s.answering >= maxAnswering {
		full := !s.closed
		s.fwdMu.Unlock()
		if full {
			s.log.Warn("raftstore: too many questions at once; closing one", "remote", c.RemoteAddr().String())
		}
		c.Close()
		return
	}
	s.answering++
	s.inbound[c] = struct{}{}
	s.handlers.Add(1)
	s.fwdMu.Unlock()
	defer func() {
		s.fwdMu.Lock()
		s.answering--
		delete(s.inbound, c)
		s.fwdMu.Unlock()
		c.Close()
		s.handlers.Done()
	}()

	c.SetReadDeadline(time.Now().Add(s.cfg.ForwardTimeout))
	r := bufio.NewReader(c)
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxQuestion {
		s.log.Warn("raftstore: question too large", "len", n, "max", MaxQuestion, "remote", c.RemoteAddr().String())
		return
	}
	question := make([]byte, n)
	if _, err := io.ReadFull(r, question); err != nil {
		return
	}
	status, answer := answerNone, []byte(nil)
	if len(question) > 0 && question[0] == 0 {
		if a, ok := s.answerStatus(question); ok {
			status, answer = answerOK, a
		}
	} else if s.cfg.Answer != nil {
		if a, err := s.cfg.Answer(s.stopCtx, question); err == nil {
			status, answer = answerOK, a
		} else {
			s.log.Debug("raftstore: no answer to a member's question", "err", err)
		}
	}
	c.SetWriteDeadline(time.Now().Add(s.cfg.ForwardTimeout))
	out := binary.BigEndian.AppendUint32([]byte{status}, uint32(len(answer)))
	if _, err := c.Write(out); err != nil {
		return
	}
	_, _ = c.Write(answer)
}

// statusQuestion starts the store's own status question: "have you
// applied index target? wait up to wait for it", followed by
// uvarint(target) uvarint(wait in ms). The answer is uvarint(applied)
// uvarint(node id): the leader learns how far a member is, and that it
// asked the member it meant to (reconfig.go).
var statusQuestion = []byte{0, 'S'}

// maxStatusWait bounds the wait a status question may ask for.
const maxStatusWait = time.Minute

// askStatus asks the member at addr whether it has applied target,
// giving it wait to get there, and returns its applied index and its id.
func (s *Store) askStatus(ctx context.Context, addr string, target uint64, wait time.Duration) (applied, id uint64, err error) {
	q := binary.AppendUvarint(append([]byte(nil), statusQuestion...), target)
	q = binary.AppendUvarint(q, uint64(wait.Milliseconds()))
	ctx, cancel := context.WithTimeout(ctx, wait+s.cfg.ForwardTimeout)
	defer cancel()
	a, err := s.Ask(ctx, addr, q, 32)
	if err != nil {
		return 0, 0, err
	}
	r := record.NewSlice(a)
	applied, id = r.Uvarint(), r.Uvarint()
	if r.Bad() || len(r.Rest()) != 0 {
		return 0, 0, fmt.Errorf("raftstore: bad status answer from %s", addr)
	}
	return applied, id, nil
}

// answerStatus answers a status question once this node has applied its
// target or its wait is over; false for a question it does not know.
func (s *Store) answerStatus(q []byte) ([]byte, bool) {
	if len(q) < len(statusQuestion) || q[1] != statusQuestion[1] {
		return nil, false
	}
	r := record.NewSlice(q[len(statusQuestion):])
	target, waitMS := r.Uvarint(), r.Uvarint()
	if r.Bad() || len(r.Rest()) != 0 {
		return nil, false
	}
	wait := min(time.Duration(waitMS)*time.Millisecond, maxStatusWait)
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		applied, moved := s.fsm.waitCh()
		if applied >= target {
			break
		}
		select {
		case <-moved:
			continue
		case <-t.C:
		case <-s.stop:
		}
		break
	}
	a := binary.AppendUvarint(nil, s.db.Applied())
	return binary.AppendUvarint(a, s.cfg.NodeID), true
}
