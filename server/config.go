package server

import (
	"log/slog"
	"time"

	"github.com/hutchzk/hutch/raftstore"
)

// Clock tells the time. Tests and embedders inject their own.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// SystemClock is the wall clock.
var SystemClock Clock = systemClock{}

// Config holds everything a Server needs; zero fields take ZooKeeper's defaults.
type Config struct {
	// ListenAddr is the client port address, "127.0.0.1:2181" by default.
	// Use "127.0.0.1:0" for a free port and read Server.Addr.
	ListenAddr string
	// TickTime is ZooKeeper's tickTime: the expiry bucket width and the unit
	// of the default session timeout bounds.
	TickTime time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound negotiated timeouts
	// (defaults 2×TickTime and 20×TickTime).
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// MaxClientConnsPerIP limits concurrent connections from one address:
	// 0 takes the default of 60 (ZooKeeper's maxClientCnxns), negative means
	// unlimited.
	MaxClientConnsPerIP int
	// MaxFrameSize is the largest accepted request frame (jute.maxbuffer).
	MaxFrameSize int
	// SuperDigest, "user:base64(sha1)", makes that digest user bypass ACLs.
	SuperDigest string
	// ContainerCheckInterval is how often empty containers and expired TTL
	// nodes are looked for (znode.container.checkIntervalMs).
	ContainerCheckInterval time.Duration
	// ServerID goes into the top byte of session ids.
	ServerID int64
	// Clock supplies time for zxid timestamps, session expiry and TTLs.
	Clock Clock
	// Logger receives structured logs; slog.Default() when nil.
	Logger *slog.Logger
	// AdminAddr, when set, serves AdminServer-style HTTP commands
	// (/commands/ruok, /commands/digest, /commands/members).
	AdminAddr string
	// Raft, when set, replicates every write through a Raft group (see
	// package raftstore) instead of applying it directly; ServerID then
	// defaults to the Raft node id.
	Raft *raftstore.Config
}

// Defaults as in ZooKeeper 3.8.
const (
	DefaultListenAddr             = "127.0.0.1:2181"
	DefaultTickTime               = 2000 * time.Millisecond
	DefaultMaxClientConnsPerIP    = 60
	DefaultMaxFrameSize           = 0xfffff
	DefaultContainerCheckInterval = time.Minute
)

func (c Config) withDefaults() Config {
	if c.ListenAddr == "" {
		c.ListenAddr = DefaultListenAddr
	}
	if c.TickTime <= 0 {
		c.TickTime = DefaultTickTime
	}
	if c.MinSessionTimeout <= 0 {
		c.MinSessionTimeout = 2 * c.TickTime
	}
	if c.MaxSessionTimeout <= 0 {
		c.MaxSessionTimeout = 20 * c.TickTime
	}
	if c.MaxClientConnsPerIP == 0 {
		c.MaxClientConnsPerIP = DefaultMaxClientConnsPerIP
	}
	if c.MaxFrameSize <= 0 {
		c.MaxFrameSize = DefaultMaxFrameSize
	}
	if c.ContainerCheckInterval <= 0 {
		c.ContainerCheckInterval = DefaultContainerCheckInterval
	}
	if c.ServerID == 0 && c.Raft != nil {
		c.ServerID = int64(c.Raft.NodeID)
	}
	if c.ServerID == 0 {
		c.ServerID = 1
	}
	if c.Clock == nil {
		c.Clock = SystemClock
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
