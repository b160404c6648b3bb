package server

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hutchzk/hutch/session"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// connect answers a handshake: a new session, or re-attaching an existing one
// with its id and password. It reports whether the connection carries on.
func (c *conn) connect(req *wire.ConnectRequest) bool {
	s := c.srv
	began := time.Now()
	timeout := session.NegotiateTimeout(time.Duration(req.Timeout)*time.Millisecond, s.cfg.MinSessionTimeout, s.cfg.MaxSessionTimeout)
	if s.removed.Load() {
		// Four-letter words are answered ("not currently serving"), but
		// no session: the client moves on to a member.
		s.log.Info("refusing session: this server is not a member of the ensemble", "ip", c.ip)
		return false
	}
	if s.isReadOnly() {
		return c.connectReadOnly(req, timeout, began)
	}
	if req.SessionID != 0 {
		// In an ensemble, first catch up with the leader, as a ZooKeeper
		// follower revalidates a session with its leader: the session may
		// have closed elsewhere, and a write the client sent before it
		// lost its connection may have committed since, under a new
		// leader. The client must see that write, or a lock recipe that
		// looks for its own node after a connection loss would miss it and
		// queue twice.
		// No longer than a third of the session's timeout: a member that
		// cannot catch up by then (resyncing from empty, cut off from the
		// leader one way) refuses, and the client has the rest of the
		// timeout to reach one that is current, as a ZooKeeper follower
		// not in sync takes no clients at all. Holding it for the whole
		// timeout let its session expire with a healthy leader in reach.
		ctx, cancel := context.WithTimeout(s.ctx, timeout/3)
		err := s.catchUp(ctx)
		cancel()
		if err != nil && s.leaderSilent(timeout/6) {
			// But while no leader is heard (it died, an election is
			// under way), no member is more current than this one and
			// moving on gains the client nothing: the member that wins,
			// or follows the winner, serves first. Wait for that within
			// the session's timeout, as before the bound (go-zookeeper's
			// client gives up a queued request after trying every
			// member once, which refusing each after a third made it do
			// while the election ran).
			ctx, cancel := context.WithDeadline(s.ctx, began.Add(timeout))
			err = s.catchUp(ctx)
			cancel()
		}
		if err != nil {
			s.log.Info("refusing re-attach: cannot catch up with the leader", "session", req.SessionID, "ip", c.ip, "err", err)
			return false
		}
	}
	if last := s.db.LastZxid(); req.LastZxidSeen > last {
		// The client has seen a newer state than ours; ZooKeeper refuses so the
		// client moves on to a server that is caught up.
		s.log.Warn("refusing session: client saw a newer zxid", "clientZxid", req.LastZxidSeen, "lastZxid", last, "ip", c.ip)
		return false
	}
	if req.SessionID == 0 {
		return c.createSession(timeout, began)
	}
	return c.reattach(req.SessionID, req.Passwd, timeout, began)
}

// sessionIDTries bounds how many ids createSession mints for one client.
// After the first collision the generator skips past every id of this
// server in use, so the second try succeeds unless two members share a
// server id; the bound keeps such an ensemble from looping.
const sessionIDTries = 3

// createSession registers a new session for the client. Applying the
// create refuses an id already in use (tree.ErrSessionExists), the same on
// every replica: this server's clock may be behind the run that minted
// that id. It then mints another, past every id of this server in use.
func (c *conn) createSession(timeout time.Duration, began time.Time) bool {
	s := c.srv
	for try := 1; ; try++ {
		id := s.nextSessionID()
		pw := newPassword()
		p := &proposal{
			cmd: zkdb.Command{Conn: c.id, Kind: zkdb.KindTxn, Txn: tree.Txn{Session: id, Op: wire.OpCreateSession,
				Req: &tree.CreateSession{ID: id, Timeout: int32(timeout / time.Millisecond), Passwd: pw}}},
			conn: c,
		}
		if !s.submit(p) || !s.await(p) {
			return false
		}
		if errors.Is(p.err, tree.ErrSessionExists) && try < sessionIDTries {
			last, _ := s.db.LastSessionID(id)
			s.log.Warn("session id already in use (this server's clock is behind the run that minted it); minting another",
				"session", id, "lastInUse", last)
			s.idsMu.Lock()
			s.ids.SkipPast(last)
			s.idsMu.Unlock()
			continue
		}
		if p.err != nil {
			s.log.Warn("session not created", "session", id, "ip", c.ip, "err", p.err)
			return false
		}
		c.attach(id, timeout, began)
		s.log.Debug("session created", "session", id, "timeout", timeout, "ip", c.ip)
		c.sendConnectResponse(&wire.ConnectResponse{Timeout: int32(timeout / time.Millisecond), SessionID: id, Passwd: pw})
		return true
	}
}

// reattach moves a session to this connection. The move is a command in
// the replicated log, so every node learns the session's new owner: from
// then on a write still in flight from the old connection is refused
// (SESSIONMOVED) wherever it arrives, instead of committing after this
// connection's writes. Its old connection, wherever it is, is dropped, as
// ZooKeeper closes it when a client reconnects elsewhere — but only once
// the password has been checked. ZooKeeper 3.8 closes the session's current
// connection before it checks the password; hutch does not, on purpose:
// session ids are shown by cons and dump, so anyone could otherwise cut
// any client off (docs/operations.md, Known differences).
func (c *conn) reattach(id int64, passwd []byte, timeout time.Duration, began time.Time) bool {
	s := c.srv
	_, pw, ok := s.db.Session(id)
	ok = ok && bytes.Equal(pw, passwd)
	if ok {
		p := &proposal{
			cmd: zkdb.Command{Conn: c.id, Kind: zkdb.KindAttach, Timeout: int32(timeout / time.Millisecond),
				Txn: tree.Txn{Session: id}},
			conn: c,
		}
		if !s.submit(p) {
			return false
		}
		if !s.await(p) {
			return false // outcome unknown: the client tries again
		}
		ok = p.err == nil
	}
	if !ok {
		s.log.Info("refusing re-attach: session expired or wrong password", "session", id, "ip", c.ip)
		// Timeout 0 tells the client its session is gone.
		c.sendConnectResponse(&wire.ConnectResponse{Passwd: make([]byte, 16)})
		c.out.finish()
		return false
	}
	c.attach(id, timeout, began)
	s.log.Debug("session re-attached", "session", id, "ip", c.ip)
	c.sendConnectResponse(&wire.ConnectResponse{Timeout: int32(timeout / time.Millisecond), SessionID: id, Passwd: pw})
	return true
}

// attach makes id this connection's session, on the negotiated timeout;
// its writes are numbered from 1 again, as the DB expects after a create
// or an attach. began is when the handshake started.
func (c *conn) attach(id int64, timeout time.Duration, began time.Time) {
	c.attachedAt.Store(began.UnixNano())
	c.timeout.Store(int64(timeout))
	c.sessionID.Store(id)
	c.order = 0
}

func (c *conn) sendConnectResponse(r *wire.ConnectResponse) {
	var e wire.Encoder
	at := e.BeginFrame()
	r.Encode(&e)
	e.EndFrame(at)
	c.answered(c.cur, c.lastZxid()) // counted first: see replyTo
	c.cur = request{}
	c.out.sendRaw(e.Bytes())
}

// touch records activity on the connection's session; false means the
// session is gone (or being closed) and the connection should end.
func (c *conn) touch() bool {
	s := c.srv
	if c.readOnly.Load() {
		return s.touchReadOnly(c)
	}
	id := c.sessionID.Load()
	if !s.db.Touch(id, s.clock.Now()) {
		return false
	}
	s.repl.Touched(id)
	return true
}

// stallGrace is how late the expiry loop may wake before the server
// concludes it was held up (stopped, paused, starved) and gives that time
// back to every session: half a tick. A shorter stall cannot make a
// healthy session overdue (clients ping every third of a timeout, and a
// timeout is at least two ticks), and a fake clock moved in half-tick
// steps never looks like one.
func (s *Server) stallGrace() time.Duration { return s.cfg.TickTime / 2 }

// expiryLoop closes sessions when their bucket's time comes. It sleeps until
// the earliest bucket (at most a tick, since a new session's bucket is always
// later than that), so expiry lands within [timeout, timeout+tick].
//
// If it wakes later than it meant to, the whole process was likely held
// up: by a stop signal, a pause, a starved machine. The clients' touches
// of that time are still unread in their sockets, so before expiring
// anything it shifts every deadline by the delay; a session is never
// blamed for the server's own silence. Time a test moved on purpose
// (AdvanceClock) is not a delay: the loop reads the clock and how far it
// was moved on purpose together, under timeMu, and leaves that out. (The
// other way, stepping a fake clock in half-tick pieces and letting this
// loop run between them, would cost a wake-up per half tick moved and
// could not say when the expiries it causes have applied.)
func (s *Server) expiryLoop() {
	timer := s.clock.NewTimer(s.cfg.TickTime)
	defer timer.Stop()
	for {
		wait := s.cfg.TickTime
		if next, ok := s.db.NextExpiry(); ok {
			if d := next.Sub(s.clock.Now()); d < wait {
				wait = d
			}
		}
		wait = max(wait, time.Millisecond)
		now, moved := s.clockReading()
		planned := now.Add(wait)
		timer.Reset(wait)
		select {
		case <-s.ctx.Done():
			return
		case <-timer.C():
		}
		// A paused server's timers wait too, and the pause counts as a
		// stall when it ends.
		if !s.gate.wait(s.ctx.Done()) {
			return
		}
		// The time the timer sends is its deadline, however late it
		// fired; the clock says how late that was.
		now, movedSince := s.clockReading()
		if late := now.Sub(planned) - (movedSince - moved); late > s.stallGrace() {
			s.log.Warn("expiry was held up; extending every session by the delay", "delay", late)
			s.db.ShiftTimers(late)
		}
		s.expireSessions()
		s.expireReadOnlySessions(now)
	}
}

// clockReading returns the time and how far AdvanceClock has moved the
// clock, read together.
func (s *Server) clockReading() (time.Time, time.Duration) {
	s.timeMu.Lock()
	defer s.timeMu.Unlock()
	return s.clock.Now(), s.movedOnPurpose
}

// sessionExpiredMsg is the log message of an expiry: tests and operators
// look for it.
const sessionExpiredMsg = "session expired"

// expireSessions closes every session whose timeout has run out by the
// server's clock, if this node owns expiry: the single node always, a Raft
// node while it leads (having first given every session a full timeout).
// The closes it proposes are kept in s.expiring until seen applied.
func (s *Server) expireSessions() {
	term, ok := s.repl.Leading()
	if !ok {
		return
	}
	s.expiryMu.Lock()
	defer s.expiryMu.Unlock()
	s.expiring = slices.DeleteFunc(s.expiring, func(p *proposal) bool {
		select {
		case <-p.done:
			return true
		default:
			return false
		}
	})
	for _, id := range s.db.ExpireSessions(s.clock.Now()) {
		s.log.Info(sessionExpiredMsg, "session", id)
		if p := s.closeSession(id, nil, 0, term); p != nil {
			s.expiring = append(s.expiring, p)
		}
	}
}

// closeSession removes a session and its ephemerals in one transaction;
// applying it closes the connection attached to the session. origin, when
// set, is the connection that asked (it gets the reply); otherwise the
// session expired, the command speaks for no connection, and it holds only
// in the leadership term that decided it.
func (s *Server) closeSession(id int64, origin *conn, xid int32, term uint64) *proposal {
	p := &proposal{
		cmd:  zkdb.Command{Kind: zkdb.KindTxn, Term: term, Txn: tree.Txn{Session: id, Op: wire.OpCloseSession}},
		conn: origin,
		xid:  xid,
		applied: func(p *proposal, e *zkdb.Effects) {
			if p.conn != nil {
				p.conn.replyTo(p.req, e.Command.Txn.Zxid, e.Result.Err, nil)
			}
		},
	}
	if origin != nil {
		p.req = origin.cur
		p.cmd.Conn, p.cmd.Order = origin.id, origin.nextOrder()
	}
	if !s.submit(p) {
		return nil
	}
	return p
}

// cleanupLoop deletes empty containers and expired TTL nodes, as ZooKeeper's
// ContainerManager does, through ordinary transactions.
func (s *Server) cleanupLoop() {
	s.repeat(s.ctx, s.cfg.ContainerCheckInterval, s.cleanupContainers)
}

// repeat calls f every d, by the server's clock, until ctx ends.
func (s *Server) repeat(ctx context.Context, d time.Duration, f func()) {
	timer := s.clock.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		}
		if !s.gate.wait(ctx.Done()) {
			return
		}
		f()
		timer.Reset(d)
	}
}

// cleanupContainers proposes the deletion of every empty container and
// expired TTL node, if this node owns cleanup (the leader). Each delete
// checks again, when it applies, that its node is still due by the log's
// own time, so the leader's clock decides only when to look.
func (s *Server) cleanupContainers() {
	term, ok := s.repl.Leading()
	if !ok {
		return
	}
	s.cleanupMu.Lock()
	defer s.cleanupMu.Unlock()
	paths := s.db.ExpiryCandidates(s.clock.Now().UnixMilli())
	var last *proposal
	for _, path := range paths {
		p := &proposal{cmd: zkdb.Command{Kind: zkdb.KindTxn, Term: term,
			Txn: tree.Txn{Op: wire.OpDeleteContainer, Req: &wire.PathRequest{Path: path}}}}
		if !s.submit(p) {
			return
		}
		last = p
	}
	if last != nil {
		s.await(last)
	}
}
