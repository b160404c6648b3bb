package server

import (
	"bytes"
	"time"

	"github.com/hutchzk/hutch/session"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// connect answers a handshake: a new session, or re-attaching an existing one
// with its id and password. It reports whether the connection carries on.
func (c *conn) connect(req *wire.ConnectRequest) bool {
	s := c.srv
	s.treeMu.RLock()
	last := s.tree.LastZxid()
	s.treeMu.RUnlock()
	if req.LastZxidSeen > last {
		// The client has seen a newer state than ours; ZooKeeper refuses so the
		// client moves on to a server that is caught up.
		s.log.Warn("refusing session: client saw a newer zxid", "clientZxid", req.LastZxidSeen, "lastZxid", last, "ip", c.ip)
		return false
	}
	timeout := session.NegotiateTimeout(time.Duration(req.Timeout)*time.Millisecond, s.cfg.MinSessionTimeout, s.cfg.MaxSessionTimeout)
	if req.SessionID == 0 {
		return c.createSession(timeout)
	}
	return c.reattach(req.SessionID, req.Passwd, timeout)
}

func (c *conn) createSession(timeout time.Duration) bool {
	s := c.srv
	s.sessMu.Lock()
	id := s.ids.Next()
	s.sessMu.Unlock()
	pw := newPassword()
	p := &proposal{
		txn: tree.Txn{Session: id, Op: wire.OpCreateSession,
			Req: &tree.CreateSession{ID: id, Timeout: int32(timeout / time.Millisecond), Passwd: pw}},
		conn: c,
	}
	if !s.submit(p) {
		return false
	}
	<-p.done
	if !p.committed {
		return false
	}
	c.attach(id)
	s.log.Debug("session created", "session", id, "timeout", timeout, "ip", c.ip)
	c.sendConnectResponse(&wire.ConnectResponse{Timeout: int32(timeout / time.Millisecond), SessionID: id, Passwd: pw})
	return true
}

func (c *conn) reattach(id int64, passwd []byte, timeout time.Duration) bool {
	s := c.srv
	// In an ensemble, first catch up with the leader, as a ZooKeeper
	// follower revalidates a session with its leader: the session may
	// have closed elsewhere, and a write the client sent before it lost
	// its connection may have committed since, under a new leader. The
	// client must see that write, or a lock recipe that looks for its own
	// node after a connection loss would miss it and queue twice.
	if err := s.syncReplica(); err != nil {
		s.log.Info("refusing re-attach: cannot catch up with the leader", "session", id, "ip", c.ip, "err", err)
		return false
	}
	// A session moves to its newest connection; the old one is closed, as
	// ZooKeeper closes it when a client reconnects elsewhere.
	s.connsMu.Lock()
	old := s.sessionConns[id]
	s.connsMu.Unlock()
	if old != nil && old != c {
		s.log.Info("closing connection: session re-attached elsewhere", "session", id, "ip", old.ip)
		old.out.abort()
	}
	s.treeMu.RLock()
	_, pw, ok := s.tree.Session(id)
	s.treeMu.RUnlock()
	if ok {
		s.sessMu.Lock()
		_, ok = s.tracker.Timeout(id)
		if ok {
			s.tracker.Add(id, timeout, s.cfg.Clock.Now())
		}
		s.sessMu.Unlock()
	}
	if !ok || !bytes.Equal(pw, passwd) {
		s.log.Info("refusing re-attach: session expired or wrong password", "session", id, "ip", c.ip)
		// Timeout 0 tells the client its session is gone.
		c.sendConnectResponse(&wire.ConnectResponse{Passwd: make([]byte, 16)})
		c.out.finish()
		return false
	}
	c.attach(id)
	s.log.Debug("session re-attached", "session", id, "ip", c.ip)
	c.sendConnectResponse(&wire.ConnectResponse{Timeout: int32(timeout / time.Millisecond), SessionID: id, Passwd: pw})
	return true
}

func (c *conn) attach(id int64) {
	c.sessionID.Store(id)
	c.srv.connsMu.Lock()
	c.srv.sessionConns[id] = c
	c.srv.connsMu.Unlock()
}

func (c *conn) sendConnectResponse(r *wire.ConnectResponse) {
	var e wire.Encoder
	at := e.BeginFrame()
	r.Encode(&e)
	e.EndFrame(at)
	c.out.sendRaw(e.Bytes())
}

// touch records activity on the connection's session.
func (c *conn) touch() bool {
	s := c.srv
	id := c.sessionID.Load()
	s.sessMu.Lock()
	ok := s.tracker.Touch(id, s.cfg.Clock.Now())
	s.sessMu.Unlock()
	if rc, replicated := s.commit.(*raftCommitter); ok && replicated {
		rc.noteTouch(id)
	}
	return ok
}

// expiryLoop closes sessions when their bucket's time comes. It sleeps until
// the earliest bucket (at most a tick, since a new session's bucket is always
// later than that), so expiry lands within [timeout, timeout+tick].
func (s *Server) expiryLoop() {
	timer := time.NewTimer(s.cfg.TickTime)
	defer timer.Stop()
	for {
		wait := s.cfg.TickTime
		s.sessMu.Lock()
		next, ok := s.tracker.NextDeadline()
		s.sessMu.Unlock()
		if ok {
			if d := next.Sub(s.cfg.Clock.Now()); d < wait {
				wait = d
			}
		}
		if wait < time.Millisecond {
			wait = time.Millisecond
		}
		timer.Reset(wait)
		select {
		case <-s.ctx.Done():
			return
		case <-timer.C:
			s.ExpireSessions()
		}
	}
}

// ExpireSessions closes every session whose timeout has run out by the
// server's clock. The expiry loop calls it; tests with their own clock may too.
func (s *Server) ExpireSessions() {
	if !s.isLeader() {
		return // the leader owns expiry; followers forward touches to it
	}
	s.sessMu.Lock()
	expired := s.tracker.Expired(s.cfg.Clock.Now())
	s.sessMu.Unlock()
	for _, id := range expired {
		s.log.Info("session expired", "session", id)
		s.closeSession(id, nil, 0)
	}
}

// closeSession removes a session and its ephemerals in one transaction, then
// closes the connection attached to it. origin, when set, is the connection
// that asked (it gets the reply); otherwise the session expired.
func (s *Server) closeSession(id int64, origin *conn, xid int32) *proposal {
	s.sessMu.Lock()
	s.tracker.Remove(id)
	s.sessMu.Unlock()
	p := &proposal{
		txn:  tree.Txn{Session: id, Op: wire.OpCloseSession},
		conn: origin,
		xid:  xid,
		applied: func(p *proposal, res *tree.Result) {
			if p.conn != nil {
				p.conn.out.send(wire.ReplyHeader{Xid: p.xid, Zxid: p.txn.Zxid, Err: errCode(res.Err)}, nil)
			}
		},
	}
	if !s.submit(p) {
		return nil
	}
	return p
}

// cleanupLoop deletes empty containers and expired TTL nodes, as ZooKeeper's
// ContainerManager does, through ordinary transactions.
func (s *Server) cleanupLoop() {
	t := time.NewTicker(s.cfg.ContainerCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.CleanupContainers()
		}
	}
}

// CleanupContainers proposes the deletion of every empty container and
// expired TTL node.
func (s *Server) CleanupContainers() {
	s.treeMu.RLock()
	paths := s.tree.ExpiryCandidates(s.cfg.Clock.Now().UnixMilli())
	s.treeMu.RUnlock()
	var last *proposal
	for _, path := range paths {
		p := &proposal{txn: tree.Txn{Op: wire.OpDeleteContainer, Req: &wire.PathRequest{Path: path}}}
		if !s.submit(p) {
			return
		}
		last = p
	}
	if last != nil {
		<-last.done
	}
}
