package server

import (
	"net"
	"sort"

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
		c.srv.stats.authFailed.Add(1)
		c.reply(h.Xid, 0, errAuthFailed, nil)
		return false
	}
	c.addIdentities(added)
	c.reply(h.Xid, 0, nil, nil)
	return true
}

// addIdentities adds ids the connection does not have yet, in ZooKeeper's
// order.
func (c *conn) addIdentities(added []wire.ID) {
	current := c.identities()
	auth := make([]wire.ID, 0, len(current)+len(added))
	auth = append(auth, current...)
	for _, id := range added {
		if !containsID(auth, id) {
			auth = append(auth, id)
		}
	}
	javaSetOrder(auth)
	c.auth.Store(&auth)
}

// javaSetOrder puts identities in the order ZooKeeper iterates them: its
// connection keeps them in a ConcurrentHashMap-backed set, so the order is
// that of hash buckets, insertion order within one. The order shows in ACLs
// built from the "auth" scheme and in whoAmI.
func javaSetOrder(ids []wire.ID) {
	size := 16 // ConcurrentHashMap's default table, doubled past 3/4 full
	for len(ids) > size*3/4 {
		size *= 2
	}
	bucket := func(id wire.ID) int32 {
		h := 37*(37*17+wire.JavaStringHash(id.Scheme)) + wire.JavaStringHash(id.ID) // jute Id.hashCode
		spread := (h ^ int32(uint32(h)>>16)) & 0x7fffffff
		return spread & int32(size-1)
	}
	sort.SliceStable(ids, func(i, j int) bool { return bucket(ids[i]) < bucket(ids[j]) })
}

func containsID(ids []wire.ID, id wire.ID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
