// Command hutch runs a ZooKeeper-compatible coordination server. With no
// flags it serves one in-memory node on 127.0.0.1:2181.
package main

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/hutchzk/hutch/bench"
	"github.com/hutchzk/hutch/cli"
	"github.com/hutchzk/hutch/monitor/prometheus"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/server"
	"github.com/hutchzk/hutch/trace"
	"github.com/hutchzk/hutch/zoocfg"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "cli" {
		os.Exit(cli.Main(os.Args[2:]))
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "hutch:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "bench" {
		return bench.Main(args[1:]) // hutch bench: workloads against any ZooKeeper-compatible server
	}
	if len(args) > 0 && args[0] == "log-store" {
		return runLogStore(args[1:]) // moving a data directory to another log store
	}
	if len(args) > 0 && (args[0] == "import" || args[0] == "export") {
		return runMigration(args[0], args[1:]) // moving data in from ZooKeeper and back out
	}
	if len(args) > 0 && args[0] == "test-ensemble" {
		return testEnsemble(args[1:], os.Stdout) // an in-process ensemble with its controls, for tests
	}
	fs, f := newFlags()
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return nil
		}
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToUpper(f.logLevel))); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	cfg, err := configure(fs, f, logger)
	if err != nil {
		return err
	}
	mode, err := parseClock(f.clock)
	if err != nil {
		return err
	}
	controls, err := prepareTestControls(f.testControls, mode, &cfg)
	if err != nil {
		return err
	}
	srv := server.New(cfg)
	// Listen for signals before serving, so one sent as soon as the server
	// reports it is up still shuts it down cleanly.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	if err := srv.Start(); err != nil {
		if controls != nil {
			controls.close()
		}
		return err
	}
	if controls != nil {
		h := srv.ControlHandler()
		if mode.keepConnected {
			h = keepConnectedByDefault(h)
		}
		controls.serve(h)
		defer controls.close()
	}
	announce(os.Stdout, srv, controls)
	var halted error
	select {
	case got := <-sig:
		logger.Info("shutting down", "signal", got.String())
	case <-srv.Halted():
		// The member stopped itself (a failed disk write, a damaged log,
		// a state that differs from the others'): exit, as ZooKeeper
		// does, so that a supervisor sees it.
		halted = fmt.Errorf("this member stopped itself: %w", srv.HaltError())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Close() }()
	select {
	case err := <-done:
		return errors.Join(halted, err)
	case <-time.After(10 * time.Second):
		return errors.Join(halted, fmt.Errorf("shutdown timed out"))
	}
}

// flags are the command line's values; a zoo.cfg fills those not given.
type flags struct {
	config         string
	listen         string
	tick           time.Duration
	minTimeout     time.Duration
	maxTimeout     time.Duration
	maxConns       int
	maxFrame       int
	superDigest    string
	containerCheck time.Duration
	logLevel       string
	nodeID         uint64
	raftListen     string
	peers          string
	dataDir        string
	logStore       string
	secretFile     string
	electionTO     time.Duration
	adminListen    string
	adminToken     string
	metricsListen  string
	uiListen       string
	historyEvents  int
	historyBytes   int64
	fourLetter     []string
	jaasFile       string
	secureListen   string
	keyStore       string
	trustStore     string
	clientAuth     string
	testControls   string
	clock          string
	enforceQuota   bool
	readOnlyMode   bool
	reconfig       bool
}

func newFlags() (*pflag.FlagSet, *flags) {
	fs := pflag.NewFlagSet("hutch", pflag.ContinueOnError)
	f := &flags{}
	fs.StringVar(&f.config, "config", "", "read ZooKeeper's zoo.cfg (also taken as the one positional argument, as zkServer.sh passes it); flags given explicitly override its keys")
	fs.StringVar(&f.listen, "listen", server.DefaultListenAddr, "client address to listen on (zoo.cfg: clientPortAddress:clientPort, every interface when clientPortAddress is absent)")
	fs.DurationVar(&f.tick, "tick-time", server.DefaultTickTime, "ZooKeeper tickTime: expiry bucket width and unit of the session timeout bounds")
	fs.DurationVar(&f.minTimeout, "min-session-timeout", 0, "smallest negotiated session timeout (default 2×tick-time)")
	fs.DurationVar(&f.maxTimeout, "max-session-timeout", 0, "largest negotiated session timeout (default 20×tick-time)")
	fs.IntVar(&f.maxConns, "max-client-conns", server.DefaultMaxClientConnsPerIP, "connections allowed from one IP address (0 = unlimited)")
	fs.IntVar(&f.maxFrame, "max-frame-size", server.DefaultMaxFrameSize, "largest request frame in bytes (jute.maxbuffer)")
	fs.StringVar(&f.superDigest, "super-digest", "", "digest user:base64(sha1) whose sessions bypass every ACL (zoo.cfg: DigestAuthenticationProvider.superDigest)")
	fs.DurationVar(&f.containerCheck, "container-check-interval", server.DefaultContainerCheckInterval, "how often empty containers and expired TTL nodes are removed")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.Uint64Var(&f.nodeID, "id", 0, "this node's id in a Raft ensemble, 1 to 254 (with --peers; zoo.cfg: <dataDir>/myid)")
	fs.StringVar(&f.raftListen, "raft-listen", "", "address this node listens on for its peers (default: its entry in --peers); peer connections are made from its IP")
	fs.StringVar(&f.peers, "peers", "", "static ensemble: the address each node's peers reach it at, e.g. 1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003 (needs --id, --data-dir and --peer-secret-file; zoo.cfg: server.N=host:quorumPort:electionPort, Raft runs on the quorum port and the election port is not used)")
	fs.StringVar(&f.dataDir, "data-dir", "", "keep the Raft log, term, vote and snapshots here (required with --peers; zoo.cfg: dataDir)")
	fs.StringVar(&f.logStore, "log-store", "", "the Raft log store a new --data-dir gets: seglog (hutch's own, one fsync per append batch, the default), bolt (raft-boltdb, two fsyncs per append) or wal (hashicorp/raft-wal v0.4.0, experimental: it may not restart after a log-tail truncation, hashicorp/raft-wal#31); a data directory keeps the kind it was made with (hutch log-store convert moves one to another)")
	fs.StringVar(&f.secretFile, "peer-secret-file", "", "file holding the secret, shared by every member, that authenticates peers to each other (required with --peers; at least 16 bytes; zoo.cfg: hutch.peerSecretFile)")
	fs.DurationVar(&f.electionTO, "election-timeout", raftstore.DefaultElectionTimeout, "Raft election timeout: a follower starts an election after hearing nothing from the leader for between half of it and all of it")
	fs.StringVar(&f.adminListen, "admin-listen", "", "serve admin HTTP commands (/commands/ruok, /commands/digest, /commands/members) here (zoo.cfg: admin.serverAddress:admin.serverPort when admin.enableServer)")
	fs.StringVar(&f.adminToken, "admin-token-file", "", "file holding the bearer token that admin HTTP membership changes must carry (without it they are refused; zoo.cfg: hutch.adminTokenFile)")
	fs.StringVar(&f.secureListen, "secure-listen", "", "serve clients over TLS here as well (zoo.cfg: secureClientPortAddress:secureClientPort); needs --ssl-keystore")
	fs.StringVar(&f.keyStore, "ssl-keystore", "", "PEM file holding the TLS server certificate chain and its unencrypted private key (zoo.cfg: ssl.keyStore.location)")
	fs.StringVar(&f.trustStore, "ssl-truststore", "", "PEM bundle of the CAs that sign client certificates; a verified one adds the identity x509:<subject DN> (zoo.cfg: ssl.trustStore.location)")
	fs.StringVar(&f.clientAuth, "ssl-client-auth", "need", "client certificates on the TLS port: none, want (checked when given) or need (zoo.cfg: ssl.clientAuth)")
	fs.StringVar(&f.metricsListen, "metrics-listen", "", "serve Prometheus metrics at /metrics here (zoo.cfg: metricsProvider.httpHost:httpPort with the Prometheus provider)")
	fs.StringVar(&f.uiListen, "ui", "", "serve the live view (tree, sessions, watches, lock queues, ensemble, event trace) at http://ADDR/ui/ and the trace as JSON lines at /trace, read-only; on a non-loopback address only with --admin-token-file, whose token it then requires (the admin port serves it too)")
	fs.IntVar(&f.historyEvents, "trace-history", trace.DefaultHistoryEvents, "events of the trace the server keeps for the live view to open on and replay (0 keeps none); the window is bounded by --trace-history-bytes too")
	fs.Int64Var(&f.historyBytes, "trace-history-bytes", trace.DefaultHistoryBytes, "bytes the trace's window may hold (the live view and metrics report what it holds)")
	fs.StringSliceVar(&f.fourLetter, "four-letter-words", nil, "four-letter words answered, or * for all; srvr always answers (zoo.cfg: 4lw.commands.whitelist; default: all on a loopback-only client port, else ruok,srvr,isro; with a zoo.cfg, srvr only, as in ZooKeeper)")
	fs.StringVar(&f.jaasFile, "jaas-file", "", `JAAS file whose Server section lists the SASL DIGEST-MD5 users (user_<name>="<password>"), as java.security.auth.login.config (zoo.cfg: hutch.jaasFile)`)
	fs.BoolVar(&f.reconfig, "reconfig-enabled", false, "let clients change the ensemble's membership with reconfig (zkCli.sh reconfig, ZooKeeperAdmin.reconfigure), as ZooKeeper's reconfigEnabled; the leader's setting decides (zoo.cfg: reconfigEnabled)")
	fs.BoolVar(&f.enforceQuota, "enforce-quota", false, "refuse with QUOTAEXCEEDED a create or setData that would pass a hard quota limit (setquota -N/-B), and log every limit passed, as zookeeper.enforceQuota (zoo.cfg: enforceQuota); every member of an ensemble must agree")
	fs.BoolVar(&f.readOnlyMode, "read-only-mode", false, "readonlymode.enabled: an ensemble member that has known no leader for max(2s, tick-time) serves clients that ask for read-only (canBeReadOnly) from its own state, refusing writes with NOTREADONLY, until a leader is known again (zoo.cfg: readonlymode.enabled)")
	fs.StringVar(&f.testControls, "test-controls", "", testControlsHelp)
	fs.StringVar(&f.clock, "clock", "real", clockHelp)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	return fs, f
}

const usageText = `Usage: hutch [flags] [zoo.cfg]
       hutch cli [-server host:port] [command args...]   (a zkCli.sh-like client; hutch cli -h)
       hutch bench [flags] [workload...]                 (workloads side by side; hutch bench -h)
       hutch import --zookeeper-data-dir DIR --data-dir OUT  (ZooKeeper's data into hutch; hutch import -h)
       hutch export --data-dir DIR --zookeeper-data-dir OUT  (hutch's data back to ZooKeeper; hutch export -h)
       hutch test-ensemble [--nodes 3] [flags]           (an in-process ensemble with failover controls, for tests; hutch test-ensemble -h)

hutch serves ZooKeeper's client protocol. With no flags it serves one
in-memory node on 127.0.0.1:2181. Once serving it writes the client
address it bound as the first line of standard output (so --listen
127.0.0.1:0 gives a test harness a free port without a race). Given
ZooKeeper's zoo.cfg (as the one argument, or with --config) it runs as
ZooKeeper would from that file: on clientPort, keeping its data in
dataDir, and, with server.N lines, as a member of a Raft ensemble whose
id is in <dataDir>/myid. Raft runs on each server's quorum port; the
election port is not used. An ensemble also needs
hutch.peerSecretFile=<file> in zoo.cfg (a key ZooKeeper ignores). Flags
given explicitly override the file; keys hutch does not use are logged.

Flags:
`

// configure turns the flags, and the zoo.cfg they name, into the server's
// configuration.
func configure(fs *pflag.FlagSet, f *flags, logger *slog.Logger) (server.Config, error) {
	cfgFile := f.config
	switch rest := fs.Args(); {
	case len(rest) > 1:
		return server.Config{}, fmt.Errorf("one zoo.cfg argument at most, got %q", rest)
	case len(rest) == 1 && cfgFile != "":
		return server.Config{}, fmt.Errorf("zoo.cfg given twice: --config %s and %s", cfgFile, rest[0])
	case len(rest) == 1:
		cfgFile = rest[0]
	}
	var file fileSettings
	if cfgFile != "" {
		var err error
		if file, err = applyZooCfg(cfgFile, fs, f, logger); err != nil {
			return server.Config{}, err
		}
	}
	conns := f.maxConns
	if conns == 0 {
		conns = -1 // zoo.cfg's maxClientCnxns=0 means unlimited
	}
	replication, err := raftConfig(f.nodeID, f.raftListen, f.peers, f.dataDir, f.secretFile)
	if err != nil {
		return server.Config{}, err
	}
	var token string
	if f.adminToken != "" {
		b, err := readSecret(f.adminToken)
		if err != nil {
			return server.Config{}, fmt.Errorf("--admin-token-file: %w", err)
		}
		token = string(b)
	}
	if replication != nil {
		replication.Members = file.members
		replication.StandaloneDisabled = file.standaloneDisabled
		replication.Logger = logger
		replication.ElectionTimeout = f.electionTO
		replication.LogStore = f.logStore
	}
	words := file.fourLetterWords
	if fs.Changed("four-letter-words") {
		words = f.fourLetter
	}
	secureListen, tlsConfig := file.secureListen, file.tls
	if fs.Changed("secure-listen") {
		secureListen = f.secureListen
	}
	if fs.Changed("ssl-keystore") || fs.Changed("ssl-truststore") || fs.Changed("ssl-client-auth") || (secureListen != "" && tlsConfig == nil) {
		if tlsConfig, err = tlsFromFlags(f); err != nil {
			return server.Config{}, err
		}
	}
	var saslUsers map[string]string
	if f.jaasFile != "" {
		section := file.jaasSection
		if section == "" {
			section = "Server"
		}
		if saslUsers, err = zoocfg.LoadJAAS(f.jaasFile, section); err != nil {
			return server.Config{}, fmt.Errorf("--jaas-file: %w", err)
		}
	}
	return server.Config{
		ListenAddr:             f.listen,
		TickTime:               f.tick,
		MinSessionTimeout:      f.minTimeout,
		MaxSessionTimeout:      f.maxTimeout,
		MaxClientConnsPerIP:    conns,
		MaxFrameSize:           f.maxFrame,
		SuperDigest:            f.superDigest,
		ContainerCheckInterval: f.containerCheck,
		Logger:                 logger,
		AdminAddr:              f.adminListen,
		AdminToken:             token,
		FourLetterWords:        words,
		SecureListenAddr:       secureListen,
		TLS:                    tlsConfig,
		SASLUsers:              saslUsers,
		EnforceQuota:           f.enforceQuota,
		ReadOnlyMode:           f.readOnlyMode,
		ReconfigEnabled:        f.reconfig,
		MetricsAddr:            f.metricsListen,
		MetricsProvider:        prometheus.Handler,
		UIAddr:                 f.uiListen,
		TraceHistory:           historyLimits(f.historyEvents, f.historyBytes),
		InitLimit:              file.initLimit,
		SyncLimit:              file.syncLimit,
		DataLogDir:             file.dataLogDir,
		Raft:                   replication,
	}, nil
}

// historyLimits turns --trace-history and --trace-history-bytes into the
// server's window: 0 events keeps none.
func historyLimits(events int, bytes int64) trace.HistoryLimits {
	if events <= 0 || bytes <= 0 {
		return trace.HistoryLimits{Events: -1}
	}
	return trace.HistoryLimits{Events: events, Bytes: bytes}
}

// parsePeers reads --peers: id=host:port,... by node id.
func parsePeers(peers string) (map[uint64]string, error) {
	members := map[uint64]string{}
	addrs := map[string]uint64{}
	for _, part := range strings.Split(peers, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		k, addr, ok := strings.Cut(part, "=")
		n, err := strconv.ParseUint(k, 10, 64)
		if !ok || err != nil || addr == "" {
			return nil, fmt.Errorf("--peers: %q is not id=host:port", part)
		}
		if n < 1 || n > server.MaxServerID {
			return nil, fmt.Errorf("--peers: id %d out of range: ids run from 1 to %d", n, server.MaxServerID)
		}
		if _, dup := members[n]; dup {
			return nil, fmt.Errorf("--peers: id %d is listed twice", n)
		}
		if other, dup := addrs[addr]; dup {
			return nil, fmt.Errorf("--peers: ids %d and %d have the same address %s", other, n, addr)
		}
		members[n], addrs[addr] = addr, n
	}
	return members, nil
}

// raftConfig turns the ensemble flags into a Raft configuration, or nil for
// the default single in-memory node without Raft.
func raftConfig(id uint64, listen, peers, dataDir, secretFile string) (*raftstore.Config, error) {
	if peers == "" && dataDir == "" && id == 0 && listen == "" {
		return nil, nil
	}
	members, err := parsePeers(peers)
	if err != nil {
		return nil, err
	}
	if id == 0 {
		if len(members) > 0 {
			return nil, fmt.Errorf("--peers needs --id")
		}
		id = 1
	}
	if id > server.MaxServerID {
		return nil, fmt.Errorf("--id %d out of range: ids run from 1 to %d", id, server.MaxServerID)
	}
	if len(members) > 0 && members[id] == "" {
		return nil, fmt.Errorf("--id %d is not in --peers", id)
	}
	if len(members) > 0 && dataDir == "" {
		// In memory a member forgets its term, vote and log when it
		// restarts; it could then vote twice in one term and lose
		// writes the ensemble acknowledged.
		return nil, fmt.Errorf("--peers needs --data-dir: an ensemble member must keep its Raft state on disk")
	}
	var secret []byte
	if len(members) > 0 {
		if secretFile == "" {
			return nil, fmt.Errorf("--peers needs --peer-secret-file: members authenticate each other with a shared secret")
		}
		var err error
		if secret, err = readSecret(secretFile); err != nil {
			return nil, fmt.Errorf("--peer-secret-file: %w", err)
		}
	}
	if listen == "" {
		listen = members[id]
	}
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	return &raftstore.Config{NodeID: id, RaftAddr: listen, Peers: members, DataDir: dataDir, Secret: secret}, nil
}

// minSecret is the shortest secret or token accepted from a file.
const minSecret = 16

// readSecret reads a secret from a file, without surrounding white space.
func readSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	if len(b) < minSecret {
		return nil, fmt.Errorf("%s holds %d bytes; at least %d are needed", path, len(b), minSecret)
	}
	return b, nil
}

// tlsFromFlags builds the TLS port's configuration from the --ssl-* flags,
// read as zoo.cfg's ssl.* keys are.
func tlsFromFlags(f *flags) (*tls.Config, error) {
	switch f.clientAuth {
	case "none", "want", "need":
	default:
		return nil, fmt.Errorf("--ssl-client-auth: %q is not none, want or need", f.clientAuth)
	}
	if f.keyStore == "" {
		return nil, fmt.Errorf("--secure-listen needs --ssl-keystore: a PEM file with the server's certificate and private key")
	}
	zc := zoocfg.Config{SecureClientPort: 1, SSL: zoocfg.SSL{KeyStoreLocation: f.keyStore, TrustStoreLocation: f.trustStore, ClientAuth: f.clientAuth}}
	c, err := zc.TLSConfig()
	var fe *zoocfg.Error
	if errors.As(err, &fe) {
		flag := map[string]string{"ssl.keyStore.location": "--ssl-keystore", "ssl.trustStore.location": "--ssl-truststore"}[fe.Key]
		if flag == "" {
			flag = "--ssl-keystore"
		}
		return nil, fmt.Errorf("%s: %w", flag, fe.Err)
	}
	return c, err
}
