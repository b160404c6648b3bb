package server

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hutchzk/hutch/clock"
	"github.com/hutchzk/hutch/trace"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// The controls below are for tests (package hutchtest, and the hutch
// binary's --test-controls): each makes one real event happen, by the
// same path the server takes when it happens by itself.

// Errors of the controls. They read as the end of a sentence that says
// which control failed ("expire session 0x1f: no such session"), over
// HTTP as in a test's failure.
var (
	// ErrNotLeader: expiry belongs to the leader of an ensemble.
	ErrNotLeader = errors.New("not the leader: session expiry belongs to the leader")
	// ErrNoSession: no live session has that id.
	ErrNoSession = errors.New("no such session")
	// ErrNoConnection: no connection to this server carries that session.
	ErrNoConnection = errors.New("no connection to this server carries that session")
	// ErrRealClock: AdvanceClock needs a server built with a *clock.Fake.
	ErrRealClock = errors.New("the clock is real: only a fake clock can be moved (hutchtest.FakeClock, hutch --clock fake)")
	// ErrNotApplied: a control's write was not applied in time (a lost
	// leadership, or a server closing).
	ErrNotApplied = errors.New("the write was not applied")
)

// controlWait bounds how long a control waits for its write to apply:
// far longer than a healthy node ever takes, short enough that a test
// whose ensemble lost its quorum fails rather than hangs.
const controlWait = 30 * time.Second

// Trace is the stream of what the server applies and delivers; subscribe
// to it (package trace).
func (s *Server) Trace() *trace.Broker { return s.trace }

// running reports whether Start succeeded and Close has not been called.
func (s *Server) running() bool {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	return s.ctx != nil && !s.closed.Load()
}

// awaitFor is await bounded by controlWait.
func (s *Server) awaitFor(p *proposal) error {
	t := time.NewTimer(controlWait)
	defer t.Stop()
	select {
	case <-p.done:
		if !p.committed {
			return ErrNotApplied
		}
		return p.err
	case <-s.ctx.Done():
		return ErrClosed
	case <-t.C:
		return fmt.Errorf("%w after %v", ErrNotApplied, controlWait)
	}
}

// ExpireSession expires a session now, as its timeout would: the leader
// proposes its close, which (replicated in an ensemble) deletes its
// ephemerals and fires their watches; its client's connection is closed
// and the client, re-attaching, is told SESSION_EXPIRED. It returns once
// the close applied here. Only the node that owns expiry may do it
// (ErrNotLeader elsewhere).
func (s *Server) ExpireSession(id int64) error {
	if !s.running() {
		return ErrNotStarted
	}
	term, ok := s.repl.Leading()
	if !ok {
		return ErrNotLeader
	}
	if _, _, ok := s.db.Session(id); !ok {
		return fmt.Errorf("expire session %#x: %w", id, ErrNoSession)
	}
	s.log.Info("session expired on request", "session", id)
	p := s.closeSession(id, nil, 0, term)
	if p == nil {
		return ErrClosed
	}
	if err := s.awaitFor(p); err != nil {
		return fmt.Errorf("expire session %#x: %w", id, err)
	}
	return nil
}

// OwnsExpiry reports whether this server decides session expiry now: a
// lone server whenever it runs; a member once it leads and has taken the
// sessions over, which a leader just elected does when its first barrier
// commits, giving every session a fresh timeout at its clock's time.
func (s *Server) OwnsExpiry() bool {
	if !s.running() {
		return false
	}
	_, ok := s.repl.Leading()
	return ok
}

// DropConnection closes, on the server's side, the connection that
// carries session id, as a network fault or a server restart would: the
// session lives on, and its client reconnects and re-attaches it.
// ErrNoConnection if no connection to this node carries it.
func (s *Server) DropConnection(id int64) error {
	dropped := false
	for _, c := range s.openConns() {
		if c.sessionID.Load() == id {
			s.log.Info("dropping connection on request", "session", id, "ip", c.ip)
			c.out.abort()
			dropped = true
		}
	}
	if !dropped {
		return fmt.Errorf("drop connection of session %#x: %w", id, ErrNoConnection)
	}
	return nil
}

// DropAll closes every client connection, as DropConnection, and returns
// how many it closed.
func (s *Server) DropAll() int {
	n := 0
	for _, c := range s.openConns() {
		if c.out.abort() {
			n++
		}
	}
	if n > 0 {
		s.log.Info("dropped every connection on request", "connections", n)
	}
	return n
}

// Pause makes the server stop answering without closing anything, as if
// its process were stopped (SIGSTOP): connections stay open but nothing
// is read from or written to them, new ones are accepted and left
// unanswered, and session expiry and cleanup wait. Clients run their own
// timeouts. It reports false if the server was already paused.
func (s *Server) Pause() bool {
	if s.gate.pause() {
		// Info, not Warn: a test asked for it, as for the other controls.
		s.log.Info("paused on request: not answering clients")
		return true
	}
	return false
}

// Resume undoes Pause. As after a real stop, the session timers are given
// back the time the server was paused (see expiryLoop), and what the
// clients sent meanwhile is answered. It reports false if the server was
// not paused.
func (s *Server) Resume() bool {
	if s.gate.resume() {
		s.log.Info("resumed on request")
		return true
	}
	return false
}

// Paused reports whether the server is paused.
func (s *Server) Paused() bool { return s.gate.paused.Load() }

// AdvanceClock moves the server's clock, which must be a *clock.Fake of
// its own (Config.Clock), forward by d, on purpose: unlike a stall (see
// expiryLoop), the sessions are not given the time back. Every session
// that no client touched within the new time expires, and expired TTL
// nodes and empty containers are deleted; AdvanceClock returns once
// those closes and deletes applied (on the leader, in an ensemble; a
// follower's clock just moves). Moving the clock by a whole day costs no
// more than by a second. While the server is paused the clock moves and
// the work waits for Resume.
//
// The sessions named in alive are touched at the new time first, as if
// their clients had pinged all along: a test that ages a TTL node by an
// hour passes its connected clients' sessions (ConnectedSessions), which
// then live on, without stretching their timeouts.
func (s *Server) AdvanceClock(d time.Duration, alive ...int64) error {
	fake, ok := s.cfg.Clock.(*clock.Fake)
	if !ok {
		return ErrRealClock
	}
	if d < 0 {
		return fmt.Errorf("the clock cannot be moved back (%v)", d)
	}
	s.timeMu.Lock()
	s.movedOnPurpose += d
	fake.Advance(d)
	now := fake.Now()
	for _, id := range alive {
		s.db.Touch(id, now)
	}
	s.timeMu.Unlock()
	if !s.running() || s.Paused() {
		return nil
	}
	s.expireSessions()
	for _, p := range s.expiryProposals() {
		if err := s.awaitFor(p); err != nil && !errors.Is(err, tree.ErrSessionExpired) {
			return fmt.Errorf("advance clock: session close: %w", err)
		}
	}
	s.cleanupContainers()
	return nil
}

// ConnectedSessions lists the sessions whose clients are connected to
// this server now.
func (s *Server) ConnectedSessions() []int64 {
	var out []int64
	for _, c := range s.openConns() {
		if id := c.sessionID.Load(); id != 0 {
			out = append(out, id)
		}
	}
	return out
}

// expiryProposals are the expiry closes proposed and not yet seen
// applied.
func (s *Server) expiryProposals() []*proposal {
	s.expiryMu.Lock()
	defer s.expiryMu.Unlock()
	return slices.Clone(s.expiring)
}

// CreateNode creates a node as the super user would, through the log like
// any client's write: the fixtures package hutchtest loads. flags is a
// create mode (wire.ModePersistent, ModeContainer, ModePersistentWithTTL
// with ttl); ephemeral modes are refused, a node of the server's own
// having no session to die with.
func (s *Server) CreateNode(path string, data []byte, acl []wire.ACL, flags int32, ttl time.Duration) error {
	if !s.running() {
		return ErrNotStarted
	}
	op := wire.OpCreate
	var req tree.Request = &wire.CreateRequest{Path: path, Data: data, ACL: acl, Flags: flags}
	switch flags {
	case wire.ModePersistent, wire.ModePersistentSequential:
	case wire.ModeContainer:
		op = wire.OpCreateContainer
	case wire.ModePersistentWithTTL, wire.ModePersistentSequentialWithTTL:
		op = wire.OpCreateTTL
		req = &wire.CreateTTLRequest{Path: path, Data: data, ACL: acl, Flags: flags, TTL: ttl.Milliseconds()}
	default:
		return fmt.Errorf("create %s: mode %d not allowed for a server's own node", path, flags)
	}
	p := &proposal{cmd: zkdb.Command{Kind: zkdb.KindTxn,
		Txn: tree.Txn{Auth: []wire.ID{{Scheme: "super", ID: ""}}, Op: op, Req: req}}}
	if !s.submit(p) {
		return ErrClosed
	}
	if err := s.awaitFor(p); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	return nil
}
