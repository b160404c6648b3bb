package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hutchzk/hutch/clock"
	"github.com/hutchzk/hutch/internal/httpserve"
	"github.com/hutchzk/hutch/monitor"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/trace"
)

// Config holds everything a Server needs; zero fields take ZooKeeper's defaults.
type Config struct {
	// ListenAddr is the client port address, "127.0.0.1:2181" by default.
	// Use "127.0.0.1:0" for a free port and read Server.Addr.
	ListenAddr string
	// NoClientPort binds no client port at all: clients reach the server
	// only through ServeConn (package hutchtest's in-memory dialer).
	NoClientPort bool
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
	// ServerID goes into the top byte of session ids: 1 to 254 (255 would
	// make ids that read as TTL nodes' owners, as ZooKeeper warns). It
	// defaults to the Raft node id, or 1.
	ServerID int64
	// Clock tells the time and fires the server's timers: session expiry,
	// container and TTL cleanup, activity reports to the leader and the
	// proposal time-out. Tests pass a clock.Fake and move it.
	Clock clock.Clock
	// Logger receives structured logs; slog.Default() when nil.
	Logger *slog.Logger
	// AdminAddr, when set, serves AdminServer-style HTTP commands
	// (/commands/ruok, /commands/digest, /commands/members).
	AdminAddr string
	// AdminToken, when set, lets an admin HTTP request carrying
	// "Authorization: Bearer <token>" change the membership; without it
	// membership changes are refused. The live view, on a non-loopback
	// address, requires it too.
	AdminToken string
	// UIAddr, when set, serves the live view (/ui/) and the event trace
	// (/trace) here, as the admin port does too (monitor.UIHandler).
	UIAddr string
	// FourLetterWords lists the four-letter words answered, as
	// 4lw.commands.whitelist does ("*" for all); srvr always answers, as
	// in ZooKeeper, where zkServer.sh relies on it. Nil takes the
	// default: every word when the client port listens on loopback only,
	// otherwise monitor.DefaultFourLetterWords.
	FourLetterWords []string
	// SecureListenAddr, with TLS, serves clients over TLS as
	// secureClientPort does. A client certificate, when TLS asks for one
	// and it verifies, adds the identity "x509:<subject DN>".
	SecureListenAddr string
	TLS              *tls.Config
	// SASLUsers enables SASL DIGEST-MD5 logins (ZooKeeper's
	// SASLAuthenticationProvider with a JAAS Server section): user name to
	// password. A login adds the identity "sasl:<user>".
	SASLUsers map[string]string
	// EnforceQuota is zookeeper.enforceQuota: a create or setData that
	// would take a subtree past a hard quota limit fails with
	// QUOTAEXCEEDED, and passing any limit is logged as a warning. Every
	// member of an ensemble must agree on it.
	EnforceQuota bool
	// ReadOnlyMode is readonlymode.enabled: a member of an ensemble that
	// has known no leader for ReadOnlyGrace serves clients that ask for
	// read-only, until a leader is known again (readonly.go). Without
	// it such a member serves nobody.
	ReadOnlyMode bool
	// ReconfigEnabled lets clients change an ensemble's membership with
	// reconfig, as ZooKeeper's reconfigEnabled (off by default): without
	// it reconfig answers RECONFIGDISABLED. A single node answers
	// UNIMPLEMENTED, as a standalone ZooKeeper does.
	ReconfigEnabled bool
	// MetricsAddr, when set, serves metrics at /metrics
	// (metricsProvider.httpHost:httpPort) through MetricsProvider.
	MetricsAddr string
	// MetricsProvider renders /metrics (ZooKeeper's
	// metricsProvider.className): monitor/prometheus.Handler serves
	// Prometheus's format, as the hutch command does. It is needed with
	// MetricsAddr; without it the server links no metrics library.
	MetricsProvider monitor.MetricsProvider
	// HTTPLimits bounds each HTTP port (admin, metrics, live view): read,
	// write and idle deadlines and a cap on open connections. Zero fields
	// take httpserve's defaults: an idle connection is closed after 30s,
	// as ZooKeeper's admin server does, and a port holds 64 at once.
	HTTPLimits HTTPLimits
	// InitLimit and SyncLimit are zoo.cfg's, in ticks. Raft's timeouts do
	// their work; they are kept to be reported by conf.
	InitLimit int
	SyncLimit int
	// DataLogDir is zoo.cfg's dataLogDir, reported by conf and dirs (the
	// Raft log lives in Raft.DataDir).
	DataLogDir string
	// ConfigText is the configuration file the server was started from,
	// for the initial_configuration admin command.
	ConfigText string
	// Trace, when set, receives every command the server applies and
	// every watch event it delivers (see package trace); otherwise the
	// server has a Broker of its own (Server.Trace). Sharing one across
	// a restart keeps a subscriber's stream going.
	Trace *trace.Broker
	// TraceHistory bounds the window of the trace the server keeps (see
	// trace.History): what the live view's trace opens on and what it
	// replays. Zero fields take trace's defaults; Events < 0 keeps none.
	TraceHistory trace.HistoryLimits
	// Raft, when set, replicates every write through a Raft group (see
	// package raftstore) instead of applying it directly; ServerID then
	// defaults to the Raft node id.
	Raft *raftstore.Config
}

// HTTPLimits bounds one HTTP port (see Config.HTTPLimits).
type HTTPLimits = httpserve.Limits

// Defaults as in ZooKeeper 3.8.
const (
	DefaultListenAddr             = "127.0.0.1:2181"
	DefaultTickTime               = 2000 * time.Millisecond
	DefaultMaxClientConnsPerIP    = 60
	DefaultMaxFrameSize           = 0xfffff
	DefaultContainerCheckInterval = time.Minute
)

// MaxServerID is the largest server (node) id: session ids carry it in
// their top byte, and 255 there would read as a TTL node's owner.
const MaxServerID = 254

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
		c.Clock = clock.System
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// check refuses what cannot work; Start returns its error.
func (c Config) check() error {
	if c.ServerID < 1 || c.ServerID > MaxServerID {
		return fmt.Errorf("server id %d out of range: it must be 1 to %d (session ids carry it in one byte, and 255 reads as a TTL owner)", c.ServerID, MaxServerID)
	}
	if err := c.checkTLS(); err != nil {
		return err
	}
	if c.MetricsAddr != "" && c.MetricsProvider == nil {
		return fmt.Errorf("metrics address %s has no metrics provider (Config.MetricsProvider; monitor/prometheus.Handler serves Prometheus's format)", c.MetricsAddr)
	}
	if c.Raft != nil {
		if c.Raft.NodeID < 1 || c.Raft.NodeID > MaxServerID {
			return fmt.Errorf("node id %d out of range: it must be 1 to %d", c.Raft.NodeID, MaxServerID)
		}
		for id := range c.Raft.Peers {
			if id < 1 || id > MaxServerID {
				return fmt.Errorf("peer id %d out of range: it must be 1 to %d", id, MaxServerID)
			}
		}
	}
	return nil
}

// checkTLS refuses half a secure port: an address without a TLS
// configuration, or the reverse.
func (c Config) checkTLS() error {
	switch {
	case c.SecureListenAddr != "" && c.TLS == nil:
		return fmt.Errorf("secure client address %s has no TLS configuration", c.SecureListenAddr)
	case c.SecureListenAddr == "" && c.TLS != nil:
		return errors.New("TLS configuration given without a secure client address")
	}
	return nil
}
