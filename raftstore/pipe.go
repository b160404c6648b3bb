package raftstore

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Pipelined forwarding, on authenticated connections tagged 'P'. A
// follower keeps at most maxPipes connections to its leader, long-lived,
// and every forward shares them: each frame carries an id, any number may
// be in flight, and the leader answers each by its id as soon as it is
// done. So a storm of syncs or writes on a follower queues on a couple of
// connections and slows down, where one connection per concurrent forward
// used to run into the leader's bound on connections and fail frames it
// had never read. The follower sends
//
//	uint32 length of what follows | uint32 id | kind | payload
//
// with the kinds and payloads of the forwarding protocol (forward.go),
// and the leader answers
//
//	uint32 id | status | uint64 value | uint64 value2
//
// Command frames are served in the order they arrive, on the connection's
// reading goroutine, so one pipe's commands enter the log in the order
// sent; once the leader has refused a command frame as not the leader it
// refuses every later one on that connection, so no later batch overtakes
// one to be retried. Index, notice and touch frames are served beside the
// reading (they wait for a barrier or an entry to apply, and a report of
// client activity must not wait for Raft to take commands), at most
// maxPipeWaiting at once per connection; past that the leader stops
// reading, and the follower's writes wait in TCP's buffers.
//
// A frame fails only when its outcome is really unknown: it was written
// to a connection that then broke before its answer came, or its caller
// stopped waiting. One the connection never took whole is reported as not
// sent (ErrUnreachable), and callers may send it again.
const (
	tagPipe byte = 'P'

	maxPipes       = 2
	maxPipeWaiting = 1024
	pipeReplySize  = 4 + replySize
	// pipeQueue bounds the frames queued for one pipe's writer; senders
	// wait past it.
	pipeQueue = 256
)

// pipe is a follower's connection to its leader's pipelined channel.
type pipe struct {
	s     *Store
	addr  string
	c     net.Conn
	queue chan *pipeCall // frames for the writer, in order
	done  chan struct{}  // closed when the pipe breaks
	// heard is when the last answer arrived (unix nanos), to tell a
	// silent leader from a slow one.
	heard atomic.Int64
	// retired is set once the leader refused a command frame as not the
	// leader: it refuses every later one on this connection, so new
	// frames go to a new pipe, even should the same node lead again, and
	// this one closes once nothing waits on it.
	retired atomic.Bool

	mu     sync.Mutex // guards calls, nextID and broken
	calls  map[uint32]*pipeCall
	nextID uint32
	broken error
}

// pipeCall is one frame and the answer its caller waits for.
type pipeCall struct {
	id      uint32
	kind    byte
	payload []byte
	// sent is set (under pipe.mu) once the frame may have left: from just
	// before the writer writes it, unless the write fails short of it.
	sent bool
	res  chan pipeResult // capacity 1: written once
	// stream, when set, takes every answer with statusOK, and the call
	// stays open until another status, a failure or forget ends it (a
	// standing question: notices.go).
	stream func(v, v2 uint64)
}

type pipeResult struct {
	status byte
	v, v2  uint64
	err    error // errNotSent, or an unknown outcome
}

// dialPipe opens a pipe to addr and starts its writer and reader.
func (s *Store) dialPipe(addr string, deadline time.Time) (*pipe, error) {
	c, err := dialPeer(s.cfg.Dial, s.cfg.Secret, addr, tagPipe, time.Until(deadline))
	if err != nil {
		return nil, err
	}
	p := &pipe{s: s, addr: addr, c: c, queue: make(chan *pipeCall, pipeQueue), done: make(chan struct{}),
		calls: make(map[uint32]*pipeCall)}
	p.heard.Store(time.Now().UnixNano())
	go p.writeLoop()
	go p.readLoop()
	return p, nil
}

// load is how many frames wait for an answer.
func (p *pipe) load() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

// send queues a frame; its answer arrives on the call's res. It waits
// while the writer's queue is full, but no longer than ctx: a frame that
// never entered the queue was never written, and is answered as not
// sent. (A caller must never wait on a stalled leader past its own
// deadline: the activity reports that let a follower vouch for its
// clients are timed by theirs, and a report stuck here would keep the
// follower answering clients the leader no longer hears of.)
func (p *pipe) send(ctx context.Context, kind byte, payload []byte) *pipeCall {
	return p.sendStream(ctx, kind, payload, nil)
}

// sendStream is send for a frame answered any number of times: each
// answer with statusOK goes to stream, on the pipe's reading goroutine
// (so stream must not block), and res takes the one that ends the call.
func (p *pipe) sendStream(ctx context.Context, kind byte, payload []byte, stream func(v, v2 uint64)) *pipeCall {
	pc := &pipeCall{kind: kind, payload: payload, res: make(chan pipeResult, 1), stream: stream}
	p.mu.Lock()
	if p.broken != nil {
		p.mu.Unlock()
		pc.res <- pipeResult{err: errNotSent{p.broken}}
		return pc
	}
	p.nextID++
	pc.id = p.nextID
	p.calls[pc.id] = pc
	p.mu.Unlock()
	select {
	case p.queue <- pc:
	case <-p.done: // fail has answered it, as not sent
	case <-ctx.Done():
		p.mu.Lock()
		_, waiting := p.calls[pc.id]
		delete(p.calls, pc.id)
		p.mu.Unlock()
		if waiting { // else fail answered it first
			pc.res <- pipeResult{err: errNotSent{ctx.Err()}}
		}
	}
	return pc
}

// forget drops a call whose caller stopped waiting; a late answer is
// then discarded.
func (p *pipe) forget(pc *pipeCall) {
	p.mu.Lock()
	delete(p.calls, pc.id)
	p.mu.Unlock()
}

// writeLoop writes queued frames, as many as are waiting in one write.
func (p *pipe) writeLoop() {
	var (
		buf   []byte
		batch []*pipeCall
		ends  []int
	)
	for {
		select {
		case pc := <-p.queue:
			batch = append(batch[:0], pc)
		case <-p.done:
			return
		}
	more:
		for len(batch) < 128 {
			select {
			case pc := <-p.queue:
				batch = append(batch, pc)
			default:
				break more
			}
		}
		buf, ends = buf[:0], ends[:0]
		p.mu.Lock()
		if p.broken != nil {
			p.mu.Unlock()
			return // fail answered them all as not sent
		}
		for _, pc := range batch {
			buf = binary.BigEndian.AppendUint32(buf, uint32(4+1+len(pc.payload)))
			buf = binary.BigEndian.AppendUint32(buf, pc.id)
			buf = append(buf, pc.kind)
			buf = append(buf, pc.payload...)
			ends = append(ends, len(buf))
			pc.sent = true
			pc.payload = nil
		}
		p.mu.Unlock()
		// A leader that stopped reading (paused, or cut off with its
		// buffers full) must not hold the writer, and every frame queued
		// behind it, for longer than a forward may take.
		p.c.SetWriteDeadline(time.Now().Add(p.s.cfg.ForwardTimeout))
		n, err := p.c.Write(buf)
		if err != nil {
			// Frames the write did not take whole never reach the
			// leader's handler, which acts on whole frames only.
			p.mu.Lock()
			for i, pc := range batch {
				if ends[i] > n {
					pc.sent = false
				}
			}
			p.mu.Unlock()
			p.fail(err)
			return
		}
		clear(batch)
		if cap(buf) > 1<<20 {
			buf = nil // do not keep a large batch's buffer
		}
	}
}

// readLoop hands each answer to its caller.
func (p *pipe) readLoop() {
	r := bufio.NewReaderSize(p.c, 4096)
	var b [pipeReplySize]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			p.fail(err)
			return
		}
		p.heard.Store(time.Now().UnixNano())
		id := binary.BigEndian.Uint32(b[:])
		v, v2 := binary.BigEndian.Uint64(b[5:]), binary.BigEndian.Uint64(b[13:])
		p.mu.Lock()
		pc := p.calls[id]
		if pc != nil && pc.stream != nil && b[4] == statusOK {
			p.mu.Unlock()
			pc.stream(v, v2)
			continue
		}
		delete(p.calls, id)
		p.mu.Unlock()
		if pc != nil {
			pc.res <- pipeResult{status: b[4], v: v, v2: v2}
		}
	}
}

// fail breaks the pipe: every call still waiting is answered, as not sent
// or as of unknown outcome, and the pipe leaves the store's set.
func (p *pipe) fail(err error) {
	p.mu.Lock()
	if p.broken != nil {
		p.mu.Unlock()
		return
	}
	p.broken = err
	// Whether each frame left is read here, under mu: the writer may
	// still correct it for a write that failed short of a frame, and a
	// frame it has not corrected yet is answered as of unknown outcome,
	// the safe side.
	answers := make(map[*pipeCall]pipeResult, len(p.calls))
	for _, pc := range p.calls {
		if pc.sent {
			answers[pc] = pipeResult{err: fmt.Errorf("connection to the leader lost with the frame unanswered: %w", err)}
		} else {
			answers[pc] = pipeResult{err: errNotSent{err}}
		}
	}
	p.calls = nil
	close(p.done)
	p.mu.Unlock()
	p.c.Close()
	for pc, res := range answers {
		pc.res <- res
	}
	p.s.dropPipe(p)
}

// errPipeSilent breaks a pipe on which a call timed out without the
// leader answering anything meanwhile.
var errPipeSilent = errors.New("the leader answered nothing before the call timed out")

// pipeTo returns a pipe to addr: an idle one, else a new one while fewer
// than maxPipes exist, else the least loaded. Pipes to any other address
// (a former leader), and retired ones, are closed once nothing waits on
// them.
func (s *Store) pipeTo(addr string, deadline time.Time) (*pipe, error) {
	s.fwdMu.Lock()
	if s.closed {
		s.fwdMu.Unlock()
		return nil, ErrClosed
	}
	var best *pipe
	bestLoad, live := 0, 0
	var stale []*pipe
	for _, p := range s.pipes {
		load := p.load()
		if p.addr != addr || p.retired.Load() {
			if load == 0 {
				stale = append(stale, p)
			}
			continue
		}
		live++
		if best == nil || load < bestLoad {
			best, bestLoad = p, load
		}
	}
	dial := !s.dialing && live < maxPipes && (best == nil || bestLoad > 0)
	if dial {
		s.dialing = true
	}
	s.fwdMu.Unlock()
	for _, p := range stale {
		p.fail(errors.New("the leader changed"))
	}
	if !dial {
		if best != nil {
			return best, nil
		}
		// Another caller is dialling the first pipe: wait for it.
		return s.waitPipe(addr, deadline)
	}
	p, err := s.dialPipe(addr, deadline)
	s.fwdMu.Lock()
	s.dialing = false
	if err == nil {
		if s.closed {
			s.fwdMu.Unlock()
			p.fail(ErrClosed)
			return nil, ErrClosed
		}
		s.pipes = append(s.pipes, p)
	}
	s.fwdMu.Unlock()
	s.pipeDialed.fire()
	if err != nil {
		if best != nil {
			return best, nil
		}
		return nil, err
	}
	return p, nil
}

// waitPipe waits for a dial under way to finish, then takes what there is.
func (s *Store) waitPipe(addr string, deadline time.Time) (*pipe, error) {
	for {
		ch := s.pipeDialed.next()
		s.fwdMu.Lock()
		dialing, closed := s.dialing, s.closed
		s.fwdMu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		if !dialing {
			return s.pipeTo(addr, deadline)
		}
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-ch:
		case <-t.C:
			return nil, errors.New("timed out waiting for a connection to the leader")
		case <-s.stop:
			t.Stop()
			return nil, ErrClosed
		}
		t.Stop()
	}
}

// dropPipe removes a broken pipe from the set.
func (s *Store) dropPipe(p *pipe) {
	s.fwdMu.Lock()
	defer s.fwdMu.Unlock()
	for i, q := range s.pipes {
		if q == p {
			s.pipes = append(s.pipes[:i], s.pipes[i+1:]...)
			return
		}
	}
}

// roundTrip sends one frame to addr over a pipe and waits for its answer
// until ctx ends.
func (s *Store) roundTrip(ctx context.Context, addr string, kind byte, payload []byte) (v, v2 uint64, status byte, err error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(s.cfg.ForwardTimeout)
	}
	p, err := s.pipeTo(addr, deadline)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return 0, 0, 0, err
		}
		return 0, 0, 0, errNotSent{err}
	}
	began := time.Now().UnixNano()
	pc := p.send(ctx, kind, payload)
	select {
	case r := <-pc.res:
		if kind == frameCommands && r.err == nil && r.status == statusNotLeader {
			p.retired.Store(true)
		}
		return r.v, r.v2, r.status, r.err
	case <-ctx.Done():
		p.forget(pc)
		if heard := p.heard.Load(); errors.Is(ctx.Err(), context.DeadlineExceeded) && heard < began &&
			time.Since(time.Unix(0, heard)) >= s.cfg.ForwardTimeout {
			// Nothing at all came back on this pipe while we waited, nor
			// for a forward's whole timeout: the leader is gone or cut
			// off, so stop sending it frames. A short call (an activity
			// report) timing out alone says only that the leader is
			// slow, and must not fail the frames sharing the pipe.
			p.fail(errPipeSilent)
		}
		return 0, 0, 0, ctx.Err()
	}
}

// handlePipe serves one inbound pipelined connection until it fails or
// the store closes. It runs on the mux's routing goroutine.
func (s *Store) handlePipe(c net.Conn) {
	if !s.admitForward(c) {
		return
	}
	defer s.releaseForward(c)

	replies := make(chan [pipeReplySize]byte, pipeQueue)
	done := make(chan struct{})
	var waiting sync.WaitGroup
	slots := make(chan struct{}, maxPipeWaiting)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		var buf []byte
		for {
			select {
			case r := <-replies:
				buf = append(buf[:0], r[:]...)
			case <-done:
				return
			}
		more:
			for len(buf) < 64<<10 {
				select {
				case r := <-replies:
					buf = append(buf, r[:]...)
				default:
					break more
				}
			}
			if _, err := c.Write(buf); err != nil {
				c.Close() // the reader sees it and ends the connection
				return
			}
		}
	}()
	reply := func(id uint32, status byte, v, v2 uint64) {
		var r [pipeReplySize]byte
		binary.BigEndian.PutUint32(r[:], id)
		r[4] = status
		binary.BigEndian.PutUint64(r[5:], v)
		binary.BigEndian.PutUint64(r[13:], v2)
		select {
		case replies <- r:
		case <-done:
		case <-writerDone:
		}
	}
	defer func() {
		close(done)
		waiting.Wait()
		<-writerDone
	}()

	r := bufio.NewReaderSize(c, 64<<10)
	var hdr [9]byte
	var frame []byte
	// beside serves the frame just read on a goroutine of its own, once
	// one of maxPipeWaiting slots is free; false if the store stops first.
	beside := func(serve func(payload []byte)) bool {
		select {
		case slots <- struct{}{}:
		case <-s.stop:
			return false
		}
		payload := append([]byte(nil), frame...)
		waiting.Go(func() {
			defer func() { <-slots }()
			serve(payload)
		})
		return true
	}
	refusing := false           // a command frame was refused: refuse the rest
	var streamEnd chan struct{} // closed to end the standing notice question
	for {
		if _, err := io.ReadFull(r, hdr[:4]); err != nil {
			return
		}
		n := int64(binary.BigEndian.Uint32(hdr[:4]))
		if n < 5 || n > s.cfg.MaxForwardFrame+5 {
			s.log.Warn("raftstore: bad forward frame", "len", n, "max", s.cfg.MaxForwardFrame, "remote", c.RemoteAddr().String())
			return
		}
		if _, err := io.ReadFull(r, hdr[4:9]); err != nil {
			return
		}
		id, kind := binary.BigEndian.Uint32(hdr[4:8]), hdr[8]
		// The buffer grows with the bytes that arrive, so a length that
		// lies costs nothing until the data is sent.
		frame = frame[:0]
		if _, err := io.CopyN(byteAppender{&frame}, r, n-5); err != nil {
			return
		}
		if kind == frameNotice || kind == frameNoticeStream {
			s.noticeQuestions.Add(1)
		}
		if kind == frameNoticeStream && s.cfg.streamlessNotices {
			kind = 0 // as unknown
		}
		switch kind {
		case frameNoticeStream:
			// One standing question per connection: a new one (the
			// follower forgot the last) ends the one before.
			if streamEnd != nil {
				close(streamEnd)
			}
			streamEnd = make(chan struct{})
			end := streamEnd
			if !beside(func(payload []byte) {
				s.streamNotices(payload, done, end, func(status byte, index, term uint64) {
					reply(id, status, index, term)
				})
			}) {
				return
			}
		case frameIndex, frameNotice, frameTouches, frameDigest, frameReconfig:
			// Touches too: a report of client activity must not wait
			// behind commands that wait for Raft to take them, or the
			// leader could expire sessions whose clients are answered.
			if !beside(func(payload []byte) {
				status, v, v2 := s.serveFrame(kind, payload)
				reply(id, status, v, v2)
			}) {
				return
			}
		case frameCommands:
			if refusing {
				reply(id, statusNotLeader, 0, 0)
				continue
			}
			status, v, v2 := s.serveFrame(kind, frame)
			refusing = status == statusNotLeader
			reply(id, status, v, v2)
		default:
			reply(id, statusFailed, 0, 0)
		}
		if cap(frame) > 1<<20 {
			frame = nil
		}
	}
}

// byteAppender is an io.Writer appending to a slice.
type byteAppender struct{ b *[]byte }

func (a byteAppender) Write(p []byte) (int, error) {
	*a.b = append(*a.b, p...)
	return len(p), nil
}

// admitForward registers an inbound forwarding connection, or closes it
// when the store is closed or serves maxForwardConns already. A peer may
// connect while this node is still starting (replaying its log); its
// frames wait until Raft is up.
func (s *Store) admitForward(c net.Conn) bool {
	select {
	case <-s.ready:
	case <-s.stop:
		c.Close()
		return false
	}
	s.fwdMu.Lock()
	if s.closed || len(s.inbound) >= maxForwardConns {
		full := !s.closed
		s.fwdMu.Unlock()
		if full {
			s.log.Warn("raftstore: too many forwarding connections; refusing one", "remote", c.RemoteAddr().String())
		}
		c.Close()
		return false
	}
	s.inbound[c] = struct{}{}
	s.handlers.Add(1)
	s.fwdMu.Unlock()
	return true
}

func (s *Store) releaseForward(c net.Conn) {
	s.fwdMu.Lock()
	delete(s.inbound, c)
	s.fwdMu.Unlock()
	c.Close()
	s.handlers.Done()
}
