package monitor

import (
	"context"
	"time"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/trace"
	"github.com/hutchzk/hutch/wire"
)

// Source is what a server shows its operators: one snapshot of its state
// at a time, a read of its tree, and the few changes operators make. Every
// view is rendered from what it returns, never from the server itself.
type Source interface {
	// Snapshot reads the parts asked for, each once, and the header
	// (Taken, Serving, Mode, Server) always. It must not wait for any
	// request in flight.
	Snapshot(want Parts) *Snapshot
	// Node reads one znode as an anonymous client would: its Stat always,
	// its data and ACL only where the world may read them.
	Node(path string) (Node, error)
	// Children lists, in name order, at most limit children of path whose
	// names sort after after ("" from the first): one page of a listing.
	Children(path, after string, limit int) ([]string, error)
	// Trace is where the server publishes what it applies and delivers
	// (the live view's event trace); nil for none.
	Trace() *trace.Broker

	// ResetStats clears what srst clears: packet counts, latencies and
	// proposal sizes.
	ResetStats()
	// ResetConnectionStats clears every connection's statistics (crst).
	ResetConnectionStats()
	// ReconfigureFrom changes the ensemble's membership as a reconfig
	// does (the leader decides, Raft follows), with the operator's
	// authority: joining are server.N=... lines, leaving the ids to
	// remove, from the membership version the change is made against (-1
	// for any; another is refused as tree.ErrBadVersion). It returns the
	// new configuration.
	ReconfigureFrom(ctx context.Context, from int64, joining []string, leaving []uint64) (membership.Config, error)
}

// Parts names the parts of a Snapshot a view reads, so that a request
// pays only for those.
type Parts uint8

// The parts of a Snapshot beyond its header.
const (
	PartStats       Parts = 1 << iota // Stats
	PartReplication                   // Replication (and Mode read with it)
	PartConnections                   // Connections
	PartSessions                      // Sessions
	PartWatches                       // Watches
	PartDigests                       // Digests
)

// Snapshot is the server's state as one request of an operator sees it.
// Only the parts asked for are filled.
type Snapshot struct {
	// Taken is when it was read: ages and uptimes are measured to it.
	Taken time.Time
	// Serving is false while the server turns clients away (an ensemble
	// member that knows no leader): most commands then answer that.
	Serving bool
	// Mode is the node's part now (its String is srvr's "Mode:" line).
	Mode   membership.State
	Server Server

	Stats       Stats        // PartStats
	Replication Replication  // PartReplication
	Connections []Connection // PartConnections: oldest first
	// Sessions (PartSessions) come soonest expiry first, in timer order
	// within a tick, where this node runs the session timers; the others
	// follow by id.
	Sessions []Session
	Watches  []Watch // PartWatches: in no particular order
	Digests  Digests // PartDigests
}

// Server is how the server is set up: its addresses, limits and
// directories, as conf and envi report them.
type Server struct {
	ClientAddr string // host:port
	SecureAddr string // "" without a TLS client port
	AdminAddr  string // "" without an admin port
	UIAddr     string // "" without a live view port of its own
	// Started is when the server started: ZooKeeper's elapsed times
	// (lresp, dump's expiry keys) count from it.
	Started           time.Time
	TickTime          time.Duration
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	MaxClientCnxns    int // per address; 0 means unlimited
	InitLimit         int // ticks
	SyncLimit         int // ticks
	// DataDir and DataLogDir are the snapshot and log directories, ""
	// for a node in memory; DataLogDir is DataDir unless set apart.
	DataDir    string
	DataLogDir string
	// ConfigText is the configuration file the server started from.
	ConfigText string
}

// Stats are the server's counters and the state's sizes.
type Stats struct {
	PacketsReceived int64
	PacketsSent     int64
	BytesReceived   int64
	BytesSent       int64
	Txns            int64 // transactions applied
	Notifications   int64 // watch notifications sent
	Connections     int64
	Outstanding     int64 // requests read but not yet answered
	AuthFailed      int64
	Forwarded       int64   // writes handed to the leader
	MinLatency      int64   // ms
	AvgLatency      float64 // ms, rounded to four places
	MaxLatency      int64   // ms
	// Proposal sizes (last, smallest, largest) of the writes this node
	// proposed; -1 before the first.
	ProposalLast, ProposalMin, ProposalMax int64
	// Durations are the request-latency histograms, by RequestKind.
	Durations [requestKinds]Histogram

	Sessions   int
	Watches    int
	Nodes      int
	Ephemerals int
	DataSize   int64 // paths plus data, in bytes
	LastZxid   int64
}

// Replication is the node's place in its ensemble; empty for a single
// node.
type Replication struct {
	NodeID     uint64
	LeaderID   uint64 // 0 when no leader is known
	LeaderAddr string
	Term       uint64
	// Config is the membership as the replicated state holds it, what
	// /zookeeper/config says; zero before the first leader wrote it.
	Config membership.Config
	// Members are Config's members by id, each with whether Raft counts
	// it for quorum now (before Config is written, Raft's configuration).
	Members     []Member
	LastContact time.Time // the leader's last contact; zero on the leader
	// Raft holds hashicorp/raft's statistics (commit_index,
	// applied_index, last_log_index, ...); nil for a single node.
	Raft map[string]string
	// DataDir is where the Raft log and snapshots live; "" in memory.
	DataDir string
}

// Member is one member of the ensemble.
type Member struct {
	ID     uint64
	Addr   string          // Raft address, host:port (ZooKeeper's quorum address)
	Role   membership.Role // participant or observer
	Client string          // client address; "" where the configuration names none
	// Voter reports whether Raft counts it for quorum now: a participant
	// still catching up, and an observer, do not.
	Voter bool
}

// Connection is one client connection's statistics, as cons reports them.
type Connection struct {
	ID           int64 // the server's connection id
	Remote       string
	Secure       bool // came through the TLS port
	Session      int64
	Timeout      time.Duration
	Outstanding  int64
	Received     int64
	Sent         int64
	Established  time.Time
	LastOp       string
	LastCxid     int64 // -1 before the first
	LastZxid     int64
	LastResponse time.Time // zero before the first
	LastLatency  int64     // ms
	MinLatency   int64
	AvgLatency   int64
	MaxLatency   int64
}

// Session is one open session.
type Session struct {
	ID      int64
	Timeout time.Duration
	// Remote is the client address of the connection on this node the
	// session is attached through; "" when it is attached elsewhere.
	Remote     string
	Ephemerals []string // its ephemeral nodes' paths, sorted
	// Expires is when this node's timer expires the session unless it
	// is touched; zero where this node runs no session timers.
	Expires time.Time
	// Node is the member of the ensemble the session is connected
	// through, as replicated (every member knows it); 0 when unknown.
	Node uint64
	// LastHeard is when this node last heard from the session's client,
	// as far as it knows: where it runs the session timers, the timer's
	// last touch (a request here, or another member's report of one);
	// elsewhere the last request answered on its connection here; zero
	// when neither.
	LastHeard time.Time
	// WatchCount counts the watches its connection holds on this node,
	// and Auth lists the identities added to it ("ip:127.0.0.1",
	// "digest:alice": a digest's user, never its hash); both only where
	// the session is attached through this node (Remote set).
	WatchCount int
	Auth       []string

	// Attached and Unknown are the view's, not the Source's: the member
	// whose connection carries the session now (0 when none does), and
	// whether its connection and watches are on a member this view did
	// not hear from.
	Attached uint64
	Unknown  bool
}

// Watch is one watch: a connection's entry on a path in one of
// ZooKeeper's two watch tables (a persistent watch has one in each).
type Watch struct {
	Path    string
	Watcher int64 // the connection that set it
	Session int64 // that connection's session; 0 once it closed
	// Child is set for the child table; wchc, wchp and wchs report only
	// the data table.
	Child bool
	Mode  string // "standard", "persistent" or "persistentRecursive"
	// Member is the member whose client holds it; the view's, not the
	// Source's.
	Member uint64 `json:",omitempty"`
}

// Digests are what the state's integrity checks read.
type Digests struct {
	Tree uint64 // digest of the whole tree
	Zxid int64  // the zxid Tree is at
	Log  []ZxidDigest
	// LastSnapshot is the newest snapshot of the state; nil before one.
	LastSnapshot *SnapshotInfo
}

// ZxidDigest is the tree's digest right after the transaction Zxid.
type ZxidDigest struct {
	Zxid   int64
	Digest uint64
}

// SnapshotInfo describes a snapshot of the state.
type SnapshotInfo struct {
	Zxid int64
	Time time.Time
}

// Node is one znode as Source.Node reads it.
type Node struct {
	Path string
	Stat wire.Stat
	// Readable is false where the world may not read the node: Data and
	// ACL are then withheld.
	Readable bool
	Data     []byte
	ACL      []wire.ACL
	// Container and TTL tell the modes Stat cannot: a container, or a
	// TTL node with its TTL.
	Container bool
	TTL       time.Duration
}
