package hutchtest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/testcluster"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/server"
)

// Server is a hutch server running for one test. Start makes one; the
// test's cleanup stops it. Its methods fail the test (tb.Fatal) when
// something they need does not happen, so they belong on the test's
// goroutine.
type Server struct {
	tb   testing.TB
	opts options
	m    *testcluster.Member

	// ens places a member of an ensemble (numbered from 1), for the
	// controls that act on the ensemble.
	ens *Ensemble
}

// Start runs a hutch server for the test and stops it when the test ends.
// It fails the test at once, with the reason, if the server cannot start;
// nothing waits on a port or a sleep. By default the server has no TCP
// port: clients reach it through Dialer (or Connect).
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	o := buildOptions(opts)
	cfg := memberConfig(tb, o, "hutch", 1)
	if o.dataDir != "" {
		// A lone voter: it elects itself, and no peer can disturb it.
		cfg.Server.Raft = &raftstore.Config{NodeID: 1, RaftAddr: "127.0.0.1:0", DataDir: o.dataDir,
			ElectionTimeout: 100 * time.Millisecond, Logger: cfg.Server.Logger}
	}
	s := &Server{tb: tb, opts: o, m: testcluster.NewMember(cfg)}
	tb.Cleanup(func() { s.logClose(s.m.Close()) })
	if err := s.m.Start(max(o.waitTimeout, 30*time.Second)); err != nil {
		tb.Fatalf("hutchtest: start: %v", err)
	}
	return s
}

func buildOptions(opts []Option) options {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// memberConfig is the configuration of member number (1 alone), logging
// to the test's log, whose end it registers with the test's cleanup.
func memberConfig(tb testing.TB, o options, name string, number int) testcluster.MemberConfig {
	log := &testLog{tb: tb, prefix: name + ": "}
	// Cleanups run last-registered first: the log stops after the server.
	tb.Cleanup(log.stop)
	logger := o.logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: o.logLevel}))
	}
	uiAddr := ""
	if o.liveView {
		uiAddr = "127.0.0.1:0"
	}
	return testcluster.MemberConfig{Number: number, Name: name, FakeClock: o.fakeClock, FakeStart: o.fakeStart,
		Server: server.Config{
			UIAddr:                 uiAddr,
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
		}}
}

// logClose reports an error closing the server in the test's log.
func (s *Server) logClose(err error) {
	if err != nil {
		s.tb.Logf("hutchtest: %v", err)
	}
}

// srv returns the running server, failing the test if it is stopped.
func (s *Server) srv() *server.Server {
	s.tb.Helper()
	srv := s.m.Server()
	if srv == nil {
		s.tb.Fatalf("hutchtest: %s is not running", s.m.Name())
	}
	return srv
}

// Server is the running server.Server, for what this package does not
// wrap; nil while stopped.
func (s *Server) Server() *server.Server { return s.m.Server() }

// Number is the server's number in its ensemble, from 1 (1 alone): the
// N of its name in the logs (hutch-N) and of its address 127.0.0.N:0.
func (s *Server) Number() int { return s.m.Number() }

// Addr is the address clients connect to: the TCP port with the TCP
// option, otherwise an in-memory address (127.0.0.1:0 alone,
// 127.0.0.N:0 for member N of an ensemble) that only Dialer reaches.
func (s *Server) Addr() string { return s.m.Addr() }

// ConnectString is the connection string of a ZooKeeper client: Addr.
func (s *Server) ConnectString() string { return s.Addr() }

// Dialer returns a dial function that connects to this server through an
// in-memory pipe, whatever address it is given: no port, no kernel
// socket. Pass it to go-zookeeper with zk.WithDialer. While the server is
// stopped (Kill, Restart) dials are refused, as by a closed port; while
// it is paused they connect and hang, as to a stopped process.
func (s *Server) Dialer() func(network, address string, timeout time.Duration) (net.Conn, error) {
	return func(_, _ string, _ time.Duration) (net.Conn, error) { return s.m.Dial() }
}

// Connect opens a go-zookeeper session to the server through Dialer and
// returns once the session is established; it is closed when the test
// ends. opts are go-zookeeper's connection options (zk.WithLogger, ...),
// applied after this package's: its dialer, and a logger that discards.
// The events channel holds only what comes after the session was
// established: the connection's own Connecting, Connected and
// HasSession events have been read.
func (s *Server) Connect(timeout time.Duration, opts ...func(*zk.Conn)) (*zk.Conn, <-chan zk.Event) {
	s.tb.Helper()
	return connect(s.tb, []string{s.ConnectString()}, timeout, s.Dialer(), s.opts.waitTimeout, opts)
}

// connect is Connect to servers through dial. It reads the events up to
// and including the one that reports the session, not just until the
// state says so: go-zookeeper sets the state before it queues the event,
// so a test would otherwise find the connection's own HasSession event
// waiting in the channel and take it for a later one.
func connect(tb testing.TB, servers []string, timeout time.Duration, dial zk.Dialer, wait time.Duration, extra []func(*zk.Conn)) (*zk.Conn, <-chan zk.Event) {
	tb.Helper()
	c, events, err := zk.Connect(servers, timeout, zkOptions(zk.WithDialer(dial), append([]func(*zk.Conn){zk.WithLogger(discard{})}, extra...))...)
	if err != nil {
		tb.Fatalf("hutchtest: connect: %v", err)
	}
	tb.Cleanup(c.Close)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		select {
		case ev := <-events:
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				return c, events
			}
		case <-deadline.C:
			tb.Fatalf("hutchtest: no session after %v (state %v)", wait, c.State())
		}
	}
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
	nc, err := s.m.Dial()
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
// and new clients see the empty tree. A member of an ensemble restarts
// from its log (Ensemble.Restart).
func (s *Server) Restart() {
	s.tb.Helper()
	if s.ens != nil {
		s.ens.Restart(s.Number())
		return
	}
	if err := s.m.Restart(max(s.opts.waitTimeout, 30*time.Second)); err != nil {
		s.tb.Fatalf("hutchtest: restart: %v", err)
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
