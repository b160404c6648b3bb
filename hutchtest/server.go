package hutchtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/clock"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/server"
	"github.com/hutchzk/hutch/trace"
)

// Server is a hutch server running for one test. Start makes one; the
// test's cleanup stops it. Its methods fail the test (tb.Fatal) when
// something they need does not happen, so they belong on the test's
// goroutine.
type Server struct {
	tb   testing.TB
	opts options
	name string // in logs and failure messages: "hutch", "hutch-2"
	// memAddr is the address the dialer answers to for this server when
	// it has no TCP port: 127.0.0.<member>:0, which no real dial reaches.
	memAddr *net.TCPAddr
	clock   *clock.Fake // nil on the real clock
	broker  *trace.Broker
	rec     *trace.Recorder
	log     *testLog

	// cfg is the server's configuration; start pins its addresses after
	// the first start, so a restart comes back on the same ones.
	cfg server.Config

	// mu serialises Restart, Kill and the start that follows.
	mu  sync.Mutex
	cur atomic.Pointer[server.Server] // nil while stopped

	// ens and index place a member of an ensemble, for Pause.
	ens   *Ensemble
	index int
}

// Start runs a hutch server for the test and stops it when the test ends.
// It fails the test at once, with the reason, if the server cannot start;
// nothing waits on a port or a sleep. By default the server has no TCP
// port: clients reach it through Dialer (or Connect).
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	s := newServer(tb, o, "hutch", 1)
	if o.dataDir != "" {
		// A lone voter: it elects itself, and no peer can disturb it.
		s.cfg.Raft = &raftstore.Config{NodeID: 1, RaftAddr: "127.0.0.1:0", DataDir: o.dataDir,
			ElectionTimeout: 100 * time.Millisecond, Logger: s.cfg.Logger}
	}
	if err := s.start(true); err != nil {
		tb.Fatalf("hutchtest: start: %v", err)
	}
	return s
}

// newServer prepares a server (member is its 1-based place in an
// ensemble, 1 alone) and registers its cleanup.
func newServer(tb testing.TB, o options, name string, member int) *Server {
	s := &Server{tb: tb, opts: o, name: name, broker: new(trace.Broker),
		memAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(member)), Port: 0}}
	s.log = &testLog{tb: tb, prefix: name + ": "}
	// Cleanups run last-registered first: the log stops after the server.
	tb.Cleanup(s.log.stop)
	logger := o.logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(s.log, &slog.HandlerOptions{Level: o.logLevel}))
	}
	if o.fakeClock {
		at := o.fakeStart
		if at.IsZero() {
			at = time.Now()
		}
		s.clock = clock.NewFake(at)
	}
	s.cfg = server.Config{
		ListenAddr:             "127.0.0.1:0",
		NoClientPort:           !o.tcp,
		TickTime:               o.tick,
		MinSessionTimeout:      o.minTimeout,
		MaxSessionTimeout:      o.maxTimeout,
		MaxClientConnsPerIP:    o.maxConns,
		SuperDigest:            o.superDigest,
		FourLetterWords:        o.words,
		ContainerCheckInterval: o.containerCheck,
		Logger:                 logger,
		Trace:                  s.broker,
	}
	if s.clock != nil {
		s.cfg.Clock = s.clock
	}
	s.rec = s.broker.Record(trace.Filter{}, 0)
	tb.Cleanup(func() {
		s.stop()
		s.rec.Close()
	})
	return s
}

// start starts the server on s.cfg and, if ready, waits until it serves
// (a member of an ensemble cannot: it needs the others).
func (s *Server) start(ready bool) error {
	srv := server.New(s.cfg)
	if err := srv.Start(); err != nil {
		return err
	}
	if ready {
		wait := max(s.opts.waitTimeout, 30*time.Second)
		select {
		case <-srv.Ready():
		case <-time.After(wait):
			_ = srv.Close()
			return fmt.Errorf("%s started but did not become ready (no leader) within %v", s.name, wait)
		}
	}
	// Come back on the same addresses after a restart.
	if !s.cfg.NoClientPort {
		s.cfg.ListenAddr = srv.Addr().String()
	}
	if r := s.cfg.Raft; r != nil && len(r.Peers) == 0 {
		if addr := srv.Replication().Raft["raft_addr"]; addr != "" {
			r.RaftAddr = addr
		}
	}
	s.cur.Store(srv)
	return nil
}

// stop closes the server, as a crash would: sessions are not closed.
func (s *Server) stop() {
	if srv := s.cur.Swap(nil); srv != nil {
		if err := srv.Close(); err != nil {
			s.log.write(fmt.Sprintf("close: %v", err))
		}
	}
}

// srv returns the running server, failing the test if it is stopped.
func (s *Server) srv() *server.Server {
	s.tb.Helper()
	srv := s.cur.Load()
	if srv == nil {
		s.tb.Fatalf("hutchtest: %s is not running", s.name)
	}
	return srv
}

// Server is the running server.Server, for what this package does not
// wrap; nil while stopped.
func (s *Server) Server() *server.Server { return s.cur.Load() }

// Addr is the address clients connect to: the TCP port with the TCP
// option, otherwise an in-memory address (127.0.0.1:0 alone,
// 127.0.0.N:0 for member N of an ensemble) that only Dialer reaches.
func (s *Server) Addr() string {
	if !s.cfg.NoClientPort {
		return s.cfg.ListenAddr
	}
	return s.memAddr.String()
}

// ConnectString is the connection string of a ZooKeeper client: Addr.
func (s *Server) ConnectString() string { return s.Addr() }

// Dialer returns a dial function that connects to this server through an
// in-memory pipe, whatever address it is given: no port, no kernel
// socket. Pass it to go-zookeeper with zk.WithDialer. While the server is
// stopped (Kill, Restart) dials are refused, as by a closed port; while
// it is paused they connect and hang, as to a stopped process.
func (s *Server) Dialer() func(network, address string, timeout time.Duration) (net.Conn, error) {
	return func(_, address string, _ time.Duration) (net.Conn, error) { return s.dial(address) }
}

// dial opens one in-memory connection to the server.
func (s *Server) dial(address string) (net.Conn, error) {
	srv := s.cur.Load()
	if srv == nil {
		return nil, refused(address)
	}
	nc, err := srv.DialMemory()
	if err != nil {
		return nil, refused(address)
	}
	return nc, nil
}

// refused is the error of a dial to a closed port.
func refused(address string) error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: stringAddr(address), Err: syscall.ECONNREFUSED}
}

type stringAddr string

func (a stringAddr) Network() string { return "tcp" }
func (a stringAddr) String() string  { return string(a) }

// Connect opens a go-zookeeper session to the server through Dialer and
// returns once the session is established; it is closed when the test
// ends. opts are go-zookeeper's connection options (zk.WithLogger, ...),
// applied after this package's: its dialer, and a logger that discards.
// The events it returns are those after the session was established.
func (s *Server) Connect(timeout time.Duration, opts ...func(*zk.Conn)) (*zk.Conn, <-chan zk.Event) {
	s.tb.Helper()
	return connect(s.tb, []string{s.ConnectString()}, timeout, s.Dialer(), s.opts.waitTimeout, opts)
}

// connect is Connect to servers through dial.
func connect(tb testing.TB, servers []string, timeout time.Duration, dial zk.Dialer, wait time.Duration, extra []func(*zk.Conn)) (*zk.Conn, <-chan zk.Event) {
	tb.Helper()
	c, events, err := zk.Connect(servers, timeout, zkOptions(zk.WithDialer(dial), append([]func(*zk.Conn){zk.WithLogger(discard{})}, extra...))...)
	if err != nil {
		tb.Fatalf("hutchtest: connect: %v", err)
	}
	tb.Cleanup(c.Close)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for c.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-deadline.C:
			tb.Fatalf("hutchtest: no session after %v (state %v)", wait, c.State())
		}
	}
	return c, events
}

// zkOptions makes go-zookeeper's option list, whose element type it does
// not export, from first (one of them) and the rest.
func zkOptions[T ~func(*zk.Conn)](first T, rest []func(*zk.Conn)) []T {
	out := []T{first}
	for _, f := range rest {
		out = append(out, T(f))
	}
	return out
}

// discard is a go-zookeeper logger that drops everything.
type discard struct{}

func (discard) Printf(string, ...any) {}

// FourLetterWord sends a four-letter word ("ruok", "srvr", "mntr", ...)
// over an in-memory connection and returns the answer; "" if the server
// closed the connection unanswered (a connection limit reached).
func (s *Server) FourLetterWord(word string) string {
	s.tb.Helper()
	nc, err := s.dial(s.Addr())
	if err != nil {
		s.tb.Fatalf("hutchtest: %s: %v", word, err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(s.opts.waitTimeout))
	if _, err := io.WriteString(nc, word); err != nil {
		if errors.Is(err, io.ErrClosedPipe) {
			return "" // closed by the server before reading it
		}
		s.tb.Fatalf("hutchtest: %s: %v", word, err)
	}
	b, err := io.ReadAll(nc)
	if err != nil {
		s.tb.Fatalf("hutchtest: %s: %v", word, err)
	}
	return string(b)
}

// Restart stops the server, as a crash would, and starts it again on the
// same addresses. With DataDir the tree and the sessions come back (the
// clients reconnect and re-attach their sessions). Without it the server
// starts empty; a client that had seen its old state is refused, as
// ZooKeeper refuses a client that saw a newer zxid than the server has,
// and new clients see the empty tree.
func (s *Server) Restart() {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stop()
	if err := s.start(s.ens == nil); err != nil {
		s.tb.Fatalf("hutchtest: restart %s: %v", s.name, err)
	}
}

// ctx is a context bounded by the wait timeout.
func (s *Server) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.opts.waitTimeout)
}

// testLog writes the server's log lines to the test's log until the
// test's cleanup ends it: a line logged after the test finished would
// make the testing package panic.
type testLog struct {
	tb     testing.TB
	prefix string
	mu     sync.RWMutex // held to read done while logging; to write it by stop
	done   bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.write(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (l *testLog) write(line string) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if !l.done {
		l.tb.Log(l.prefix + line)
	}
}

func (l *testLog) stop() {
	l.mu.Lock()
	l.done = true
	l.mu.Unlock()
}
