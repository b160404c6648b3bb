package raftstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// Config configures a Store. Zero durations and counts take the defaults
// noted on each field.
type Config struct {
	NodeID uint64
	// RaftAddr is the address to listen on, e.g. "127.0.0.1:7001". A zero
	// port picks a free one; Store.Addr reports the bound address.
	RaftAddr string
	// Peers is the static bootstrap membership by node id, self included.
	// Nil or empty makes this node a single voter. If Peers is non-empty
	// but does not name this node, the node does not bootstrap: it waits to
	// be added with AddVoter by the cluster's leader.
	Peers map[uint64]string
	// DataDir holds raft.db (raft-boltdb) and the snapshots; "" keeps the
	// log, stable and snapshot stores in memory.
	DataDir string
	Logger  *slog.Logger

	HeartbeatTimeout   time.Duration // default 500ms
	ElectionTimeout    time.Duration // default 500ms
	LeaderLeaseTimeout time.Duration // default 250ms
	CommitTimeout      time.Duration // default 5ms
	SnapshotThreshold  uint64        // log entries between snapshots; default 8192
	// SnapshotInterval is how often Raft checks SnapshotThreshold; default 10s.
	SnapshotInterval time.Duration
	// TrailingLogs is how many entries a snapshot leaves in the log for slow
	// followers; default 10240. Followers further behind get the snapshot.
	TrailingLogs uint64
	// ForwardTimeout bounds a forwarded batch's round trip; default 5s.
	ForwardTimeout time.Duration
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	// Loose enough that a saturated two-core machine does not lose its
	// leader mid-run; a crash is still noticed within a second or two.
	def(&c.HeartbeatTimeout, 500*time.Millisecond)
	def(&c.ElectionTimeout, 500*time.Millisecond)
	def(&c.LeaderLeaseTimeout, 250*time.Millisecond)
	def(&c.CommitTimeout, 5*time.Millisecond)
	def(&c.SnapshotInterval, 10*time.Second)
	def(&c.ForwardTimeout, 5*time.Second)
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 8192
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// opTimeout bounds how long Raft calls may wait to be enqueued.
const opTimeout = 10 * time.Second

// Store is one node's Raft replica of the write log.
type Store struct {
	cfg   Config
	log   *slog.Logger
	addr  string // advertised Raft address
	raft  *raft.Raft
	fsm   *fsm
	mux   *mux
	trans *raft.NetworkTransport
	bolt  *raftboltdb.BoltStore // nil when in memory

	// fwdMu guards idle, inbound and closed.
	fwdMu    sync.Mutex
	idle     []*fwdConn            // pooled connections to the leader
	inbound  map[net.Conn]struct{} // forwarding connections being served
	closed   bool
	handlers sync.WaitGroup // inbound forwarding handlers
}

// serverID is Raft's id for a node.
func serverID(id uint64) raft.ServerID { return raft.ServerID(strconv.FormatUint(id, 10)) }

// Open starts a node. Without existing state it bootstraps the cluster from
// cfg.Peers (a node that finds state just rejoins).
func Open(cfg Config, app Applier) (*Store, error) {
	cfg.setDefaults()
	s := &Store{cfg: cfg, log: cfg.Logger, inbound: make(map[net.Conn]struct{}),
		fsm: &fsm{app: app, log: cfg.Logger}}

	ln, err := net.Listen("tcp", cfg.RaftAddr)
	if err != nil {
		return nil, err
	}
	s.addr = advertise(cfg.RaftAddr, ln.Addr())
	s.mux = newMux(ln, s.addr, s.log, s.handleForward)
	s.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  s.mux,
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  newHCLogger(s.log, "raft-net"),
	})

	var (
		logs   raft.LogStore
		stable raft.StableStore
		snaps  raft.SnapshotStore
	)
	if cfg.DataDir == "" {
		mem := raft.NewInmemStore()
		logs, stable, snaps = mem, mem, raft.NewInmemSnapshotStore()
	} else {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			s.trans.Close()
			return nil, err
		}
		s.bolt, err = raftboltdb.NewBoltStore(filepath.Join(cfg.DataDir, "raft.db"))
		if err != nil {
			s.trans.Close()
			return nil, err
		}
		stable = s.bolt
		if logs, err = raft.NewLogCache(1024, s.bolt); err == nil {
			snaps, err = raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, newHCLogger(s.log, "raft-snap"))
		}
		if err != nil {
			s.bolt.Close()
			s.trans.Close()
			return nil, err
		}
	}

	rc := raft.DefaultConfig()
	rc.LocalID = serverID(cfg.NodeID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = cfg.TrailingLogs
	rc.MaxAppendEntries = 256
	rc.BatchApplyCh = true
	rc.Logger = newHCLogger(s.log, "raft")

	s.raft, err = raft.NewRaft(rc, s.fsm, logs, stable, snaps, s.trans)
	if err != nil {
		s.closeStores()
		return nil, err
	}

	if boot, ok := s.bootstrapConfig(); ok {
		err := s.raft.BootstrapCluster(boot).Error()
		if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			s.Close()
			return nil, fmt.Errorf("raftstore: bootstrap: %w", err)
		}
	}
	return s, nil
}

// advertise picks the address peers should dial: the configured one when it
// names a host and port, else the bound one.
func advertise(configured string, bound net.Addr) string {
	host, port, err := net.SplitHostPort(configured)
	if err != nil || port == "0" || port == "" {
		return bound.String()
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return bound.String()
	}
	return configured
}

// bootstrapConfig is the initial membership, or false for a node that waits
// to be added.
func (s *Store) bootstrapConfig() (raft.Configuration, bool) {
	var c raft.Configuration
	if len(s.cfg.Peers) == 0 {
		c.Servers = []raft.Server{{Suffrage: raft.Voter, ID: serverID(s.cfg.NodeID), Address: raft.ServerAddress(s.addr)}}
		return c, true
	}
	if _, ok := s.cfg.Peers[s.cfg.NodeID]; !ok {
		return c, false
	}
	for id, addr := range s.cfg.Peers {
		if id == s.cfg.NodeID {
			addr = s.addr
		}
		c.Servers = append(c.Servers, raft.Server{Suffrage: raft.Voter, ID: serverID(id), Address: raft.ServerAddress(addr)})
	}
	return c, true
}

// Addr returns the address peers dial for Raft and forwarding.
func (s *Store) Addr() string { return s.addr }

// errorFuture is an ApplyFuture that failed before reaching Raft.
type errorFuture struct{ err error }

func (f errorFuture) Error() error  { return f.err }
func (f errorFuture) Index() uint64 { return 0 }
func (f errorFuture) Response() any { return nil }

// Propose appends entries to the log as one entry. Only the leader may
// propose; elsewhere the future fails with raft.ErrNotLeader. The future's
// Response is the log index once applied locally.
func (s *Store) Propose(entries []Entry) raft.ApplyFuture {
	data, err := EncodeBatch(nil, entries)
	if err != nil {
		return errorFuture{err}
	}
	return s.raft.Apply(data, 0)
}

// Forward hands entries to the leader without waiting for them to commit:
// on the leader it proposes them; elsewhere it sends them over the
// forwarding channel and returns once the leader has taken them. The origin
// hears the outcome through its Applier. It fails when there is no leader or
// the leader cannot be reached; the entries may then be lost or, rarely,
// committed anyway (the leader may have taken them before the connection
// broke), which callers must treat like ZooKeeper's connection loss.
func (s *Store) Forward(entries []Entry) error {
	if s.IsLeader() {
		data, err := EncodeBatch(nil, entries)
		if err != nil {
			return err
		}
		s.raft.Apply(data, 0)
		return nil
	}
	data, err := EncodeBatch(nil, entries)
	if err != nil {
		return err
	}
	_, err = s.call(context.Background(), frameBatch, data)
	return err
}

// IsLeader reports whether this node is the leader.
func (s *Store) IsLeader() bool { return s.raft.State() == raft.Leader }

// Leader returns the current leader's id and address, or 0 and "" when
// none is known.
func (s *Store) Leader() (id uint64, addr string) {
	a, sid := s.raft.LeaderWithID()
	if a == "" {
		return 0, ""
	}
	id, _ = strconv.ParseUint(string(sid), 10, 64)
	return id, string(a)
}

// LeaderCh is Raft's LeaderCh: true on gaining leadership, false on losing
// it. Raft drops values nobody reads, so it is only an edge signal.
func (s *Store) LeaderCh() <-chan bool { return s.raft.LeaderCh() }

// Barrier waits until every entry committed before it has been applied
// here. Leader only.
func (s *Store) Barrier(timeout time.Duration) error {
	return s.raft.Barrier(timeout).Error()
}

// syncIndex is the leader's answer to "how far must I catch up": after a
// barrier, every entry committed before the question was asked is in its
// FSM, and the FSM's applied index covers them all.
func (s *Store) syncIndex() (uint64, error) {
	if err := s.raft.Barrier(opTimeout).Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return 0, ErrNotLeader
		}
		return 0, err
	}
	return s.fsm.appliedIndex(), nil
}

// WaitApplied makes this node's state include every write committed before
// the call, as ZooKeeper's sync does: it asks the leader for its applied
// index (on the leader itself, it runs the barrier) and waits until the
// local FSM has applied at least that index.
func (s *Store) WaitApplied(ctx context.Context) error {
	var (
		idx uint64
		err error
	)
	if s.IsLeader() {
		idx, err = s.syncIndex()
	} else {
		idx, err = s.call(ctx, frameIndex, nil)
	}
	if err != nil {
		return err
	}
	for {
		applied, ch := s.fsm.waitCh()
		if applied >= idx {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// AppliedIndex returns the index of the last log entry reflected in the
// Applier's state.
func (s *Store) AppliedIndex() uint64 { return s.fsm.appliedIndex() }

// AddVoter adds a voting member. Leader only; it returns once the new
// configuration is committed.
func (s *Store) AddVoter(id uint64, addr string) error {
	return s.raft.AddVoter(serverID(id), raft.ServerAddress(addr), 0, opTimeout).Error()
}

// RemoveServer removes a member. Leader only.
func (s *Store) RemoveServer(id uint64) error {
	return s.raft.RemoveServer(serverID(id), 0, opTimeout).Error()
}

// Stats returns Raft's statistics plus this node's id, address and the
// FSM's applied index.
func (s *Store) Stats() map[string]string {
	st := s.raft.Stats()
	st["node_id"] = strconv.FormatUint(s.cfg.NodeID, 10)
	st["raft_addr"] = s.addr
	st["fsm_applied_index"] = strconv.FormatUint(s.fsm.appliedIndex(), 10)
	id, addr := s.Leader()
	st["leader_id"] = strconv.FormatUint(id, 10)
	st["leader_addr"] = addr
	return st
}

// Close shuts Raft down and closes the listener, connections and stores. It
// does not hand leadership over first, so to the others it looks like a
// crash.
func (s *Store) Close() error {
	s.fwdMu.Lock()
	if s.closed {
		s.fwdMu.Unlock()
		return nil
	}
	s.closed = true
	for _, fc := range s.idle {
		fc.c.Close()
	}
	s.idle = nil
	for c := range s.inbound {
		c.Close()
	}
	s.fwdMu.Unlock()

	err := s.raft.Shutdown().Error()
	s.handlers.Wait()
	if cerr := s.closeStores(); err == nil {
		err = cerr
	}
	return err
}

// closeStores closes the transport (and with it the listener) and the
// on-disk store.
func (s *Store) closeStores() error {
	err := s.trans.Close()
	s.mux.Close()
	s.mux.wg.Wait()
	if s.bolt != nil {
		if berr := s.bolt.Close(); err == nil {
			err = berr
		}
	}
	return err
}

var _ io.Closer = (*Store)(nil)
