package server

import (
	"bytes"
	"sync"
	"time"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// Read-only mode, as ZooKeeper's readonlymode.enabled: a member of an
// ensemble that has known no leader (it lost its quorum) for
// ReadOnlyGrace starts serving clients that asked to be served read-only
// (canBeReadOnly), from its own state, as ZooKeeper's
// ReadOnlyZooKeeperServer does:
//
//   - a client that did not ask for read-only, or re-attaches a session of
//     the ensemble, or has seen a zxid this member has not, is refused (its
//     connection closed, no answer);
//   - a new session is this member's own (ZooKeeper's local session): it is
//     not replicated, expires here, may re-attach here, and is gone when the
//     member leaves read-only mode; the connect response says readOnly;
//   - reads are answered; every write, sync, check, multi and reconfig is
//     answered NOTREADONLY with the member's last zxid
//     (ReadOnlyRequestProcessor);
//   - isro answers ro, srvr says Mode: read-only.
//
// When a leader is known again the member closes every read-only
// connection, as ZooKeeper shuts its read-only server down, and serves as
// before; the clients reconnect, and a session created read-only is
// expired to the ensemble. Without ReadOnlyMode a member without a leader
// serves nobody.

// ReadOnlyGrace is how long a member goes without a leader before it
// serves read-only clients: ZooKeeper's max(2s, tickTime).
func ReadOnlyGrace(tick time.Duration) time.Duration { return max(2*time.Second, tick) }

// readOnlyState is this member's read-only mode: whether it is on and the
// sessions it created meanwhile.
type readOnlyState struct {
	mu       sync.Mutex // guards on and sessions
	on       bool
	sessions map[int64]*roSession
}

// roSession is a session a member created in read-only mode.
type roSession struct {
	passwd  []byte
	timeout time.Duration
	last    time.Time // the client's last request
	conn    *conn     // its connection; nil between connections
}

// isReadOnly reports whether the server serves read-only clients now.
func (s *Server) isReadOnly() bool {
	s.ro.mu.Lock()
	defer s.ro.mu.Unlock()
	return s.ro.on
}

// enterReadOnly starts read-only mode, with ReadOnlyMode set; the
// connections open until now, which expected a read-write server, are
// closed.
func (s *Server) enterReadOnly() {
	if !s.cfg.ReadOnlyMode {
		return
	}
	s.ro.mu.Lock()
	if s.ro.on {
		s.ro.mu.Unlock()
		return
	}
	s.ro.on = true
	s.ro.sessions = make(map[int64]*roSession)
	s.ro.mu.Unlock()
	open := s.openConns()
	s.log.Warn("no leader: serving read-only clients (readonlymode.enabled)", "closing", len(open))
	for _, c := range open {
		c.out.abort()
	}
}

// leaveReadOnly ends read-only mode, closing every connection it served.
func (s *Server) leaveReadOnly() {
	s.ro.mu.Lock()
	if !s.ro.on {
		s.ro.mu.Unlock()
		return
	}
	s.ro.on = false
	sessions := s.ro.sessions
	s.ro.sessions = nil
	s.ro.mu.Unlock()
	s.log.Info("a leader is known again: read-only mode ends, closing its connections", "sessions", len(sessions))
	for _, c := range s.openConns() {
		if c.readOnly.Load() {
			c.out.abort()
		}
	}
}

// connectReadOnly answers a handshake in read-only mode; false if the
// connection ends.
func (c *conn) connectReadOnly(req *wire.ConnectRequest, timeout time.Duration, began time.Time) bool {
	s := c.srv
	if !req.ReadOnly {
		s.log.Info("refusing session request for not-read-only client: no leader", "ip", c.ip)
		return false
	}
	if last := s.db.LastZxid(); req.LastZxidSeen > last {
		s.log.Info("refusing read-only session: client saw a newer zxid", "clientZxid", req.LastZxidSeen, "lastZxid", last, "ip", c.ip)
		return false
	}
	if req.SessionID != 0 {
		if _, _, ok := s.db.Session(req.SessionID); ok {
			s.log.Info("refusing a session of the ensemble in read-only mode", "session", req.SessionID, "ip", c.ip)
			return false
		}
	}
	now := s.clock.Now()
	s.ro.mu.Lock()
	if !s.ro.on {
		// Read-only mode ended while the client waited: it must
		// connect again, and is now served as any other.
		s.ro.mu.Unlock()
		return false
	}
	id, pw := req.SessionID, []byte(nil)
	var moved *conn
	if id == 0 {
		id, pw = s.nextSessionID(), newPassword()
		s.ro.sessions[id] = &roSession{passwd: pw, timeout: timeout, last: now, conn: c}
	} else if rs := s.ro.sessions[id]; rs != nil && bytes.Equal(rs.passwd, req.Passwd) {
		pw, moved = rs.passwd, rs.conn
		rs.timeout, rs.last, rs.conn = timeout, now, c
	}
	if pw != nil {
		c.readOnly.Store(true)
	}
	s.ro.mu.Unlock()
	if pw == nil {
		s.log.Info("refusing re-attach in read-only mode: session expired or wrong password", "session", id, "ip", c.ip)
		c.sendConnectResponse(&wire.ConnectResponse{Passwd: make([]byte, 16), ReadOnly: true})
		c.out.finish()
		return false
	}
	if moved != nil && moved != c {
		moved.out.abort()
	}
	c.attach(id, timeout, began)
	s.log.Debug("read-only session", "session", id, "timeout", timeout, "ip", c.ip)
	c.sendConnectResponse(&wire.ConnectResponse{Timeout: int32(timeout / time.Millisecond), SessionID: id, Passwd: pw, ReadOnly: true})
	return true
}

// touchReadOnly records activity on a read-only session; false once it
// is gone (expired, or read-only mode over).
func (s *Server) touchReadOnly(c *conn) bool {
	s.ro.mu.Lock()
	defer s.ro.mu.Unlock()
	rs := s.ro.sessions[c.sessionID.Load()]
	if rs == nil || rs.conn != c {
		return false
	}
	rs.last = s.clock.Now()
	return true
}

// closeReadOnlySession ends the connection's read-only session, as a
// local session's closeSession: answered with the member's last zxid.
func (c *conn) closeReadOnlySession(xid int32) {
	s := c.srv
	s.ro.mu.Lock()
	delete(s.ro.sessions, c.sessionID.Load())
	s.ro.mu.Unlock()
	c.reply(xid, c.lastZxid(), nil, nil)
	c.out.finish()
}

// expireReadOnlySessions ends the read-only sessions not heard from for
// their timeout, as ZooKeeper's tracker of a learner's local sessions
// does, and closes their connections.
func (s *Server) expireReadOnlySessions(now time.Time) {
	var gone []*conn
	s.ro.mu.Lock()
	for id, rs := range s.ro.sessions {
		if now.Sub(rs.last) > rs.timeout {
			delete(s.ro.sessions, id)
			if rs.conn != nil {
				gone = append(gone, rs.conn)
			}
			s.log.Info(sessionExpiredMsg, "session", id, "readOnly", true)
		}
	}
	s.ro.mu.Unlock()
	for _, c := range gone {
		c.out.abort()
	}
}

// detachReadOnly forgets a closed connection's place in its read-only
// session, which may re-attach until it expires.
func (s *Server) detachReadOnly(c *conn) {
	s.ro.mu.Lock()
	defer s.ro.mu.Unlock()
	if rs := s.ro.sessions[c.sessionID.Load()]; rs != nil && rs.conn == c {
		rs.conn = nil
	}
}

// readOnlyRefuses reports whether a read-only connection must answer op
// NOTREADONLY: every write, sync, check, multi and reconfig
// (ReadOnlyRequestProcessor's list).
func readOnlyRefuses(op wire.OpCode) bool {
	return op == wire.OpSync || tree.IsClientWrite(op)
}
