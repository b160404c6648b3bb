package server

import (
	"net"
	"sync"
	"time"

	"github.com/hutchzk/hutch/wire"
)

// encodable is any response or event body.
type encodable interface {
	Encode(e *wire.Encoder)
}

// A client that does not read its replies must not cost more than about
// one reply's worth of memory. The reader stops reading the client's
// requests while more than queueHigh bytes of replies wait to be written
// (back-pressure: the client's own sends then block in TCP), and goes on
// once the writer has them below queueHigh again; a client that stays
// behind for its session timeout is disconnected (a ZooKeeper client that
// cannot read its pings times out the same way). What the reader cannot
// hold back (watch notifications, replies to writes already sent) is
// capped at maxOutbound: a frame queued past it closes the connection. Issue 26
// saw 20 clients that never read take a server to 2.83 GB, and keep it
// there after they left: a 64 MiB queue each, read on regardless.
const (
	queueHigh   = 256 << 10
	maxOutbound = 8 << 20
	// retainBuffer is the largest buffer the writer keeps for the next
	// batch: a larger one, grown by a burst, goes back to the heap.
	retainBuffer = 256 << 10
)

// outbound gathers frames for one connection and hands them to its writer
// goroutine, so every wake-up becomes one write system call however many
// replies and notifications piled up meanwhile.
type outbound struct {
	mu         sync.Mutex   // guards pending, inFlight, closed, closeAfter
	pending    wire.Encoder // frames not yet handed to the writer
	inFlight   int          // bytes the writer is writing now
	closed     bool         // no more frames are accepted
	closeAfter bool         // close the socket once pending is flushed
	wake       chan struct{}
	// drained gets a token whenever the writer finishes a write, for a
	// reader held back by waitRoom.
	drained chan struct{}
	done    chan struct{} // closed when the writer returns
}

func newOutbound() *outbound {
	return &outbound{wake: make(chan struct{}, 1), drained: make(chan struct{}, 1), done: make(chan struct{})}
}

// queued is how many bytes of replies wait for the client; mu is held.
func (o *outbound) queuedLocked() int { return o.pending.Len() + o.inFlight }

// waitRoom returns once fewer than queueHigh bytes of replies wait for
// the client (true at once, normally), or false when the connection
// closed or the client has not let them drain within limit.
func (o *outbound) waitRoom(limit time.Duration) bool {
	var timer *time.Timer
	for {
		o.mu.Lock()
		queued, closed := o.queuedLocked(), o.closed
		o.mu.Unlock()
		switch {
		case closed:
			return false
		case queued < queueHigh:
			if timer != nil {
				timer.Stop()
			}
			return true
		}
		if timer == nil {
			timer = time.NewTimer(limit)
		}
		select {
		case <-o.drained:
		case <-o.done:
			timer.Stop()
			return false
		case <-timer.C:
			return false
		}
	}
}

// send queues one frame: a reply header and an optional body. It reports
// false when the connection is closed or its queue overflowed.
func (o *outbound) send(h wire.ReplyHeader, body encodable) bool {
	o.mu.Lock()
	if o.closed || o.closeAfter {
		o.mu.Unlock()
		return false
	}
	// The cap is on what was already waiting: one reply goes whatever its
	// size, as ZooKeeper sends a getChildren of 10,000 long names (20 MB,
	// go-zookeeper's TestIntegration_Children) to a client that reads it.
	overflow := o.queuedLocked() > maxOutbound
	at := o.pending.BeginFrame()
	h.Encode(&o.pending)
	if body != nil {
		body.Encode(&o.pending)
	}
	o.pending.EndFrame(at)
	if overflow {
		o.closed = true
	}
	o.mu.Unlock()
	o.signal()
	return !overflow
}

// sendRaw queues bytes that carry their own framing (the connect response
// is framed like any other; four-letter answers are not framed at all).
func (o *outbound) sendRaw(b []byte) {
	o.mu.Lock()
	if !o.closed && !o.closeAfter {
		o.pending.Raw(b)
	}
	o.mu.Unlock()
	o.signal()
}

// finish asks the writer to flush what is queued and then close.
func (o *outbound) finish() {
	o.mu.Lock()
	o.closeAfter = true
	o.mu.Unlock()
	o.signal()
}

// abort drops anything queued and closes at once. It reports whether
// this call closed it.
func (o *outbound) abort() bool {
	o.mu.Lock()
	was := o.closed
	o.closed = true
	o.mu.Unlock()
	o.signal()
	return !was
}

func (o *outbound) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// writeLoop owns the socket's write side until the queue is closed or a write
// fails; it then closes the socket, which also ends the reader.
func (o *outbound) writeLoop(nc net.Conn, writeTimeout time.Duration, sent func(n int)) {
	var spare wire.Encoder
	defer close(o.done)
	defer nc.Close()
	for range o.wake {
		o.mu.Lock()
		closed, closeAfter := o.closed, o.closeAfter
		if !closed {
			o.pending, spare = spare, o.pending
			o.inFlight = spare.Len()
		}
		o.mu.Unlock()
		if closed {
			return
		}
		if spare.Len() > 0 {
			if writeTimeout > 0 {
				_ = nc.SetWriteDeadline(time.Now().Add(writeTimeout))
			}
			n, err := nc.Write(spare.Bytes())
			sent(n)
			if cap(spare.Bytes()) > retainBuffer {
				spare = wire.Encoder{} // a burst's buffer goes back to the heap
			} else {
				spare.Reset()
			}
			o.mu.Lock()
			o.inFlight = 0
			o.mu.Unlock()
			select {
			case o.drained <- struct{}{}:
			default:
			}
			if err != nil {
				o.abort()
				return
			}
		}
		if closeAfter {
			o.mu.Lock()
			empty := o.pending.Len() == 0
			if empty {
				o.closed = true
			}
			o.mu.Unlock()
			if empty {
				return
			}
			o.signal()
		}
	}
}
