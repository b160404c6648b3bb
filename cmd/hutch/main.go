// Command hutch runs a ZooKeeper-compatible coordination server. With no
// flags it serves one in-memory node on 127.0.0.1:2181.
package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/server"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "hutch:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := pflag.NewFlagSet("hutch", pflag.ContinueOnError)
	var (
		listen         = fs.String("listen", server.DefaultListenAddr, "client address to listen on")
		tick           = fs.Duration("tick-time", server.DefaultTickTime, "ZooKeeper tickTime: expiry bucket width and unit of the session timeout bounds")
		minTimeout     = fs.Duration("min-session-timeout", 0, "smallest negotiated session timeout (default 2×tick-time)")
		maxTimeout     = fs.Duration("max-session-timeout", 0, "largest negotiated session timeout (default 20×tick-time)")
		maxConns       = fs.Int("max-client-conns", server.DefaultMaxClientConnsPerIP, "connections allowed from one IP address (0 = unlimited)")
		maxFrame       = fs.Int("max-frame-size", server.DefaultMaxFrameSize, "largest request frame in bytes (jute.maxbuffer)")
		superDigest    = fs.String("super-digest", "", "digest user:base64(sha1) whose sessions bypass every ACL")
		containerCheck = fs.Duration("container-check-interval", server.DefaultContainerCheckInterval, "how often empty containers and expired TTL nodes are removed")
		logLevel       = fs.String("log-level", "info", "debug, info, warn or error")
		nodeID         = fs.Uint64("id", 0, "this node's id in a Raft ensemble, 1 to 254 (with --peers)")
		raftListen     = fs.String("raft-listen", "", "address this node listens on for its peers (default: its entry in --peers); peer connections are made from its IP")
		peers          = fs.String("peers", "", "static ensemble: the address each node's peers reach it at, e.g. 1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003 (needs --id, --data-dir and --peer-secret-file)")
		dataDir        = fs.String("data-dir", "", "keep the Raft log, term, vote and snapshots here (required with --peers)")
		secretFile     = fs.String("peer-secret-file", "", "file holding the secret, shared by every member, that authenticates peers to each other (required with --peers; at least 16 bytes)")
		electionTO     = fs.Duration("election-timeout", raftstore.DefaultElectionTimeout, "Raft election timeout: a follower starts an election after hearing nothing from the leader for between half of it and all of it")
		adminListen    = fs.String("admin-listen", "", "serve admin HTTP commands (/commands/ruok, /commands/digest, /commands/members) here")
		metricsListen  = fs.String("metrics-listen", "", "serve Prometheus metrics at /metrics here (ZooKeeper's metricsProvider.httpHost:httpPort)")
		adminToken     = fs.String("admin-token-file", "", "file holding the bearer token that admin HTTP membership changes must carry (without it they are refused)")
	)
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return nil
		}
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToUpper(*logLevel))); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	conns := *maxConns
	if conns == 0 {
		conns = -1 // zoo.cfg's maxClientCnxns=0 means unlimited
	}
	replication, err := raftConfig(*nodeID, *raftListen, *peers, *dataDir, *secretFile)
	if err != nil {
		return err
	}
	var token string
	if *adminToken != "" {
		b, err := readSecret(*adminToken)
		if err != nil {
			return fmt.Errorf("--admin-token-file: %w", err)
		}
		token = string(b)
	}
	if replication != nil {
		replication.Logger = logger
		replication.ElectionTimeout = *electionTO
	}
	srv := server.New(server.Config{
		ListenAddr:             *listen,
		TickTime:               *tick,
		MinSessionTimeout:      *minTimeout,
		MaxSessionTimeout:      *maxTimeout,
		MaxClientConnsPerIP:    conns,
		MaxFrameSize:           *maxFrame,
		SuperDigest:            *superDigest,
		ContainerCheckInterval: *containerCheck,
		Logger:                 logger,
		AdminAddr:              *adminListen,
		MetricsAddr:            *metricsListen,
		AdminToken:             token,
		Raft:                   replication,
	})
	// Listen for signals before serving, so one sent as soon as the server
	// reports it is up still shuts it down cleanly.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	if err := srv.Start(); err != nil {
		return err
	}
	got := <-sig
	logger.Info("shutting down", "signal", got.String())
	done := make(chan error, 1)
	go func() { done <- srv.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		return fmt.Errorf("shutdown timed out")
	}
}

// raftConfig turns the ensemble flags into a Raft configuration, or nil for
// the default single in-memory node without Raft.
func raftConfig(id uint64, listen, peers, dataDir, secretFile string) (*raftstore.Config, error) {
	if peers == "" && dataDir == "" && id == 0 && listen == "" {
		return nil, nil
	}
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
