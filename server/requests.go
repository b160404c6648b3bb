package server

import (
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
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
	if c.readOnly.Load() {
		switch {
		case h.Type == wire.OpCloseSession:
			c.closeReadOnlySession(h.Xid)
			return false
		case readOnlyRefuses(h.Type):
			c.reply(h.Xid, c.lastZxid(), errNotReadOnly, nil)
			return true
		}
	}
	switch h.Type {
	case wire.OpPing:
		// ZooKeeper answers every ping with xid -2, whatever xid it carried.
		// A ping waits for the replies of earlier writes, except a
		// reconfig's: its outcome may take a while (the leader asks the
		// members of the new configuration), and clients handle ping
		// replies apart from the others, so answering keeps them from
		// timing out meanwhile.
		if c.pendingReconfig == nil {
			c.waitWrites()
		}
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
	case wire.OpReconfig:
		return c.reconfig(h, frame[len(frame)-d.Remaining():])
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
