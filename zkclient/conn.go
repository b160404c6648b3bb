package zkclient

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hutchzk/hutch/wire"
)

// call is one request waiting for its reply.
type call struct {
	op        wire.OpCode
	xid       int32
	resp      wire.Message          // decoded from a successful reply; nil for none
	decode    func(d *wire.Decoder) // decodes any reply with a body, instead of resp
	onReply   func(wire.Code)
	hdr       wire.ReplyHeader
	err       error         // the reply could not be decoded
	eventMark uint64        // events queued before the reply arrived
	done      chan struct{} // closed once hdr (or a loss) is in
}

// conn is one TCP connection of a Client. Callers write requests under
// wmu, so xids go out in the order they are given; one reader goroutine
// matches replies, which ZooKeeper sends in request order, to the oldest
// pending call, and queues notifications.
type conn struct {
	c       *Client
	nc      net.Conn
	r       *bufio.Reader
	timeout time.Duration // negotiated session timeout
	dead    chan struct{} // closed when the connection has ended

	wmu     sync.Mutex // guards enc, writes to nc, pending, auths and closed
	enc     wire.Encoder
	pending []*call
	auths   []chan wire.Code // waiters of authentications sent, nil for re-sent ones
	closed  bool

	gone bool // guarded by Client.mu: the reader has ended
}

func newConn(c *Client, nc net.Conn) *conn {
	return &conn{c: c, nc: nc, r: bufio.NewReaderSize(nc, 64<<10), dead: make(chan struct{})}
}

// close shuts the socket; the reader then fails what is pending.
func (cn *conn) close() { cn.nc.Close() }

// frame writes one request frame; wmu must be held. A write that fails
// closes the socket, so the reader ends and fails every pending call.
func (cn *conn) frameLocked(xid int32, op wire.OpCode, req wire.Message) {
	cn.enc.Reset()
	at := cn.enc.BeginFrame()
	(&wire.RequestHeader{Xid: xid, Type: op}).Encode(&cn.enc)
	if req != nil {
		req.Encode(&cn.enc)
	}
	cn.enc.EndFrame(at)
	_ = cn.nc.SetWriteDeadline(time.Now().Add(cn.timeout))
	if _, err := cn.nc.Write(cn.enc.Bytes()); err != nil {
		cn.nc.Close()
	}
}

// send queues cl and writes its request; a connection already closed
// fails it at once with CONNECTIONLOSS.
func (cn *conn) send(cl *call, req wire.Message) {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	if cn.closed {
		cl.hdr.Err = wire.CodeConnectionLoss
		close(cl.done)
		return
	}
	cn.c.mu.Lock()
	cn.c.lastXid++
	cl.xid = cn.c.lastXid
	cn.c.mu.Unlock()
	cn.pending = append(cn.pending, cl)
	cn.frameLocked(cl.xid, cl.op, req)
}

// sendAuth writes an authentication packet; its answer goes to wait (nil:
// nobody waits, as for the ones re-sent on reconnect).
func (cn *conn) sendAuth(p *wire.AuthPacket, wait chan wire.Code) bool {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	if cn.closed {
		return false
	}
	cn.auths = append(cn.auths, wait)
	cn.frameLocked(wire.XidAuth, wire.OpAuth, p)
	return true
}

// sendSpecial writes a request with a reserved xid whose answer nobody
// waits for (ping, setWatches2).
func (cn *conn) sendSpecial(xid int32, op wire.OpCode, req wire.Message) {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	if !cn.closed {
		cn.frameLocked(xid, op, req)
	}
}

// pingLoop pings every third of the session timeout so the server keeps
// the session and the reader hears something well within its deadline.
func (cn *conn) pingLoop() {
	t := time.NewTicker(cn.timeout / 3)
	defer t.Stop()
	for {
		select {
		case <-cn.dead:
			return
		case <-t.C:
			cn.sendSpecial(wire.XidPing, wire.OpPing, nil)
		}
	}
}

// failPending ends every call still waiting with code.
func (cn *conn) failPending(code wire.Code) {
	cn.wmu.Lock()
	cn.closed = true
	pending, auths := cn.pending, cn.auths
	cn.pending, cn.auths = nil, nil
	cn.wmu.Unlock()
	for _, cl := range pending {
		cl.hdr.Err = code
		close(cl.done)
	}
	for _, w := range auths {
		if w != nil {
			w <- code
		}
	}
}

// readLoop reads replies until the connection fails. Hearing nothing for
// two thirds of the session timeout, as the Java client, counts as a loss.
func (cn *conn) readLoop() {
	err := cn.read()
	cn.nc.Close()
	cn.c.lost(cn, err)
	close(cn.dead)
}

func (cn *conn) read() error {
	idle := cn.timeout * 2 / 3
	buf := make([]byte, 4096)
	for {
		_ = cn.nc.SetReadDeadline(time.Now().Add(idle))
		body, err := wire.ReadFrame(cn.r, wire.DefaultMaxFrame, buf)
		if err != nil {
			return err
		}
		d := wire.NewDecoder(body)
		var h wire.ReplyHeader
		h.Decode(d)
		if d.Err() != nil {
			return fmt.Errorf("reply header: %w", d.Err())
		}
		switch h.Xid {
		case wire.XidNotification:
			var ev wire.WatcherEvent
			ev.Decode(d)
			if d.Err() != nil {
				return fmt.Errorf("notification: %w", d.Err())
			}
			e := Event{Type: ev.Type, State: ev.State, Path: ev.Path}
			cn.c.mu.Lock()
			cn.c.watches.fired(e)
			cn.c.mu.Unlock()
			cn.c.events.push(e)
		case wire.XidPing, wire.XidSetWatches:
		case wire.XidAuth:
			if err := cn.authReply(h.Err); err != nil {
				return err
			}
		default:
			if err := cn.reply(h, d); err != nil {
				return err
			}
		}
	}
}

// authReply hands an authentication's answer to its waiter. A refusal
// ends the session: the server closes the connection after sending it.
func (cn *conn) authReply(code wire.Code) error {
	cn.wmu.Lock()
	var w chan wire.Code
	if len(cn.auths) > 0 {
		w, cn.auths = cn.auths[0], cn.auths[1:]
	}
	cn.wmu.Unlock()
	if code == wire.CodeAuthFailed {
		cn.c.authFailed()
	}
	if w != nil {
		w <- code
	}
	if code == wire.CodeAuthFailed {
		return fmt.Errorf("authentication refused")
	}
	return nil
}

// reply completes the oldest pending call, which must be the one answered.
func (cn *conn) reply(h wire.ReplyHeader, d *wire.Decoder) error {
	cn.wmu.Lock()
	if len(cn.pending) == 0 || cn.pending[0].xid != h.Xid {
		cn.wmu.Unlock()
		return fmt.Errorf("reply with xid %d out of order", h.Xid)
	}
	cl := cn.pending[0]
	cn.pending = cn.pending[1:]
	cn.wmu.Unlock()

	cl.hdr = h
	switch {
	case cl.decode != nil && d.Remaining() > 0:
		cl.decode(d)
	case cl.resp != nil && h.Err == wire.CodeOK:
		cl.resp.Decode(d)
	}
	if d.Err() != nil {
		cl.err = fmt.Errorf("zkclient: reply to %v: %w", cl.op, d.Err())
	}
	cn.c.mu.Lock()
	if h.Zxid > 0 {
		cn.c.lastZxid = h.Zxid
	}
	if cl.onReply != nil {
		cl.onReply(h.Err)
	}
	cn.c.mu.Unlock()
	cl.eventMark = cn.c.events.mark()
	close(cl.done)
	return nil
}
