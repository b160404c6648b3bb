package server

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/hutchzk/hutch/sasl"
	"github.com/hutchzk/hutch/wire"
)

// conn is one client connection. Its reader goroutine (serve) decodes and
// handles requests in order; its writer goroutine flushes replies in batches.
type conn struct {
	srv *Server
	nc  net.Conn
	id  int64 // connection id; keys this connection's watches
	ip  string
	out *outbound
	// secure is set on connections that came through the TLS port.
	secure bool
	// stats are this connection's counters (cons); cur is the request the
	// reader goroutine is answering, for replies it sends itself.
	stats *connStats
	cur   request

	sessionID atomic.Int64
	// timeout is the session's negotiated timeout, set with sessionID.
	timeout atomic.Int64
	// attachedAt (unix nanos) is when the handshake that created or
	// attached the session began: the leader applied that command later,
	// so it had heard of the session by then (see dropUnvouched).
	attachedAt atomic.Int64
	// auth lists the identities added to this connection. Only the reader
	// goroutine changes it, and only by swapping in a new slice, so
	// transactions in flight and the applier (which filters watch events by
	// it) may keep the slice they loaded.
	auth atomic.Pointer[[]wire.ID]
	// lastWrite is the newest write this connection proposed; a read waits for
	// it so that it sees this session's own writes.
	lastWrite *proposal
	// order numbers the commands this connection sends for its session
	// (zkdb.Command.Order). Only the reader goroutine uses it.
	order uint64
	dec   wire.Decoder
	// sasl is the connection's SASL exchange, made by its first sasl
	// request. Only the reader goroutine uses it.
	sasl *sasl.Server
}

// nextOrder numbers the connection's next command.
func (c *conn) nextOrder() uint64 {
	c.order++
	return c.order
}

func newConn(s *Server, nc net.Conn, id int64, ip string) *conn {
	c := &conn{
		srv: s,
		nc:  nc,
		id:  id,
		ip:  ip,
		out: newOutbound(),
	}
	c.stats = newConnStats(time.Now())
	_, c.secure = nc.(*tls.Conn)
	c.auth.Store(&[]wire.ID{{Scheme: "ip", ID: ip}})
	return c
}

// identities returns the connection's current auth identities.
func (c *conn) identities() []wire.ID { return *c.auth.Load() }

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

func (c *conn) logReadError(stage string, err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		c.srv.log.Debug("connection closed by peer", "stage", stage, "ip", c.ip, "session", c.sessionID.Load())
	default:
		c.srv.log.Info("closing connection", "stage", stage, "ip", c.ip, "session", c.sessionID.Load(), "err", err)
	}
}

// waitWrites blocks until this connection's earlier writes have applied.
func (c *conn) waitWrites() {
	if c.lastWrite != nil {
		c.srv.await(c.lastWrite)
		c.lastWrite = nil
	}
}

// reply queues a response whose zxid is the tree's last applied zxid.
func (c *conn) reply(xid int32, zxid int64, err error, body encodable) {
	code := errCode(err)
	if code != wire.CodeOK {
		body = nil
	}
	c.out.send(wire.ReplyHeader{Xid: xid, Zxid: zxid, Err: code}, body)
	c.answered(c.cur, zxid)
	c.cur = request{}
}

// replyTo queues the reply to a request this connection proposed, from
// the applier.
func (c *conn) replyTo(r request, zxid int64, err error, body encodable) {
	code := errCode(err)
	if code != wire.CodeOK {
		body = nil
	}
	c.out.send(wire.ReplyHeader{Xid: r.xid, Zxid: zxid, Err: code}, body)
	c.answered(r, zxid)
}

// notify queues a watch notification.
func (c *conn) notify(ev *wire.WatcherEvent) {
	c.out.send(wire.ReplyHeader{Xid: wire.XidNotification, Zxid: -1}, ev)
	c.srv.stats.packetsSent.Add(1)
	c.srv.stats.notifications.Add(1)
	c.stats.sent.Add(1)
}
