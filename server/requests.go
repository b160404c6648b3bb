package server

import (
	"errors"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// handle decodes one request frame and answers it in order. It reports false
// when the connection must close.
func (c *conn) handle(frame []byte) bool {
	s := c.srv
	d := &c.dec
	d.Reset(frame)
	var h wire.RequestHeader
	h.Decode(d)
	if d.Err() != nil {
		s.log.Warn("closing connection: malformed request header", "session", c.sessionID.Load(), "ip", c.ip, "err", d.Err())
		return false
	}
	c.cur = c.begin(h.Type, h.Xid)
	switch h.Type {
	case wire.OpPing:
		// ZooKeeper answers every ping with xid -2, whatever xid it carried.
		c.waitWrites()
		c.reply(wire.XidPing, c.lastZxid(), nil, nil)
		return true
	case wire.OpCloseSession:
		p := s.closeSession(c.sessionID.Load(), c, h.Xid, 0)
		if p != nil {
			s.await(p)
		}
		return false
	case wire.OpAuth:
		return c.authenticate(h)
	case wire.OpSetWatches, wire.OpSetWatches2:
		return c.setWatches(h)
	case wire.OpSASL:
		return c.saslStep(h)
	}
	if tree.IsClientWrite(h.Type) {
		req, ok := c.decodeWrite(h)
		if !ok {
			return false
		}
		return c.propose(h, req, len(frame))
	}
	if isRead(h.Type) {
		c.waitWrites()
		return c.read(h)
	}
	// An unknown opcode gets Unimplemented (zxid -1) and the connection
	// closes, as in ZooKeeper's UnimplementedRequestProcessor.
	s.log.Warn("closing connection: unknown opcode", "op", int32(h.Type), "session", c.sessionID.Load(), "ip", c.ip)
	c.waitWrites()
	c.reply(h.Xid, -1, tree.ErrUnimplemented, nil)
	return false
}

// fourLetterWord answers word if it is one, and reports whether it was.
func (c *conn) fourLetterWord(word string) bool {
	s := c.srv
	if !s.monitor.IsWord(word) {
		return false
	}
	c.received(4)
	s.log.Debug("four-letter word", "cmd", word, "ip", c.ip)
	c.out.sendRaw([]byte(s.monitor.Answer(word)))
	s.stats.packetsSent.Add(1)
	return true
}

type decodable interface {
	Decode(d *wire.Decoder)
}

// decode reads a request body, reporting whether it decoded.
func (c *conn) decode(h wire.RequestHeader, r decodable) bool {
	r.Decode(&c.dec)
	if err := c.dec.Err(); err != nil {
		c.srv.log.Info("request body does not decode", "op", int32(h.Type), "session", c.sessionID.Load(), "ip", c.ip, "err", err)
		return false
	}
	return true
}

// badBody answers a read whose body did not decode as ZooKeeper's
// FinalRequestProcessor does: MARSHALLINGERROR on its xid, at the last
// zxid, and the connection carries on.
func (c *conn) badBody(h wire.RequestHeader) bool {
	c.waitWrites()
	c.reply(h.Xid, c.lastZxid(), tree.ErrMarshallingError, nil)
	return true
}

func (c *conn) lastZxid() int64 { return c.srv.db.LastZxid() }

func isRead(op wire.OpCode) bool {
	switch op {
	case wire.OpExists, wire.OpGetData, wire.OpGetACL, wire.OpGetChildren, wire.OpGetChildren2,
		wire.OpSync, wire.OpGetEphemerals, wire.OpGetAllChildrenNumber, wire.OpCheckWatches,
		wire.OpRemoveWatches, wire.OpAddWatch, wire.OpWhoAmI, wire.OpMultiRead:
		return true
	}
	return false
}

// errCode maps an internal error to the code on the wire: the one place
// where that happens.
func errCode(err error) wire.Code {
	if err == nil {
		return wire.CodeOK
	}
	if ce, ok := err.(codeError); ok {
		return ce.code
	}
	if errors.Is(err, zkdb.ErrSessionMoved) {
		return wire.CodeSessionMoved
	}
	return tree.ToCode(err)
}

// codeError carries a wire code for failures that never reach the tree.
type codeError struct{ code wire.Code }

func (e codeError) Error() string { return e.code.String() }

var (
	errNoWatcher  = codeError{wire.CodeNoWatcher}
	errAuthFailed = codeError{wire.CodeAuthFailed}
)
