package faultnet

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"time"
)

// Shape is how a link degrades the bytes it carries, as a slow, narrow or
// lossy network does; the zero Shape leaves them alone. It is what
// toxiproxy's latency, bandwidth and loss toxics give a container, for a
// connection in the process.
type Shape struct {
	// Delay holds every byte back this long, one way.
	Delay time.Duration
	// Jitter varies each segment's delay uniformly within ±Jitter (never
	// below zero). Segments still arrive in order, as TCP delivers them:
	// one is never handed over before the one sent ahead of it.
	Jitter time.Duration
	// Rate limits the link to this many bytes a second; 0 is no limit.
	Rate int64
	// Loss is the fraction of segments lost, 0 to 1. TCP sends a lost
	// segment again, so the reader gets it late rather than never: a loss
	// costs a retransmission timeout (RetransmitTimeout, doubled each
	// time the same segment is lost again) and holds back everything
	// sent after it, which is what loss does to an application on TCP.
	Loss float64
}

// IsZero reports whether s leaves traffic alone.
func (s Shape) IsZero() bool { return s == Shape{} }

// Plus is the shape of traffic that crosses both s and o: delays and
// jitters add, the narrower rate limits, and a segment is lost if either
// loses it.
func (s Shape) Plus(o Shape) Shape {
	rate := s.Rate
	if rate == 0 || (o.Rate > 0 && o.Rate < rate) {
		rate = o.Rate
	}
	return Shape{Delay: s.Delay + o.Delay, Jitter: s.Jitter + o.Jitter, Rate: rate,
		Loss: 1 - (1-s.Loss)*(1-o.Loss)}
}

// Check reports a shape that cannot be applied.
func (s Shape) Check() error {
	switch {
	case s.Delay < 0 || s.Jitter < 0:
		return errors.New("delay and jitter must not be negative")
	case s.Rate < 0:
		return errors.New("rate must not be negative")
	case !(s.Loss >= 0 && s.Loss < 1):
		return errors.New("loss must be a fraction from 0 up to (not including) 1")
	}
	return nil
}

const (
	// RetransmitTimeout is what one lost segment costs: Linux's minimum
	// TCP retransmission timeout.
	RetransmitTimeout = 200 * time.Millisecond
	// segmentSize is the unit of loss and jitter: a loopback-free
	// Ethernet segment's payload.
	segmentSize = 1448
	// shapedBuffer is how many bytes one direction holds in flight before
	// a writer waits, about a socket's send buffer.
	shapedBuffer = 256 << 10
	// maxBackoff bounds how often one segment's retransmission doubles,
	// and maxLosses how often it is lost.
	maxBackoff = 6
	maxLosses  = 10
)

// lossDraw draws the chance a segment is lost; tests replace it.
var lossDraw = randFloat

var randFloat = rand.Float64

// Shaped wraps c so that the bytes written through it cross a link shaped
// by out() and the bytes read through it one shaped by in(), each asked
// again for every write and every chunk read, so a test may change or
// heal the shape at any time. While a direction's shape is zero and
// nothing is in flight its bytes go straight through, with no goroutine.
// Deadlines hold as on a socket; bytes in flight when the connection is
// closed are lost, as a socket's unsent buffer is.
func Shaped(c net.Conn, out, in func() Shape) net.Conn {
	s := &shapedConn{Conn: c, closed: make(chan struct{})}
	s.out = line{shape: out, closed: s.closed}
	s.in = line{shape: in, closed: s.closed}
	return s
}

// shapedConn is a connection with a delay line each way.
type shapedConn struct {
	net.Conn
	out, in   line
	readMu    sync.Mutex // serialises Read: the direct read and the pump's start
	writeMu   sync.Mutex // serialises Write, so segments queue in order
	closeOnce sync.Once
	closed    chan struct{}

	rd, wd deadline // what the caller set, enforced while bytes are in flight
}

// segment is a run of bytes, or the error that ended the stream, handed
// over at due.
type segment struct {
	data []byte
	err  error
	due  time.Time
}

// line is one direction: the segments in flight, in order.
type line struct {
	shape  func() Shape
	closed <-chan struct{}

	mu      sync.Mutex // guards the fields below
	queue   []segment
	queued  int       // bytes in queue
	lastDue time.Time // no segment is due before the one ahead of it
	free    time.Time // when a rate-limited link has sent what it was given
	pumping bool      // a goroutine moves this direction's bytes
	failed  error     // the outbound pump's write error, returned by the next Write
	changed chan struct{}
}

// wake tells waiters the line changed; mu is held.
func (l *line) wake() {
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// waitChange returns a channel closed at the line's next change; mu is
// held.
func (l *line) waitChange() <-chan struct{} {
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

// idle reports whether bytes may bypass the line: nothing in flight, no
// pump, and a zero shape. mu is held.
func (l *line) idle(sh Shape) bool { return len(l.queue) == 0 && !l.pumping && sh.IsZero() }

// schedule appends b, cut into segments each given its due time by sh;
// mu is held.
func (l *line) schedule(b []byte, err error, sh Shape) {
	now := time.Now()
	for len(b) > 0 || err != nil {
		n := min(len(b), segmentSize)
		seg := segment{data: append([]byte(nil), b[:n]...)}
		b = b[n:]
		if len(b) == 0 {
			seg.err, err = err, nil
		}
		sent := now
		if sh.Rate > 0 {
			sent = later(now, l.free).Add(time.Duration(float64(n) / float64(sh.Rate) * float64(time.Second)))
			l.free = sent
		}
		delay := sh.Delay
		if sh.Jitter > 0 {
			delay += time.Duration(rand.Int64N(2*int64(sh.Jitter)+1)) - sh.Jitter
		}
		due := sent.Add(max(delay, 0))
		if sh.Loss > 0 && n > 0 {
			// Each loss of the same segment doubles the timeout, as
			// TCP's exponential backoff does.
			for k := 0; k < maxLosses && lossDraw() < sh.Loss; k++ {
				due = due.Add(RetransmitTimeout << min(k, maxBackoff))
			}
		}
		seg.due = later(due, l.lastDue)
		l.lastDue = seg.due
		l.queue = append(l.queue, seg)
		l.queued += n
	}
	l.wake()
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// head waits for the first segment to come due and returns it, still
// queued; dl bounds the wait (nil for none). It returns false when the
// connection closed, the deadline passed, or, with stopIfEmpty, the line
// emptied.
func (l *line) head(dl *deadline, stopIfEmpty bool) (segment, error, bool) {
	for {
		l.mu.Lock()
		if len(l.queue) == 0 && stopIfEmpty {
			l.pumping = false
			l.wake()
			l.mu.Unlock()
			return segment{}, nil, false
		}
		var wait <-chan time.Time
		var timer *time.Timer
		if len(l.queue) > 0 {
			d := time.Until(l.queue[0].due)
			if d <= 0 {
				seg := l.queue[0]
				l.mu.Unlock()
				return seg, nil, true
			}
			timer = time.NewTimer(d)
			wait = timer.C
		}
		changed := l.waitChange()
		l.mu.Unlock()
		var expire <-chan time.Time
		var moved <-chan struct{}
		var dlTimer *time.Timer
		if dl != nil {
			at, ch := dl.get()
			moved = ch
			if !at.IsZero() {
				left := time.Until(at)
				if left <= 0 {
					stop(timer)
					return segment{}, os.ErrDeadlineExceeded, false
				}
				dlTimer = time.NewTimer(left)
				expire = dlTimer.C
			}
		}
		var err error
		select {
		case <-wait:
		case <-changed:
		case <-moved:
		case <-expire:
			err = os.ErrDeadlineExceeded
		case <-l.closed:
			err = net.ErrClosed
		}
		stop(timer)
		stop(dlTimer)
		if err != nil {
			return segment{}, err, false
		}
	}
}

func stop(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// take removes n bytes from the head segment, and the segment once it is
// used up (its error with it when err is set).
func (l *line) take(n int, all bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seg := &l.queue[0]
	seg.data = seg.data[n:]
	l.queued -= n
	if all || (len(seg.data) == 0 && seg.err == nil) {
		l.queue = l.queue[1:]
	}
	l.wake()
}

// Write queues b on the outbound line, or writes it straight through
// while the line is idle and unshaped.
func (c *shapedConn) Write(b []byte) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	l := &c.out
	sh := l.shape()
	l.mu.Lock()
	if err := l.failed; err != nil {
		l.mu.Unlock()
		return 0, err
	}
	if l.idle(sh) {
		l.mu.Unlock()
		return c.Conn.Write(b)
	}
	l.mu.Unlock()
	written := 0
	for written < len(b) {
		l.mu.Lock()
		for l.queued >= shapedBuffer {
			ch := l.waitChange()
			l.mu.Unlock()
			if err := c.wd.waitOn(ch, c.closed); err != nil {
				return written, c.opError("write", err)
			}
			l.mu.Lock()
		}
		if err := l.failed; err != nil {
			l.mu.Unlock()
			return written, err
		}
		n := min(len(b)-written, shapedBuffer-l.queued)
		l.schedule(b[written:written+n], nil, sh)
		written += n
		if !l.pumping {
			l.pumping = true
			go c.pumpOut()
		}
		l.mu.Unlock()
	}
	return written, nil
}

// pumpOut writes the outbound segments as they come due, until the line
// is empty.
func (c *shapedConn) pumpOut() {
	l := &c.out
	for {
		seg, _, ok := l.head(nil, true)
		if !ok {
			return
		}
		_, err := c.Conn.Write(seg.data)
		l.take(len(seg.data), true)
		if err != nil {
			l.mu.Lock()
			l.failed = err
			l.queue, l.queued, l.pumping = nil, 0, false
			l.wake()
			l.mu.Unlock()
			return
		}
	}
}

// Read takes bytes from the inbound line once due, or reads straight
// through while the line is idle and unshaped.
func (c *shapedConn) Read(b []byte) (int, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	l := &c.in
	l.mu.Lock()
	if l.idle(l.shape()) {
		l.mu.Unlock()
		n, err := c.Conn.Read(b)
		sh := l.shape()
		if n == 0 || sh.IsZero() {
			return n, err
		}
		// Shaped while this read waited: the bytes arrived after the
		// shape was set, so they take it.
		l.mu.Lock()
		l.schedule(b[:n], err, sh)
		if err == nil {
			l.pumping = true
			go c.pumpIn()
		}
	} else if !l.pumping && len(l.queue) == 0 {
		l.pumping = true
		go c.pumpIn()
	}
	l.mu.Unlock()
	seg, err, ok := l.head(&c.rd, false)
	if !ok {
		return 0, c.opError("read", err)
	}
	n := copy(b, seg.data)
	if n < len(seg.data) || seg.err == nil {
		l.take(n, false)
		return n, nil
	}
	l.take(n, true) // the end of the stream, after its last bytes
	return n, seg.err
}

// pumpIn reads from the connection into the inbound line, each chunk due
// when the shape says, until the stream ends or the shape is healed.
func (c *shapedConn) pumpIn() {
	l := &c.in
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Conn.Read(buf)
		var ne net.Error
		if n == 0 && errors.As(err, &ne) && ne.Timeout() {
			// The caller's own read deadline, set on the socket too:
			// it is the caller's Read that times out; go on once the
			// deadline moves.
			at, moved := c.rd.get()
			if at.IsZero() || time.Until(at) > 0 {
				continue
			}
			select {
			case <-moved:
				continue
			case <-c.closed:
				err = net.ErrClosed
			}
		}
		l.mu.Lock()
		l.schedule(buf[:n], err, l.shape())
		done := err != nil || l.shape().IsZero()
		if done {
			l.pumping = false
		}
		l.mu.Unlock()
		if done {
			return
		}
	}
}

// SetDeadline sets both deadlines.
func (c *shapedConn) SetDeadline(t time.Time) error {
	c.rd.set(t)
	c.wd.set(t)
	return c.Conn.SetDeadline(t)
}

// SetReadDeadline bounds reads, on the socket and on bytes in flight.
func (c *shapedConn) SetReadDeadline(t time.Time) error {
	c.rd.set(t)
	return c.Conn.SetReadDeadline(t)
}

// SetWriteDeadline bounds writes: a direct one on the socket, a queued
// one while it waits for room in flight.
func (c *shapedConn) SetWriteDeadline(t time.Time) error {
	c.wd.set(t)
	return c.Conn.SetWriteDeadline(t)
}

// Close closes the connection; bytes still in flight are lost.
func (c *shapedConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		err = c.Conn.Close()
	})
	return err
}

func (c *shapedConn) opError(op string, err error) error {
	if _, ok := err.(*net.OpError); ok {
		return err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// deadline is one direction's deadline as the caller set it.
type deadline struct {
	mu      sync.Mutex // guards at and changed
	at      time.Time
	changed chan struct{}
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.at = t
	if d.changed != nil {
		close(d.changed)
	}
	d.changed = make(chan struct{})
}

func (d *deadline) get() (time.Time, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.changed == nil {
		d.changed = make(chan struct{})
	}
	return d.at, d.changed
}

// waitOn waits for ch, failing when the deadline passes or closed closes.
func (d *deadline) waitOn(ch <-chan struct{}, closed <-chan struct{}) error {
	for {
		at, moved := d.get()
		var expire <-chan time.Time
		var t *time.Timer
		if !at.IsZero() {
			left := time.Until(at)
			if left <= 0 {
				return os.ErrDeadlineExceeded
			}
			t = time.NewTimer(left)
			expire = t.C
		}
		select {
		case <-ch:
			stop(t)
			return nil
		case <-moved:
			stop(t)
		case <-expire:
			return os.ErrDeadlineExceeded
		case <-closed:
			stop(t)
			return net.ErrClosed
		}
	}
}
