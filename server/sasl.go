package server

import (
	"crypto/rand"

	"github.com/hutchzk/hutch/sasl"
	"github.com/hutchzk/hutch/wire"
)

// saslStep answers a sasl request (GetSASLRequest{token}), as
// ZooKeeperServer.processSasl does. Without SASL users ZooKeeper has no SASL
// server for the connection and answers OK with a null token, adding no
// identity. With them, each connection runs one DIGEST-MD5 exchange:
// the answer carries the server's token, and the last one adds the identity
// "sasl:<user>". A token the exchange refuses gets AuthFailed (zxid 0, a
// null token) and the connection closes; so does one after the exchange
// ended. It reports false when the connection must close.
func (c *conn) saslStep(h wire.RequestHeader) bool {
	c.waitWrites()
	users := c.srv.cfg.SASLUsers
	if len(users) == 0 {
		c.sendSASL(h.Xid, wire.CodeOK, nil)
		return true
	}
	token := c.dec.Buffer()
	if err := c.dec.Err(); err != nil {
		c.srv.log.Warn("closing connection: malformed sasl request", "session", c.sessionID.Load(), "ip", c.ip, "err", err)
		return false
	}
	if token == nil {
		// ZooKeeper reads the token's length before anything else and
		// fails on a null one: the connection closes with no answer.
		c.srv.log.Warn("closing connection: null sasl token", "session", c.sessionID.Load(), "ip", c.ip)
		return false
	}
	if c.sasl == nil {
		c.sasl = sasl.NewServer(func(user string) (string, bool) {
			p, ok := users[user]
			return p, ok
		}, rand.Reader)
	}
	answer, err := c.sasl.Step(token)
	if err != nil {
		c.srv.log.Warn("closing connection: sasl authentication failed", "session", c.sessionID.Load(), "ip", c.ip, "err", err)
		c.srv.stats.authFailed.Add(1)
		c.sendSASL(h.Xid, wire.CodeAuthFailed, nil)
		return false
	}
	if c.sasl.Done() {
		id := c.sasl.AuthorizationID()
		c.srv.log.Info("sasl authenticated", "session", c.sessionID.Load(), "ip", c.ip, "id", id)
		if !c.addIdentities([]wire.ID{{Scheme: "sasl", ID: id}}) {
			c.srv.stats.authFailed.Add(1)
			c.sendSASL(h.Xid, wire.CodeAuthFailed, nil)
			return false
		}
	}
	c.sendSASL(h.Xid, wire.CodeOK, answer)
	return true
}

// sendSASL queues a SetSASLResponse. Unlike other replies it carries its
// body (a null token) even with an error, as ZooKeeper sends it.
func (c *conn) sendSASL(xid int32, code wire.Code, token []byte) {
	c.answered(c.cur, 0) // counted first: see replyTo
	c.cur = request{}
	c.out.send(wire.ReplyHeader{Xid: xid, Err: code}, saslToken(token))
}

// saslToken is a SetSASLResponse: a jute buffer, nil written as null.
type saslToken []byte

func (t saslToken) Encode(e *wire.Encoder) { e.Buffer(t) }
