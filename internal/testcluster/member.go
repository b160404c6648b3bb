package testcluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hutchzk/hutch/clock"
	"github.com/hutchzk/hutch/internal/faultnet"
	"github.com/hutchzk/hutch/server"
	"github.com/hutchzk/hutch/trace"
)

// Errors of the controls.
var (
	// ErrStopped: the member is not running (killed, or never started).
	ErrStopped = errors.New("not running")
	// ErrNoMember: no member has that number.
	ErrNoMember = errors.New("no such member")
	// ErrNoLeader: no leader a majority agrees on within the wait.
	ErrNoLeader = errors.New("no leader a majority agrees on")
)

// MemberConfig is one server's configuration.
type MemberConfig struct {
	// Number is the member's place in its ensemble, from 1 (1 alone): its
	// Raft node id, the N of its name (hutch-N) and of its in-memory
	// address 127.0.0.N:0.
	Number int
	// Name is how logs and errors call it ("hutch", "hutch-2").
	Name string
	// Server is its configuration. Clock and Trace are the member's own;
	// an ensemble sets Raft.
	Server server.Config
	// FakeClock runs it on a clock only Advance moves, starting at
	// FakeStart (the real time when zero).
	FakeClock bool
	FakeStart time.Time
}

// Member is one hutch server a test starts, stops and restarts: its
// configuration, clock and trace outlive each run, so a restart comes
// back on the same addresses with the same history.
type Member struct {
	number int
	name   string
	// memAddr is the address its dialers answer to when it has no TCP
	// port: 127.0.0.<number>:0, which no real dial reaches.
	memAddr *net.TCPAddr
	clock   *clock.Fake // nil on the real clock
	broker  *trace.Broker
	rec     *trace.Recorder
	clients *clientLinks
	quiet   *quietLog // its logger's: quiet while a fault the test caused lasts

	// mu serialises Start, Stop and Restart; cfg is theirs (Start pins
	// its addresses after the first start).
	mu  sync.Mutex
	cfg server.Config
	cur atomic.Pointer[server.Server] // nil while stopped
	// addr is Addr, kept apart from mu so that dialling never waits for
	// a restart.
	addr atomic.Pointer[string]
}

// NewMember prepares a member; Start runs it. Its trace is recorded from
// now until Close.
func NewMember(c MemberConfig) *Member {
	// Settle past the expiry loop's next wake-up, which notices a pause.
	quiet := &quietLog{settle: 2*max(c.Server.TickTime, server.DefaultTickTime) + time.Second}
	logger := c.Server.Logger
	if logger == nil {
		logger = slog.Default()
	}
	c.Server.Logger = slog.New(quiet.wrap(logger.Handler()))
	if c.Server.Raft != nil {
		c.Server.Raft.Logger = c.Server.Logger
	}
	return newMember(c, newClientLinks(), quiet)
}

func newMember(c MemberConfig, clients *clientLinks, quiet *quietLog) *Member {
	m := &Member{number: c.Number, name: c.Name, broker: new(trace.Broker), clients: clients, quiet: quiet,
		memAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(c.Number)), Port: 0}, cfg: c.Server}
	if c.FakeClock {
		at := c.FakeStart
		if at.IsZero() {
			at = time.Now()
		}
		m.clock = clock.NewFake(at)
		m.cfg.Clock = m.clock
	}
	m.cfg.Trace = m.broker
	m.rec = m.broker.Record(trace.Filter{}, 0)
	m.pinAddr()
	return m
}

// pinAddr records Addr from cfg; mu is held or m not yet shared.
func (m *Member) pinAddr() {
	a := m.memAddr.String()
	if !m.cfg.NoClientPort {
		a = m.cfg.ListenAddr
	}
	m.addr.Store(&a)
}

// Number is the member's number, from 1.
func (m *Member) Number() int { return m.number }

// Name is the member's name in logs and errors.
func (m *Member) Name() string { return m.name }

// Clock is the member's fake clock; nil on the real clock.
func (m *Member) Clock() *clock.Fake { return m.clock }

// Recorder holds every event the member published since NewMember.
func (m *Member) Recorder() *trace.Recorder { return m.rec }

// Broker is the member's trace, across restarts.
func (m *Member) Broker() *trace.Broker { return m.broker }

// Server is the running server; nil while stopped.
func (m *Member) Server() *server.Server { return m.cur.Load() }

// Running reports whether the member runs.
func (m *Member) Running() bool { return m.cur.Load() != nil }

// Addr is the address clients reach it at: its TCP client port when it
// has one, otherwise its in-memory address (127.0.0.N:0), which only its
// dialers reach.
func (m *Member) Addr() string { return *m.addr.Load() }

// Start starts the member and, if ready is positive, waits that long at
// most for it to serve (an ensemble member cannot before the others
// run).
func (m *Member) Start(ready time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.startLocked(ready)
}

func (m *Member) startLocked(ready time.Duration) error {
	if m.cur.Load() != nil {
		return fmt.Errorf("%s: already running", m.name)
	}
	srv := server.New(m.cfg)
	if err := srv.Start(); err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	if ready > 0 {
		select {
		case <-srv.Ready():
		case <-time.After(ready):
			_ = srv.Close()
			return fmt.Errorf("%s started but did not become ready (no leader) within %v", m.name, ready)
		}
	}
	// Come back on the same addresses after a restart.
	if !m.cfg.NoClientPort {
		m.cfg.ListenAddr = srv.Addr().String()
		m.pinAddr()
	}
	if r := m.cfg.Raft; r != nil && len(r.Peers) == 0 {
		if addr := srv.Replication().Raft["raft_addr"]; addr != "" {
			r.RaftAddr = addr
		}
	}
	m.cur.Store(srv)
	return nil
}

// Stop stops the member at once, as a crash would: sessions are not
// closed, clients lose their connections. It reports what closing the
// server said.
func (m *Member) Stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopLocked()
}

func (m *Member) stopLocked() error {
	if srv := m.cur.Swap(nil); srv != nil {
		if err := srv.Close(); err != nil {
			return fmt.Errorf("%s: close: %w", m.name, err)
		}
	}
	return nil
}

// Restart stops the member (if running), as a crash would, and starts it
// again on the same addresses, waiting up to ready for it to serve.
func (m *Member) Restart(ready time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	_ = m.stopLocked()
	return m.startLocked(ready)
}

// Close stops the member and its trace recording.
func (m *Member) Close() error {
	err := m.Stop()
	m.rec.Close()
	return err
}

// Dial opens one in-memory connection to the member, shaped as its
// client links say (SetClientShape): no port, no kernel socket. While the
// member is stopped it is refused, as by a closed port; while it is
// paused it connects and hangs, as to a stopped process.
func (m *Member) Dial() (net.Conn, error) {
	srv := m.cur.Load()
	if srv == nil {
		return nil, Refused(m.memAddr.String())
	}
	nc, err := srv.DialMemory()
	if err != nil {
		return nil, Refused(m.memAddr.String())
	}
	return m.clients.wrap(nc, m.number), nil
}

// Refused is the error of a dial to a closed port.
func Refused(address string) error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: stringAddr(address), Err: syscall.ECONNREFUSED}
}

type stringAddr string

func (a stringAddr) Network() string { return "tcp" }
func (a stringAddr) String() string  { return string(a) }

// server returns the running server or ErrStopped.
func (m *Member) server() (*server.Server, error) {
	if srv := m.cur.Load(); srv != nil {
		return srv, nil
	}
	return nil, fmt.Errorf("%s: %w", m.name, ErrStopped)
}

// Advance moves the member's fake clock by d; see Cluster.Advance. A
// stopped member's clock moves too.
func (m *Member) Advance(d time.Duration, alive []int64) error {
	if m.clock == nil {
		return server.ErrRealClock
	}
	srv := m.cur.Load()
	if srv == nil {
		m.clock.Advance(d)
		return nil
	}
	if err := srv.AdvanceClock(d, alive...); err != nil {
		return fmt.Errorf("%s: advance %v: %w", m.name, d, err)
	}
	return nil
}

// Connected lists the sessions whose clients are connected to the member
// now.
func (m *Member) Connected() []int64 {
	srv := m.cur.Load()
	if srv == nil {
		return nil
	}
	return srv.ConnectedSessions()
}

// SetSessionShape degrades the connection of session id's client to this
// member, both ways, now and after it reconnects; the zero Shape
// restores it. (In a Cluster, its own SetSessionShape covers every
// member.)
func (m *Member) SetSessionShape(id int64, s faultnet.Shape) error {
	if err := s.Check(); err != nil {
		return err
	}
	m.clients.setSession(id, s)
	return nil
}

// Pause makes a lone member stop answering, as a stopped process (see
// server.Pause), its warnings about it logged quietly. (An ensemble's
// members are paused by Cluster.Pause, which silences their peers too.)
func (m *Member) Pause() error {
	srv, err := m.server()
	if err != nil {
		return err
	}
	m.quiet.fault()
	srv.Pause()
	return nil
}

// Resume undoes Pause.
func (m *Member) Resume() error {
	srv, err := m.server()
	if err != nil {
		return err
	}
	srv.Resume()
	m.quiet.healed(false)
	return nil
}
