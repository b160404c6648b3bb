package server

import (
	"net"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// authenticate handles an auth packet. digest adds "digest:user:hash" (and
// "super" when it matches the configured super digest); ip adds the
// connection's address; x509 succeeds only on a connection whose client
// certificate already gave it an x509 identity. Anything else fails, and as
// in ZooKeeper the connection is then closed after the AuthFailed reply.
func (c *conn) authenticate(h wire.RequestHeader) bool {
	var r wire.AuthPacket
	if !c.decode(h, &r) {
		return false
	}
	c.waitWrites()
	var added []wire.ID
	switch r.Scheme {
	case "digest":
		if id := tree.DigestID(string(r.Auth)); id != "" {
			added = append(added, wire.ID{Scheme: "digest", ID: id})
			if c.srv.cfg.SuperDigest != "" && id == c.srv.cfg.SuperDigest {
				added = append(added, wire.ID{Scheme: "super", ID: ""})
			}
		}
	case "ip":
		if net.ParseIP(c.ip) != nil {
			added = append(added, wire.ID{Scheme: "ip", ID: c.ip})
		}
	case schemeX509:
		added = c.certificateIdentities()
	}
	if len(added) == 0 {
		c.srv.log.Warn("authentication failed", "scheme", r.Scheme, "session", c.sessionID.Load(), "ip", c.ip)
	}
	if len(added) == 0 || !c.addIdentities(added) {
		c.srv.stats.authFailed.Add(1)
		c.reply(h.Xid, 0, errAuthFailed, nil)
		return false
	}
	c.reply(h.Xid, 0, nil, nil)
	return true
}
