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

// maxOutbound bounds the replies queued for one slow reader; past it the
// connection is closed rather than letting one client exhaust memory.
const maxOutbound = 64 << 20

// outbound gathers frames for one connection and hands them to its writer
// goroutine, so every wake-up becomes one write system call however many
// replies and notifications piled up meanwhile.
type outbound struct {
	mu         sync.Mutex   // guards pending, closed, closeAfter
	pending    wire.Encoder // frames not yet handed to the writer
	closed     bool         // no more frames are accepted
	closeAfter bool         // close the socket once pending is flushed
	wake       chan struct{}
}

func newOutbound() *outbound {
	return &outbound{wake: make(chan struct{}, 1)}
}

// send queues one frame: a reply header and an optional body. It reports
// false when the connection is closed or its queue overflowed.
func (o *outbound) send(h wire.ReplyHeader, body encodable) bool {
	o.mu.Lock()
	if o.closed || o.closeAfter {
		o.mu.Unlock()
		return false
	}
	at := o.pending.BeginFrame()
	h.Encode(&o.pending)
	if body != nil {
		body.Encode(&o.pending)
	}
	o.pending.EndFrame(at)
	overflow := o.pending.Len() > maxOutbound
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
	defer nc.Close()
	for range o.wake {
		o.mu.Lock()
		closed, closeAfter := o.closed, o.closeAfter
		if !closed {
			o.pending, spare = spare, o.pending
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
			spare.Reset()
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
