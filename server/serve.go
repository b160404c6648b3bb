package server

import (
	"bufio"
	"errors"
	"io"
	"net"
	"time"

	"github.com/hutchzk/hutch/wire"
)

// serve runs the connection until it closes: the handshake, then requests.
func (c *conn) serve() {
	s := c.srv
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.out.writeLoop(c.nc, s.cfg.MaxSessionTimeout, func(n int) {
			s.stats.bytesSent.Add(int64(n))
		})
	}()
	defer func() {
		c.out.finish()
		select {
		case <-writerDone:
		case <-time.After(s.cfg.MaxSessionTimeout):
			c.out.abort()
			<-writerDone
		}
		_ = c.nc.Close()
		c.abandon()
		s.unregister(c)
	}()

	br := bufio.NewReaderSize(c.nc, 64<<10)
	// A client that connects and says nothing is dropped after the longest
	// session timeout; after the handshake session expiry takes over.
	_ = c.nc.SetReadDeadline(time.Now().Add(s.cfg.MaxSessionTimeout))
	if word, err := br.Peek(4); err == nil {
		if c.fourLetterWord(string(word)) {
			return
		}
	}
	var buf []byte
	frame, err := wire.ReadFrame(br, s.cfg.MaxFrameSize, buf)
	if err != nil {
		c.logReadError("handshake", err)
		c.out.abort()
		return
	}
	var req wire.ConnectRequest
	c.dec.Reset(frame)
	req.Decode(&c.dec)
	if err := c.dec.Err(); err != nil {
		s.log.Warn("closing connection: malformed connect request", "ip", c.ip, "err", err)
		c.out.abort()
		return
	}
	c.received(len(frame))
	c.cur = c.begin(wire.OpCreateSession, 0)
	if !c.connect(&req) {
		return
	}
	_ = c.nc.SetReadDeadline(time.Time{})
	for {
		// Back-pressure: no next request while the client has not read
		// the replies already queued (outbound.go).
		if patience := c.readerPatience(); !c.out.waitRoom(patience) {
			if c.out.abort() {
				s.log.Warn("closing connection: the client has not read its replies", "for", patience,
					"session", c.sessionID.Load(), "ip", c.ip)
			}
			return
		}
		if cap(frame) > retainBuffer {
			frame = nil // a large request's buffer goes back to the heap
		}
		frame, err = wire.ReadFrame(br, s.cfg.MaxFrameSize, frame)
		if err != nil {
			c.logReadError("request", err)
			c.out.abort()
			return
		}
		c.received(len(frame))
		if !c.touch() {
			s.log.Info("closing connection: session no longer exists", "session", c.sessionID.Load(), "ip", c.ip)
			return
		}
		if !c.handle(frame) {
			return
		}
	}
}

// readerPatience is how long a client may leave its replies unread before
// it is disconnected: its session timeout, in which its own pings would
// go unanswered too.
func (c *conn) readerPatience() time.Duration {
	if t := time.Duration(c.timeout.Load()); t > 0 {
		return t
	}
	return c.srv.cfg.MaxSessionTimeout
}

func (c *conn) logReadError(stage string, err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		c.srv.log.Debug("connection closed by peer", "stage", stage, "ip", c.ip, "session", c.sessionID.Load())
	default:
		c.srv.log.Info("closing connection", "stage", stage, "ip", c.ip, "session", c.sessionID.Load(), "err", err)
	}
}
