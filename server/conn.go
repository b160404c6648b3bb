package server

import (
	"crypto/tls"
	"net"
	"sort"
	"time"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

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

// reply queues a response whose zxid is the tree's last applied zxid.
func (c *conn) reply(xid int32, zxid int64, err error, body encodable) {
	code := errCode(err)
	if code != wire.CodeOK {
		body = nil
	}
	c.answered(c.cur, zxid) // counted first: see replyTo
	c.cur = request{}
	c.out.send(wire.ReplyHeader{Xid: xid, Zxid: zxid, Err: code}, body)
}

// replyTo queues the reply to a request this connection proposed, from
// the applier.
func (c *conn) replyTo(r request, zxid int64, err error, body encodable) {
	code := errCode(err)
	if code != wire.CodeOK {
		body = nil
	}
	// Counted before it is queued, as ZooKeeper's final processor counts
	// a response before it sends it: the writer may deliver the reply at
	// once, and a client that then asks cons or mntr must find it counted.
	c.answered(r, zxid)
	c.out.send(wire.ReplyHeader{Xid: r.xid, Zxid: zxid, Err: code}, body)
}

// notify queues a watch notification.
func (c *conn) notify(ev *wire.WatcherEvent) {
	c.srv.stats.packetsSent.Add(1)
	c.srv.stats.notifications.Add(1)
	c.stats.sent.Add(1)
	c.out.send(wire.ReplyHeader{Xid: wire.XidNotification, Zxid: -1}, ev)
}

// received counts one request frame read from the connection.
func (c *conn) received(n int) {
	c.srv.stats.packetsReceived.Add(1)
	c.srv.stats.bytesReceived.Add(int64(n))
	c.stats.received.Add(1)
}

// begin marks a request as outstanding until its reply.
func (c *conn) begin(op wire.OpCode, xid int32) request {
	c.srv.stats.outstanding.Add(1)
	c.stats.outstanding.Add(1)
	return request{op: op, xid: xid, start: time.Now()}
}

// answered counts a reply to r: packets sent, and, for requests that
// ZooKeeper's FinalRequestProcessor answers, latency and the connection's
// last operation.
func (c *conn) answered(r request, zxid int64) {
	s := c.srv
	s.stats.packetsSent.Add(1)
	c.stats.sent.Add(1)
	if r.start.IsZero() {
		return
	}
	// A reply that comes after the connection gave up its requests
	// (abandon) must not count them twice.
	for n := c.stats.outstanding.Load(); ; n = c.stats.outstanding.Load() {
		if n <= 0 {
			break
		}
		if c.stats.outstanding.CompareAndSwap(n, n-1) {
			s.stats.outstanding.Add(-1)
			break
		}
	}
	if r.op == wire.OpAuth || r.op == wire.OpSASL {
		return // answered by the connection itself, as in ZooKeeper
	}
	now := time.Now()
	ms := c.stats.replied(r, zxid, now)
	s.stats.durations.Observe(requestKind(r.op), now.Sub(r.start))
	s.stats.latency.add(ms)
}

// abandon gives up the connection's outstanding requests when it closes.
func (c *conn) abandon() {
	if n := c.stats.outstanding.Swap(0); n != 0 {
		c.srv.stats.outstanding.Add(-n)
	}
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

// Bounds on a connection's identities. ZooKeeper bounds them only by the
// packet size, and hutch used to send them with every write; they still
// cost memory on every read's ACL check and in what a write with an
// "auth" ACL carries. Past a bound, addAuth (or a SASL login) fails with
// AUTHFAILED and the connection is closed, as a failed addAuth is. A
// client adds a few at most: digest names are short, and a certificate or
// SASL login adds one.
const (
	maxIdentities     = 16
	maxIdentityBytes  = 16 << 10
	identityOverheads = 16 // per identity, for its two strings
)

// addIdentities adds ids the connection does not have yet, in ZooKeeper's
// order. It reports false, adding none, when they would take the
// connection past maxIdentities or maxIdentityBytes.
func (c *conn) addIdentities(added []wire.ID) bool {
	current := c.identities()
	auth := make([]wire.ID, 0, len(current)+len(added))
	auth = append(auth, current...)
	size := 0
	for _, id := range added {
		if !containsID(auth, id) {
			auth = append(auth, id)
		}
	}
	for _, id := range auth {
		size += len(id.Scheme) + len(id.ID) + identityOverheads
	}
	if len(auth) > maxIdentities || size > maxIdentityBytes {
		c.srv.log.Warn("authentication refused: the connection would hold too many identities",
			"identities", len(auth), "bytes", size, "max", maxIdentities, "max_bytes", maxIdentityBytes,
			"session", c.sessionID.Load(), "ip", c.ip)
		return false
	}
	javaSetOrder(auth)
	c.auth.Store(&auth)
	return true
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
