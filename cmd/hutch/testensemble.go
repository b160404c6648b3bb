package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/hutchzk/hutch/internal/testcluster"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/server"
)

const testEnsembleUsage = `Usage: hutch test-ensemble [flags]

FOR TESTS ONLY. Runs an ensemble of hutch members in this one process, on
hutch's real Raft code, with HTTP controls that crash, pause, partition
and slow its members: failover tests for clients in any language, with
no container. Once it serves it writes two lines to standard output:

  127.0.0.1:41235,127.0.0.1:41237,127.0.0.1:41239   (the connect string)
  test-controls http://127.0.0.1:38211

Members are numbered from 1 in connect-string order (POST /kill?member=2
crashes the second). GET / on the controls lists them all. Every port is
loopback only and chosen by the kernel unless given. It stops on SIGINT
or SIGTERM.

Flags:
`

// testEnsemble runs hutch test-ensemble until a signal.
func testEnsemble(args []string, stdout io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return runTestEnsemble(ctx, args, stdout, os.Stderr)
}

// runTestEnsemble starts the ensemble, announces it on stdout and serves
// until ctx ends.
func runTestEnsemble(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("hutch test-ensemble", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	nodes := fs.Int("nodes", 3, "members of the ensemble (1 runs a lone member with the same controls)")
	listen := fs.String("listen", "127.0.0.1:0", "loopback address of the members' client ports: port 0 lets the kernel choose each, port P gives member N port P+N-1")
	controlsAddr := fs.String("controls", "127.0.0.1:0", "loopback address of the HTTP controls")
	clockFlag := fs.String("clock", "real", clockHelp)
	tick := fs.Duration("tick-time", server.DefaultTickTime, "ZooKeeper tickTime")
	minTimeout := fs.Duration("min-session-timeout", 0, "smallest negotiated session timeout (default 2×tick-time)")
	maxTimeout := fs.Duration("max-session-timeout", 0, "largest negotiated session timeout (default 20×tick-time)")
	election := fs.Duration("election-timeout", raftstore.DefaultElectionTimeout, "Raft election timeout: a killed leader is replaced within about two")
	dataDir := fs.String("data-dir", "", "keep the members' logs here, one directory each (default: a temporary directory removed at exit)")
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error; warnings caused by the controls' faults are logged at info")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), testEnsembleUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("test-ensemble takes no arguments, got %q", fs.Args())
	}
	mode, err := parseClock(*clockFlag)
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToUpper(*logLevel))); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	host, basePort, err := loopbackHostPort("--listen", *listen)
	if err != nil {
		return err
	}
	if *nodes < 1 || *nodes > 9 {
		return fmt.Errorf("--nodes %d: from 1 to 9", *nodes)
	}
	controls, err := listenControls("--controls", *controlsAddr)
	if err != nil {
		return err
	}
	defer controls.close()
	dir := *dataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "hutch-test-ensemble-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	member := func(n int) testcluster.MemberConfig {
		return testcluster.MemberConfig{Name: "hutch-" + strconv.Itoa(n), FakeClock: mode.fake, Server: server.Config{
			NoClientPort: true, TickTime: *tick, MinSessionTimeout: *minTimeout, MaxSessionTimeout: *maxTimeout,
			MaxClientConnsPerIP: -1, Logger: logger.With("member", n)}}
	}
	c, err := testcluster.Start(testcluster.Config{Size: *nodes, DataDir: dir, ElectionTimeout: *election, Member: member})
	if err != nil {
		return err
	}
	defer c.Close()
	fronts, err := c.ServeTCP(host, basePort)
	if err != nil {
		return err
	}
	defer fronts.Close()
	// /add-member: one more member, with the others' settings and a
	// client port of its own (the next after --listen's, or the kernel's).
	grow := func() (int, string, error) {
		n, err := c.AddMember(member(c.Size() + 1))
		if err != nil {
			return 0, "", err
		}
		m, err := c.Member(n)
		if err != nil {
			return 0, "", err
		}
		addr, err := fronts.Add(m)
		return n, addr, err
	}
	controls.serve(testcluster.Handler(c, testcluster.HandlerOptions{Addrs: fronts.Addrs(), KeepConnected: mode.keepConnected, Grow: grow}))
	fmt.Fprintln(stdout, strings.Join(fronts.Addrs(), ","))
	fmt.Fprintln(stdout, "test-controls", controls.url())
	<-ctx.Done()
	logger.Info("shutting down")
	return nil
}

// loopbackHostPort splits a loopback address; flag names it in errors.
func loopbackHostPort(flag, addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", flag, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%s: %q is not a port", flag, p)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", 0, errors.New(flag + ": refusing " + addr + ": a test ensemble listens on a loopback address only")
	}
	return host, port, nil
}
