package nemesis

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hutchzk/hutch/wire"
)

// rawSession is what a raw client needs to open a session or re-attach
// one on another node.
type rawSession struct {
	id       int64
	passwd   []byte
	timeout  time.Duration // as negotiated
	lastZxid int64         // highest zxid seen in a reply
}

// rawConn is one connection of the raw client: ZooKeeper's handshake and
// framing over the wire package and nothing else, so the pipelined writer
// sees every xid and every reply in the order it came. One goroutine
// sends (queue, flush) and one reads (next).
type rawConn struct {
	nc          net.Conn
	r           *bufio.Reader
	rbuf        []byte
	enc         wire.Encoder
	recvTimeout time.Duration // no byte for this long: the server is gone
}

// errExpired is a handshake answered with no session: the server says the
// session expired.
var errExpired = errors.New("session expired")

// emptyPasswd is what a client sends when it has no session yet.
var emptyPasswd = make([]byte, 16)

// dialRaw connects to addr and opens a session, or re-attaches s when it
// has one; want is the session timeout to ask for. The handshake is
// bounded by limit.
func dialRaw(addr string, s *rawSession, want, limit time.Duration) (*rawConn, error) {
	nc, err := net.DialTimeout("tcp", addr, limit)
	if err != nil {
		return nil, err
	}
	c := &rawConn{nc: nc, r: bufio.NewReader(nc), rbuf: make([]byte, 4096)}
	_ = nc.SetDeadline(time.Now().Add(limit))
	passwd := s.passwd
	if s.id == 0 {
		passwd = emptyPasswd
	}
	req := wire.ConnectRequest{
		LastZxidSeen: s.lastZxid,
		Timeout:      int32(want / time.Millisecond),
		SessionID:    s.id,
		Passwd:       passwd,
	}
	resp, err := wire.Handshake(nc, c.r, &req)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("handshake: %w", err)
	}
	if resp.SessionID == 0 || resp.Timeout <= 0 {
		nc.Close()
		return nil, errExpired
	}
	if s.id != 0 && resp.SessionID != s.id {
		nc.Close()
		return nil, fmt.Errorf("re-attach of session 0x%x answered with session 0x%x", s.id, resp.SessionID)
	}
	s.id, s.passwd = resp.SessionID, resp.Passwd
	s.timeout = time.Duration(resp.Timeout) * time.Millisecond
	c.recvTimeout = s.timeout * 2 / 3 // as the Java client and go-zookeeper
	_ = nc.SetDeadline(time.Time{})
	return c, nil
}

// queue encodes one request frame; flush sends what is queued.
func (c *rawConn) queue(xid int32, op wire.OpCode, req wire.Message) {
	at := c.enc.BeginFrame()
	h := wire.RequestHeader{Xid: xid, Type: op}
	h.Encode(&c.enc)
	if req != nil {
		req.Encode(&c.enc)
	}
	c.enc.EndFrame(at)
}

// flush writes every queued frame in one write, bounded by the receive
// timeout: a server that takes nothing for that long is gone.
func (c *rawConn) flush() error {
	if c.enc.Len() == 0 {
		return nil
	}
	if c.recvTimeout > 0 {
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.recvTimeout))
	}
	_, err := c.nc.Write(c.enc.Bytes())
	c.enc.Reset()
	return err
}

// rawReply is one reply: its header, and for a successful create (the
// only request with a body in its answer that the raw client sends) the
// path created.
type rawReply struct {
	hdr  wire.ReplyHeader
	path string
}

// next reads one reply. Pings keep replies coming, so silence longer
// than the receive timeout means the server is gone.
func (c *rawConn) next() (rawReply, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(c.recvTimeout))
	body, err := wire.ReadFrame(c.r, wire.DefaultMaxFrame, c.rbuf)
	if err != nil {
		return rawReply{}, err
	}
	var rep rawReply
	d := wire.NewDecoder(body)
	rep.hdr.Decode(d)
	if rep.hdr.Xid > 0 && rep.hdr.Err == wire.CodeOK && d.Remaining() > 0 {
		var cr wire.CreateResponse
		cr.Decode(d)
		rep.path = cr.Path
	}
	if d.Err() != nil {
		return rawReply{}, fmt.Errorf("reply to xid %d: %w", rep.hdr.Xid, d.Err())
	}
	return rep, nil
}

func (c *rawConn) close() { c.nc.Close() }
