package conformance

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hutchzk/hutch/wire"
)

// diffClient is one session of the differential checker, speaking the
// protocol by hand so that every error code, Stat field and notification
// reaches the comparison untouched by a client library. It is driven by
// one goroutine and reads synchronously: a request's reply is read in the
// same call, and notifications met on the way are kept, in order, for the
// next drain. Nothing reads the socket between calls, so no goroutine needs
// an owner; the kernel buffers what the server sends meanwhile.
type diffClient struct {
	nc      net.Conn
	r       *bufio.Reader
	enc     wire.Encoder
	buf     []byte
	xid     int32
	session int64
	passwd  []byte
	timeout int32
	events  []wire.WatcherEvent // received since the last takeEvents
	dead    error               // set once the connection failed
}

// diffIOTimeout bounds every read and write. Only a hung server reaches it.
const diffIOTimeout = 20 * time.Second

// diffSessionTimeout is the timeout asked for: long enough that no session
// of a run expires, within ZooKeeper's default bounds (4 s to 40 s).
const diffSessionTimeout = 30000

// errNoReply marks a connection that ended before the awaited reply.
var errNoReply = errors.New("connection ended before the reply")

// dialDiff opens a connection and creates a new session, or re-attaches
// session id with passwd when id is not zero.
func dialDiff(addr string, id int64, passwd []byte) (*diffClient, error) {
	nc, err := net.DialTimeout("tcp", addr, diffIOTimeout)
	if err != nil {
		return nil, err
	}
	c := &diffClient{nc: nc, r: bufio.NewReader(nc)}
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	req := wire.ConnectRequest{Timeout: diffSessionTimeout, SessionID: id, Passwd: passwd}
	_ = nc.SetDeadline(time.Now().Add(diffIOTimeout))
	resp, err := wire.Handshake(nc, c.r, &req)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect response: %w", err)
	}
	_ = nc.SetDeadline(time.Time{})
	if resp.Timeout <= 0 {
		nc.Close()
		return nil, fmt.Errorf("session refused (timeout %d)", resp.Timeout)
	}
	c.session, c.passwd, c.timeout = resp.SessionID, resp.Passwd, resp.Timeout
	return c, nil
}

func (c *diffClient) write() error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(diffIOTimeout))
	_, err := c.nc.Write(c.enc.Bytes())
	return err
}

func (c *diffClient) readFrame() ([]byte, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(diffIOTimeout))
	b, err := wire.ReadFrame(c.r, 16<<20, c.buf)
	if err == nil && cap(b) > cap(c.buf) {
		c.buf = b[:0]
	}
	return b, err
}

// send writes one request with the given xid and body (nil for none).
func (c *diffClient) send(xid int32, op wire.OpCode, body wire.Message) error {
	if c.dead != nil {
		return c.dead
	}
	c.enc.Reset()
	at := c.enc.BeginFrame()
	(&wire.RequestHeader{Xid: xid, Type: op}).Encode(&c.enc)
	if body != nil {
		body.Encode(&c.enc)
	}
	c.enc.EndFrame(at)
	if err := c.write(); err != nil {
		c.dead = err
		return err
	}
	return nil
}

// await reads frames until the reply to xid, keeping notifications, and
// returns its header and a decoder over its body. The body is only valid
// until the next read.
func (c *diffClient) await(xid int32) (wire.ReplyHeader, *wire.Decoder, error) {
	for {
		if c.dead != nil {
			return wire.ReplyHeader{}, nil, c.dead
		}
		body, err := c.readFrame()
		if err != nil {
			c.dead = fmt.Errorf("%w: %v", errNoReply, err)
			return wire.ReplyHeader{}, nil, c.dead
		}
		d := wire.NewDecoder(body)
		var h wire.ReplyHeader
		h.Decode(d)
		if d.Err() != nil {
			c.dead = fmt.Errorf("decode reply header: %w", d.Err())
			return h, nil, c.dead
		}
		if h.Xid == wire.XidNotification {
			var ev wire.WatcherEvent
			ev.Decode(d)
			if d.Err() != nil {
				c.dead = fmt.Errorf("decode notification: %w", d.Err())
				return h, nil, c.dead
			}
			c.events = append(c.events, ev)
			continue
		}
		if h.Xid != xid {
			c.dead = fmt.Errorf("reply xid %d, want %d", h.Xid, xid)
			return h, nil, c.dead
		}
		return h, d, nil
	}
}

// call sends a request with the next xid and awaits its reply.
func (c *diffClient) call(op wire.OpCode, body wire.Message) (wire.ReplyHeader, *wire.Decoder, error) {
	c.xid++
	if err := c.send(c.xid, op, body); err != nil {
		return wire.ReplyHeader{}, nil, err
	}
	return c.await(c.xid)
}

// takeEvents returns the notifications received so far and forgets them.
func (c *diffClient) takeEvents() []wire.WatcherEvent {
	ev := c.events
	c.events = nil
	return ev
}

// closeSession ends the session and the connection. Notifications that
// arrive before the reply stay in events.
func (c *diffClient) closeSession() (wire.ReplyHeader, error) {
	h, _, err := c.call(wire.OpCloseSession, nil)
	c.nc.Close()
	if err == nil {
		c.dead = errors.New("session closed")
	}
	return h, err
}

// abandon closes the connection without ending the session.
func (c *diffClient) abandon() { c.nc.Close() }
