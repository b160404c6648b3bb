package server

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hutchzk/hutch/clock"
	"github.com/hutchzk/hutch/monitor"
	"github.com/hutchzk/hutch/sasl"
	"github.com/hutchzk/hutch/session"
	"github.com/hutchzk/hutch/trace"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// The Server's fields, and the small accessors every layer of the
// package uses; what a Server does is in the files above this one.

// Server is one hutch node serving ZooKeeper clients. Its state (tree,
// sessions, watches) is a zkdb.DB, changed only by the committer applying
// commands; the server itself keeps only its connections.
type Server struct {
	cfg    Config
	log    *slog.Logger
	clock  clock.Clock
	nodeID uint64

	db *zkdb.DB
	// repl orders writes (set by Start); pending holds this node's
	// proposals until they apply or are given up on.
	repl    replication
	pending pendingTable
	stats   Stats
	// trace receives every applied command and delivered watch event
	// (see traceApplied); Config.Trace or the server's own.
	trace *trace.Broker
	// traceWatches holds the watch deliveries of the command being
	// applied, published after it; guarded by the DB's lock (the sink
	// runs under it).
	traceWatches []trace.Event
	// ro is read-only mode (readonly.go).
	ro readOnlyState
	// quotaLog logs the quota limits this node's clients' writes pass;
	// guarded by the DB's lock (the sink runs under it).
	quotaLog quotaLogger
	// children keeps large nodes' sorted child names for Children.
	children childCache

	// connsMu guards conns, perIP and nextConnID. It is taken after the
	// DB's lock (the sink looks connections up while applying), never
	// before.
	connsMu    sync.Mutex
	conns      map[int64]*conn // by connection id: the key of its watches and of its sessions' ownership
	perIP      map[string]int  // by connLimitKey
	nextConnID int64

	// idsMu guards ids.
	idsMu sync.Mutex
	ids   *session.IDGenerator

	// lifeMu serialises Start and Close and guards the listener fields
	// they set (ln, secureLn, adminLn, metricsLn, uiLn) and ctx.
	lifeMu sync.Mutex
	ln     net.Listener
	// secureLn is the TLS client port, nil without SecureListenAddr.
	secureLn net.Listener
	adminLn  net.Listener // nil without AdminAddr
	// metricsLn serves /metrics; nil without MetricsAddr.
	metricsLn net.Listener
	uiLn      net.Listener // nil without UIAddr
	// monitor answers the operators: four-letter words, admin commands,
	// metrics, the live view.
	monitor *monitor.Monitor
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closed  atomic.Bool
	// notServing is set while a replicated node knows no leader: like a
	// ZooKeeper follower that lost its leader, it drops its clients and
	// turns new ones away so they move to a node in the majority.
	notServing atomic.Bool
	// removed is set while this member of an ensemble is not in its
	// membership (a reconfig removed it, or it has not yet caught up to
	// the reconfig that adds it): it serves no clients.
	removed atomic.Bool
	// ready is closed once the server serves clients (Ready).
	ready     chan struct{}
	readyOnce sync.Once
	// gate holds connections' I/O and the timer loops while paused.
	gate pauseGate
	// halting records that this member stopped itself (halt.go).
	halting haltState
	// timeMu guards movedOnPurpose, read by the expiry loop together with
	// the clock so that an AdvanceClock lands wholly before or after.
	timeMu sync.Mutex
	// movedOnPurpose is how far AdvanceClock has moved the clock: the
	// expiry loop does not count it as a stall.
	movedOnPurpose time.Duration
	// expiryMu guards expiring and serialises expiry passes.
	expiryMu sync.Mutex
	// expiring are the closes of expired sessions proposed and perhaps
	// not yet applied, for AdvanceClock to wait on.
	expiring []*proposal
	// cleanupMu serialises container and TTL cleanup passes, so two never
	// propose the same delete.
	cleanupMu sync.Mutex
}

// connByID returns the open connection with that id, or nil.
func (s *Server) connByID(id int64) *conn {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	return s.conns[id]
}

// openConns lists the open connections.
func (s *Server) openConns() []*conn {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	open := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		open = append(open, c)
	}
	return open
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

// nextSessionID mints a session id.
func (s *Server) nextSessionID() int64 {
	s.idsMu.Lock()
	defer s.idsMu.Unlock()
	return s.ids.Next()
}

// conn is one client connection. Its reader goroutine (serve) decodes and
// handles requests in order; its writer goroutine flushes replies in batches.
type conn struct {
	srv *Server
	nc  net.Conn
	id  int64 // connection id; keys this connection's watches
	ip  string
	out *outbound
	// secure is set on connections that came through the TLS port.
	secure bool
	// stats are this connection's counters (cons); cur is the request the
	// reader goroutine is answering, for replies it sends itself.
	stats *connStats
	cur   request

	sessionID atomic.Int64
	// readOnly is set when the session was created in read-only mode:
	// this member's own, not the ensemble's (readonly.go).
	readOnly atomic.Bool
	// timeout is the session's negotiated timeout, set with sessionID.
	timeout atomic.Int64
	// attachedAt (unix nanos) is when the handshake that created or
	// attached the session began: the leader applied that command later,
	// so it had heard of the session by then (see dropUnvouched).
	attachedAt atomic.Int64
	// remote is the client's address as text, made the first time an
	// operator's view asks (remoteText): the live view lists every
	// session's each second, and a connection nobody looks at never
	// makes it.
	remoteOnce sync.Once
	remote     string
	// authShown is auth as the view shows it, made when first asked
	// after auth changed (authText).
	authShown atomic.Pointer[shownAuth]
	// auth lists the identities added to this connection. Only the reader
	// goroutine changes it, and only by swapping in a new slice, so
	// transactions in flight and the applier (which filters watch events by
	// it) may keep the slice they loaded.
	auth atomic.Pointer[[]wire.ID]
	// lastWrite is the newest write this connection proposed; a read waits for
	// it so that it sees this session's own writes.
	lastWrite *proposal
	// pendingReconfig is this connection's reconfig while its outcome has not
	// applied: it travels apart from the connection's ordered writes, so
	// a later write waits for it before it is proposed (reconfig.go).
	pendingReconfig *proposal
	// order numbers the commands this connection sends for its session
	// (zkdb.Command.Order). Only the reader goroutine uses it.
	order uint64
	dec   wire.Decoder
	// sasl is the connection's SASL exchange, made by its first sasl
	// request. Only the reader goroutine uses it.
	sasl *sasl.Server
}

// proposal is one write on its way to the state: the command, and who is
// waiting for its outcome.
type proposal struct {
	cmd  zkdb.Command
	conn *conn // origin connection; nil for the server's own writes (expiry, cleanup)
	xid  int32
	req  request // what the reply records in the statistics
	// applied runs under the DB lock right after the command applied and
	// its watches fired, so a reply queued here follows those notifications.
	applied func(p *proposal, e *zkdb.Effects)
	// committed and err are set, before done closes, when the command
	// applied; a proposal given up on (its leader lost) closes done
	// without them.
	committed bool
	err       error
	since     time.Time     // when it was proposed
	size      int           // bytes of the client's request, for batching
	done      chan struct{} // closed after applied ran, or on giving up
}

// pauseGate holds what Pause stops: connections' I/O and the timer loops.
type pauseGate struct {
	paused atomic.Bool // read without the lock on every I/O
	// mu guards resumed, closed (and replaced) by resume.
	mu      sync.Mutex
	resumed chan struct{}
}
