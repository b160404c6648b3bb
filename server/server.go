package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hutchzk/hutch/session"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/watch"
	"github.com/hutchzk/hutch/wire"
)

// Stats are the server's running counters; metrics read them.
type Stats struct {
	packetsReceived atomic.Int64
	packetsSent     atomic.Int64
	bytesSent       atomic.Int64
	txns            atomic.Int64
	notifications   atomic.Int64
	connections     atomic.Int64
}

// StatsSnapshot is a point-in-time copy of Stats.
type StatsSnapshot struct {
	PacketsReceived int64
	PacketsSent     int64
	BytesSent       int64
	Txns            int64
	Notifications   int64
	Connections     int64
	Sessions        int
	Watches         int
	Nodes           int
	LastZxid        int64
}

// Server is one hutch node serving ZooKeeper clients.
type Server struct {
	cfg Config
	log *slog.Logger

	// treeMu guards tree: writes apply under Lock; reads, and watch
	// registration that must be atomic with a read, run under RLock.
	treeMu sync.RWMutex
	tree   *tree.Tree

	// watchMu guards watches. Taken after treeMu, never before.
	watchMu sync.Mutex
	watches *watch.Manager
	// firing is the event whose watches are being triggered; set and read
	// only by the applier under treeMu. deliver is deliverEvent, bound once.
	firing  *tree.Event
	deliver func(connID int64, ev wire.WatcherEvent)

	// connsMu guards conns, sessionConns, perIP and nextConnID. Taken after
	// treeMu and watchMu.
	connsMu      sync.Mutex
	conns        map[int64]*conn // by connection id, the key of its watches
	sessionConns map[int64]*conn // session id → the connection it is attached to
	perIP        map[string]int
	nextConnID   int64

	// sessMu guards tracker and ids.
	sessMu  sync.Mutex
	tracker *session.Tracker
	ids     *session.IDGenerator

	commit committer
	stats  Stats

	ln      net.Listener
	adminLn net.Listener // nil without AdminAddr
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closed  atomic.Bool
	// notServing is set while a replicated node knows no leader: like a
	// ZooKeeper follower that lost its leader, it drops its clients and
	// turns new ones away so they move to a node in the majority.
	notServing atomic.Bool
}

// New prepares a single-node, in-memory server; Start begins serving.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:          cfg,
		log:          cfg.Logger,
		tree:         tree.New(),
		watches:      watch.NewManager(),
		conns:        make(map[int64]*conn),
		sessionConns: make(map[int64]*conn),
		perIP:        make(map[string]int),
		tracker:      session.NewTracker(cfg.TickTime),
		ids:          session.NewIDGenerator(cfg.ServerID, cfg.Clock.Now()),
	}
	s.deliver = s.deliverEvent
	if cfg.Raft != nil {
		s.commit = newRaftCommitter(s, *cfg.Raft)
	} else {
		s.commit = newLocalCommitter(s)
	}
	return s
}

// Start listens on the configured address and serves until Close.
func (s *Server) Start() error {
	if err := s.commit.open(); err != nil {
		return fmt.Errorf("open replication: %w", err)
	}
	ln, err := net.Listen("tcp", s.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.cfg.ListenAddr, err)
	}
	s.ln = ln
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if s.cfg.AdminAddr != "" {
		adminLn, err := net.Listen("tcp", s.cfg.AdminAddr)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("admin listen %s: %w", s.cfg.AdminAddr, err)
		}
		s.adminLn = adminLn
		s.goLoop(func() { s.serveAdmin(adminLn) })
	}
	s.goLoop(func() { s.commit.run(s.ctx) })
	s.goLoop(s.expiryLoop)
	s.goLoop(s.cleanupLoop)
	s.goLoop(s.acceptLoop)
	s.log.Info("serving", "addr", ln.Addr().String(), "tickTime", s.cfg.TickTime,
		"minSessionTimeout", s.cfg.MinSessionTimeout, "maxSessionTimeout", s.cfg.MaxSessionTimeout)
	return nil
}

func (s *Server) goLoop(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// Addr is the address clients connect to.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// AdminAddr is the admin HTTP address, or nil without one.
func (s *Server) AdminAddr() net.Addr {
	if s.adminLn == nil {
		return nil
	}
	return s.adminLn.Addr()
}

// Close stops accepting, closes every connection and stops all loops. Sessions
// are not closed: an in-memory node forgets them with everything else.
func (s *Server) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	err := s.ln.Close()
	s.cancel()
	s.connsMu.Lock()
	open := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		open = append(open, c)
	}
	s.connsMu.Unlock()
	for _, c := range open {
		c.out.abort()
		_ = c.nc.Close()
	}
	s.wg.Wait()
	s.log.Info("stopped", "connections", len(open))
	return err
}

// Stats returns the current counters.
func (s *Server) Stats() StatsSnapshot {
	s.treeMu.RLock()
	nodes, last := s.tree.NodeCount(), s.tree.LastZxid()
	s.treeMu.RUnlock()
	s.watchMu.Lock()
	watches := s.watches.Count()
	s.watchMu.Unlock()
	s.sessMu.Lock()
	sessions := s.tracker.Len()
	s.sessMu.Unlock()
	return StatsSnapshot{
		PacketsReceived: s.stats.packetsReceived.Load(),
		PacketsSent:     s.stats.packetsSent.Load(),
		BytesSent:       s.stats.bytesSent.Load(),
		Txns:            s.stats.txns.Load(),
		Notifications:   s.stats.notifications.Load(),
		Connections:     s.stats.connections.Load(),
		Sessions:        sessions,
		Watches:         watches,
		Nodes:           nodes,
		LastZxid:        last,
	}
}

func (s *Server) acceptLoop() {
	for {
		nc, err := s.ln.Accept()
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
		if s.notServing.Load() {
			s.log.Debug("refusing connection: no quorum", "remote", nc.RemoteAddr().String())
			_ = nc.Close()
			continue
		}
		c, ok := s.register(nc)
		if !ok {
			continue
		}
		s.goLoop(func() { c.serve() })
	}
}

// register admits a new connection unless its address already has the
// maximum number open.
func (s *Server) register(nc net.Conn) (*conn, bool) {
	ip := remoteIP(nc.RemoteAddr())
	s.connsMu.Lock()
	if s.cfg.MaxClientConnsPerIP > 0 && s.perIP[ip] >= s.cfg.MaxClientConnsPerIP {
		s.connsMu.Unlock()
		s.log.Warn("too many connections from address", "ip", ip, "max", s.cfg.MaxClientConnsPerIP)
		_ = nc.Close()
		return nil, false
	}
	s.perIP[ip]++
	s.nextConnID++
	c := newConn(s, nc, s.nextConnID, ip)
	s.conns[c.id] = c
	s.connsMu.Unlock()
	s.stats.connections.Add(1)
	return c, true
}

// unregister forgets a connection and the watches it set.
func (s *Server) unregister(c *conn) {
	s.watchMu.Lock()
	s.watches.RemoveSession(c.id)
	s.watchMu.Unlock()
	s.connsMu.Lock()
	delete(s.conns, c.id)
	if n := s.perIP[c.ip] - 1; n > 0 {
		s.perIP[c.ip] = n
	} else {
		delete(s.perIP, c.ip)
	}
	if sid := c.sessionID.Load(); sid != 0 && s.sessionConns[sid] == c {
		delete(s.sessionConns, sid)
	}
	s.connsMu.Unlock()
	s.stats.connections.Add(-1)
}

func remoteIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// submit proposes a write and returns once it has been queued; p.done closes
// after it applied. It reports false when the server is shutting down.
func (s *Server) submit(p *proposal) bool {
	p.done = make(chan struct{})
	return s.commit.propose(p)
}

// newPassword is a session password: 16 random bytes.
func newPassword() []byte {
	pw, err := session.NewPassword(rand.Reader)
	if err != nil {
		// crypto/rand does not fail on supported platforms.
		panic(err)
	}
	return pw
}

// setServing starts or stops serving clients; stopping drops every client
// connection.
func (s *Server) setServing(serving bool) {
	if s.notServing.Swap(!serving) == !serving {
		return
	}
	if serving {
		s.log.Info("serving clients again: a leader is known")
		return
	}
	s.connsMu.Lock()
	open := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		open = append(open, c)
	}
	s.connsMu.Unlock()
	s.log.Warn("no leader: dropping client connections until one is elected", "connections", len(open))
	for _, c := range open {
		c.out.abort()
	}
}
