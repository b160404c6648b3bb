// Command hutch runs a ZooKeeper-compatible coordination server. With no
// flags it serves one in-memory node on 127.0.0.1:2181.
package main

import (
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
		nodeID         = fs.Uint64("id", 0, "this node's id in a Raft ensemble (with --peers)")
		raftListen     = fs.String("raft-listen", "", "Raft address of this node (default: its entry in --peers)")
		peers          = fs.String("peers", "", "static ensemble, e.g. 1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003")
		dataDir        = fs.String("data-dir", "", "keep the Raft log and snapshots here (default: in memory)")
		electionTO     = fs.Duration("election-timeout", raftstore.DefaultElectionTimeout, "Raft election timeout: a follower starts an election after hearing nothing from the leader for between half of it and all of it")
		adminListen    = fs.String("admin-listen", "", "serve admin HTTP commands (/commands/ruok, /commands/digest, /commands/members) here")
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
	replication, err := raftConfig(*nodeID, *raftListen, *peers, *dataDir)
	if err != nil {
		return err
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
func raftConfig(id uint64, listen, peers, dataDir string) (*raftstore.Config, error) {
	if peers == "" && dataDir == "" && id == 0 && listen == "" {
		return nil, nil
	}
	members := map[uint64]string{}
	for _, part := range strings.Split(peers, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		k, addr, ok := strings.Cut(part, "=")
		n, err := strconv.ParseUint(k, 10, 64)
		if !ok || err != nil || n == 0 || addr == "" {
			return nil, fmt.Errorf("--peers: %q is not id=host:port", part)
		}
		members[n] = addr
	}
	if id == 0 {
		if len(members) > 0 {
			return nil, fmt.Errorf("--peers needs --id")
		}
		id = 1
	}
	if listen == "" {
		listen = members[id]
	}
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	if len(members) > 0 && members[id] == "" {
		return nil, fmt.Errorf("--id %d is not in --peers", id)
	}
	return &raftstore.Config{NodeID: id, RaftAddr: listen, Peers: members, DataDir: dataDir}, nil
}
