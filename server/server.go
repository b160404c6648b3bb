package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hutchzk/hutch/internal/netaddr"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/monitor"
	"github.com/hutchzk/hutch/session"
	"github.com/hutchzk/hutch/trace"
	"github.com/hutchzk/hutch/zkdb"
)

// Lifecycle errors.
var (
	// ErrNotStarted is returned by methods that need a running server.
	ErrNotStarted = errors.New("server: not started")
	// ErrStarted is returned by a second Start.
	ErrStarted = errors.New("server: already started")
	// ErrClosed is returned once Close has been called.
	ErrClosed = errors.New("server: closed")
)

// New prepares a server; Start begins serving. Without cfg.Raft it is a
// single in-memory node.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:        cfg,
		log:        cfg.Logger,
		clock:      cfg.Clock,
		nodeID:     uint64(cfg.ServerID),
		conns:      make(map[int64]*conn),
		perIP:      make(map[string]int),
		nextConnID: firstConnID(),
		ids:        session.NewIDGenerator(cfg.ServerID, cfg.Clock.Now()),
		trace:      cfg.Trace,
		ready:      make(chan struct{}),
	}
	s.halting.done = make(chan struct{})
	if s.trace == nil {
		s.trace = new(trace.Broker)
	}
	if cfg.TraceHistory.Events >= 0 {
		s.trace.KeepHistory(cfg.TraceHistory)
	}
	s.gate.init()
	s.stats.init()
	s.monitor = monitor.New(s, monitor.Config{FourLetterWords: cfg.FourLetterWords, ListenAddr: cfg.ListenAddr,
		AdminToken: cfg.AdminToken, AdminAddr: cfg.AdminAddr, MaxMemberID: MaxServerID, Logger: cfg.Logger})
	s.quotaLog = quotaLogger{log: cfg.Logger, now: cfg.Clock.Now}
	s.db = zkdb.New(zkdb.Config{TickTime: cfg.TickTime, Clock: cfg.Clock, Sink: sink{s}, SASL: len(cfg.SASLUsers) > 0,
		EnforceQuota: cfg.EnforceQuota, Logger: cfg.Logger})
	if cfg.Raft != nil {
		s.nodeID = cfg.Raft.NodeID
	}
	s.pending = newPendingTable(s.nodeID)
	return s
}

// firstConnID picks where this process numbers its connections. A
// connection id names its sessions' owner in the replicated state, so ids
// must not repeat across the nodes of an ensemble or across restarts: a
// random start in a 62-bit space makes that a non-event.
func firstConnID() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:]) >> 2)
}

// Start listens on the configured addresses and serves until Close. A
// failed Start closes whatever it had opened (ports, the Raft node) and
// leaves the server as New made it, so Start may be called again; its
// error names what failed. Start after Close returns ErrClosed, a second
// Start ErrStarted.
func (s *Server) Start() error {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	switch {
	case s.closed.Load():
		return ErrClosed
	case s.ctx != nil:
		return ErrStarted
	}
	if err := s.cfg.check(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	// Bind the ports first: a port in use must not leave replication
	// running behind a server that failed to start.
	var bound []net.Listener
	release := func() {
		for _, b := range bound {
			_ = b.Close()
		}
	}
	listen := func(what, addr string) (net.Listener, error) {
		if addr == "" {
			return nil, nil
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			release()
			return nil, fmt.Errorf("%s %s: %w", what, addr, err)
		}
		bound = append(bound, l)
		return l, nil
	}
	clientAddr := s.cfg.ListenAddr
	if s.cfg.NoClientPort {
		clientAddr = ""
	}
	ln, err := listen("listen", clientAddr)
	if err != nil {
		return err
	}
	adminLn, err := listen("admin listen", s.cfg.AdminAddr)
	if err != nil {
		return err
	}
	secureLn, err := listen("secure listen", s.cfg.SecureListenAddr)
	if err != nil {
		return err
	}
	metricsLn, err := listen("metrics listen", s.cfg.MetricsAddr)
	if err != nil {
		return err
	}
	uiLn, err := listen("ui listen", s.cfg.UIAddr)
	if err != nil {
		return err
	}
	repl, err := s.openReplication()
	if err != nil {
		release()
		return fmt.Errorf("open replication: %w", err)
	}
	s.repl = repl
	s.memberOf(s.db.Membership())
	s.ln = ln
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if adminLn != nil {
		s.adminLn = adminLn
		s.goLoop(func() { s.serveHTTP("admin", adminLn, s.monitor.AdminHandler()) })
		logHTTP(s.log, "admin server", adminLn, "/commands")
	}
	if metricsLn != nil {
		s.metricsLn = metricsLn
		s.goLoop(func() { s.serveHTTP("metrics", metricsLn, s.cfg.MetricsProvider(s.monitor)) })
		logHTTP(s.log, "metrics", metricsLn, "/metrics")
	}
	if uiLn != nil {
		s.uiLn = uiLn
		s.goLoop(func() { s.serveHTTP("ui", uiLn, s.monitor.UIHandler(s.cfg.UIAddr)) })
		logHTTP(s.log, "live view", uiLn, "/ui/")
	}
	if s.cfg.Raft != nil {
		// A single node applies every proposal itself: nothing to give up on.
		s.goLoop(s.sweep)
	}
	s.goLoop(s.expiryLoop)
	s.goLoop(s.cleanupLoop)
	if ln != nil {
		s.goLoop(func() { s.acceptLoop(ln, nil) })
	}
	if secureLn != nil {
		s.secureLn = secureLn
		s.goLoop(func() { s.acceptLoop(secureLn, s.wrapTLS) })
		s.log.Info("serving TLS", "addr", secureLn.Addr().String())
	}
	s.log.Info("serving", "addr", s.addrLocked().String(), "tickTime", s.cfg.TickTime,
		"minSessionTimeout", s.cfg.MinSessionTimeout, "maxSessionTimeout", s.cfg.MaxSessionTimeout)
	if s.cfg.Raft == nil {
		s.markReady() // a Raft node is ready once it knows a leader (setServing)
	}
	return nil
}

// Ready is closed once the server serves clients: when Start returns for
// a single node, once a leader is known for a member of an ensemble. It
// is never closed for a server that does not start.
func (s *Server) Ready() <-chan struct{} { return s.ready }

func (s *Server) markReady() { s.readyOnce.Do(func() { close(s.ready) }) }

func (s *Server) goLoop(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// Addr is the address clients connect to: nil before Start, and a
// placeholder (network "memory") for a server with NoClientPort.
func (s *Server) Addr() net.Addr {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.ctx == nil {
		return nil
	}
	return s.addrLocked()
}

// addrLocked is Addr once started; lifeMu is held.
func (s *Server) addrLocked() net.Addr {
	if s.ln == nil {
		return memoryAddr{}
	}
	return s.ln.Addr()
}

// memoryAddr is the address of a server without a client port: its
// clients come through ServeConn.
type memoryAddr struct{}

func (memoryAddr) Network() string { return "memory" }
func (memoryAddr) String() string  { return "in-memory" }

// AdminAddr is the admin HTTP address, or nil without one.
func (s *Server) AdminAddr() net.Addr { return s.listenerAddr(&s.adminLn) }

// MetricsAddr is the /metrics HTTP address, or nil without one.
func (s *Server) MetricsAddr() net.Addr { return s.listenerAddr(&s.metricsLn) }

// UIAddr is the live view's own HTTP address, or nil without one.
func (s *Server) UIAddr() net.Addr { return s.listenerAddr(&s.uiLn) }

// listenerAddr is the address *ln listens on, or nil while it is unset;
// Start and Close change the listeners under lifeMu.
func (s *Server) listenerAddr(ln *net.Listener) net.Addr {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if *ln == nil {
		return nil
	}
	return (*ln).Addr()
}

// logHTTP says where an operators' HTTP listener serves, as ZooKeeper
// logs "Started AdminServer on address 0.0.0.0, port 8080 and command
// URL /commands": zoo.cfg's defaults bind the admin port on every
// interface, and an operator should not have to guess it.
func logHTTP(log *slog.Logger, what string, ln net.Listener, path string) {
	log.Info("serving "+what, "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String()+path)
}

// serveHTTP runs one of the operators' HTTP listeners until the server
// closes.
func (s *Server) serveHTTP(what string, ln net.Listener, h http.Handler) {
	hs := s.cfg.HTTPLimits.Server(h)
	go func() {
		<-s.ctx.Done()
		_ = hs.Close()
	}()
	if err := hs.Serve(s.cfg.HTTPLimits.Listener(ln)); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.log.Warn(what+" server stopped", "err", err)
	}
}

// Close stops accepting, closes every connection and stops all loops. Sessions
// are not closed: an in-memory node forgets them with everything else, and
// an ensemble member leaves them to the others, as a crashed one would.
// Close may be called in any state and more than once; a server closed
// before it started never starts.
func (s *Server) Close() error {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	if s.ctx == nil {
		return nil // never started
	}
	var err error
	if s.ln != nil {
		// A member that halted closed it already.
		if err = s.ln.Close(); errors.Is(err, net.ErrClosed) {
			err = nil
		}
	}
	if s.secureLn != nil {
		_ = s.secureLn.Close()
	}
	s.cancel()
	s.gate.resume() // a paused server's held I/O and loops must end too
	open := s.openConns()
	for _, c := range open {
		c.out.abort()
		_ = c.nc.Close()
	}
	s.wg.Wait()
	if cerr := s.repl.Close(); err == nil {
		err = cerr
	}
	s.pending.failAll()
	s.log.Info("stopped", "connections", len(open))
	return err
}

// Digest returns a hash of the whole tree and the last applied zxid; equal
// digests at equal zxids mean two nodes hold identical trees.
func (s *Server) Digest() (digest uint64, lastZxid int64) { return s.db.Digest() }

// State is this node's part in its ensemble now (its String is srvr's
// Mode line).
func (s *Server) State() membership.State {
	if s.repl == nil {
		return membership.Standalone
	}
	if s.isReadOnly() {
		return membership.ReadOnly
	}
	return s.repl.State()
}

// acceptLoop serves one client port; wrap, when not nil, turns each
// accepted socket into the connection served (TLS on the secure port).
func (s *Server) acceptLoop(ln net.Listener, wrap func(net.Conn) net.Conn) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("accept failed", "err", err)
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if s.notServing.Load() && !s.isReadOnly() {
			s.log.Debug("refusing connection: no quorum", "remote", nc.RemoteAddr().String())
			_ = nc.Close()
			continue
		}
		nc = s.gated(nc)
		if wrap != nil {
			nc = wrap(nc)
		}
		c, ok := s.register(nc)
		if !ok {
			continue
		}
		go func() {
			defer s.wg.Done()
			if !c.startTLS() {
				s.unregister(c)
				return
			}
			c.serve()
		}()
	}
}

// ServeConn serves a client connection the server did not accept itself:
// one end of an in-memory pipe (DialMemory), a socket passed in from
// elsewhere. The connection is treated as one from its RemoteAddr (its IP
// counts against MaxClientConnsPerIP and is its ip identity for ACLs); a
// pipe should report a loopback TCP address. It returns at once; the
// connection is served, and closed, by the server. Refused connections
// (server not started or closed, not serving for want of a leader, too
// many from that address) are closed, with an error.
func (s *Server) ServeConn(nc net.Conn) error {
	s.lifeMu.Lock()
	started := s.ctx != nil
	s.lifeMu.Unlock()
	switch {
	case s.closed.Load():
		_ = nc.Close()
		return ErrClosed
	case !started:
		_ = nc.Close()
		return ErrNotStarted
	case s.isHalted():
		_ = nc.Close()
		return ErrHalted
	case s.notServing.Load() && !s.isReadOnly():
		_ = nc.Close()
		return ErrNotServing
	}
	c, ok := s.register(s.gated(nc))
	if !ok {
		return ErrRefused
	}
	go func() {
		defer s.wg.Done()
		c.serve()
	}()
	return nil
}

// Errors of ServeConn.
var (
	// ErrNotServing: a member of an ensemble that knows no leader turns
	// clients away, so they move to one that does.
	ErrNotServing = errors.New("server: not serving clients: no leader known")
	// ErrRefused: the server is closing, or the address has
	// MaxClientConnsPerIP connections open.
	ErrRefused = errors.New("server: connection refused")
)

// register admits a new connection unless its address already has the
// maximum number open. An admitted connection is counted in s.wg, which
// its goroutine must mark done: counting it under connsMu, before Close
// can see the server closed, keeps Close's Wait from missing it.
func (s *Server) register(nc net.Conn) (*conn, bool) {
	ip := netaddr.Host(nc.RemoteAddr())
	limitKey := connLimitKey(nc, ip)
	s.connsMu.Lock()
	if s.closed.Load() || s.isHalted() {
		// Close (or halt) has taken its list of connections; this one
		// would be missed.
		s.connsMu.Unlock()
		_ = nc.Close()
		return nil, false
	}
	if s.cfg.MaxClientConnsPerIP > 0 && s.perIP[limitKey] >= s.cfg.MaxClientConnsPerIP {
		s.connsMu.Unlock()
		s.log.Warn("too many connections from address", "ip", ip, "max", s.cfg.MaxClientConnsPerIP)
		_ = nc.Close()
		return nil, false
	}
	s.perIP[limitKey]++
	s.nextConnID++
	c := newConn(s, nc, s.nextConnID, ip)
	s.conns[c.id] = c
	s.wg.Add(1)
	s.connsMu.Unlock()
	s.stats.connections.Add(1)
	return c, true
}

// unregister forgets a connection and the watches it set.
func (s *Server) unregister(c *conn) {
	if c.readOnly.Load() {
		s.detachReadOnly(c)
	}
	s.dropWatches(c)
	s.connsMu.Lock()
	delete(s.conns, c.id)
	limitKey := connLimitKey(c.nc, c.ip)
	if n := s.perIP[limitKey] - 1; n > 0 {
		s.perIP[limitKey] = n
	} else {
		delete(s.perIP, limitKey)
	}
	s.connsMu.Unlock()
	s.stats.connections.Add(-1)
}

// dropUnvouched drops the connections this follower can no longer vouch
// for. The leader, which expires sessions, hears of a client only through
// this node's activity reports; vouched is when the newest report that
// reached it was sent. A connection is dropped once that is a third of
// its session's timeout ago (at most limit), while the leader still gives
// the session at least the other two thirds: its client learns of the
// trouble, and re-attaches through a node that reaches the leader, well
// before the session could expire. A connection whose session was
// created or attached since is vouched for by that command, which the
// leader applied after the connection began its handshake. A ZooKeeper
// follower keeps answering such clients until its syncLimit runs out,
// which can be too late for them.
func (s *Server) dropUnvouched(now, vouched time.Time, limit time.Duration) {
	for _, c := range s.openConns() {
		t := time.Duration(c.timeout.Load())
		// A read-only session is this member's own: no leader vouches.
		if c.sessionID.Load() == 0 || t == 0 || c.readOnly.Load() {
			continue
		}
		since := vouched
		if at := time.Unix(0, c.attachedAt.Load()); at.After(since) {
			since = at
		}
		silent := now.Sub(since)
		if silent <= min(limit, t/3) {
			continue
		}
		if c.out.abort() {
			s.log.Warn("dropping connection: the leader has not heard of its session's activity for a third of its timeout",
				"session", c.sessionID.Load(), "unheard", silent, "timeout", t)
		}
	}
}

// setServing starts or stops serving clients; stopping drops every client
// connection.
func (s *Server) setServing(serving bool) {
	if serving {
		s.markReady()
		s.leaveReadOnly()
	}
	if s.notServing.Swap(!serving) == !serving {
		return
	}
	if serving {
		s.log.Info("serving clients again: a leader is known")
		return
	}
	if s.isReadOnly() {
		return // read-only mode already closed the read-write clients
	}
	open := s.openConns()
	s.log.Warn("no leader: dropping client connections until one is elected", "connections", len(open))
	for _, c := range open {
		c.out.abort()
	}
}

// SecureAddr is the TLS client address, or nil without one.
func (s *Server) SecureAddr() net.Addr {
	if s.secureLn == nil {
		return nil
	}
	return s.secureLn.Addr()
}

// wrapTLS makes an accepted socket of the secure port a TLS server
// connection; the handshake waits for the connection's own goroutine.
func (s *Server) wrapTLS(nc net.Conn) net.Conn { return tls.Server(nc, s.cfg.TLS) }
