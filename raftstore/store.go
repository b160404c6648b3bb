package raftstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/hutchzk/hutch/clock"
	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/zkdb"
)

// Config configures a Store. Zero durations and counts take the defaults
// noted on each field.
type Config struct {
	NodeID uint64
	// RaftAddr is the address to listen on, e.g. "127.0.0.1:7001". A zero
	// port picks a free one. Connections to peers are made from its IP
	// when it names one.
	RaftAddr string
	// Peers is the static bootstrap membership by node id, self included:
	// the address each node is reached at. This node advertises its own
	// entry, which may differ from RaftAddr (a proxy, or a name for a
	// wildcard listener). Nil or empty makes this node a single voter. If
	// Peers is non-empty but does not name this node, the node does not
	// bootstrap: it waits to be added with AddVoter by the cluster's
	// leader.
	Peers map[uint64]string
	// Members is the ensemble's first configuration as zoo.cfg's server.N
	// lines give it (roles, election ports and client addresses): Raft
	// bootstraps from it (observers as non-voters), and the first leader
	// writes it into the replicated state, whose membership it is from
	// then on. When it is set, Peers is derived from it; when it is not,
	// it is derived from Peers (participants without client addresses).
	Members []membership.Member
	// DataDir holds raft.db (raft-boltdb) and the snapshots. Without it the
	// log, term and vote live in memory, which is safe only for a node
	// that never restarts into its group; a node with peers refuses that
	// unless Volatile is set.
	DataDir string
	// LogStore is the kind of log store (LogStores) a new data directory
	// gets: "" takes DefaultLogStore. A directory keeps the kind it was
	// made with; asking for another is refused.
	LogStore string
	// Volatile allows an in-memory node with peers: for tests, whose
	// nodes never come back after they stop. A restarted in-memory member
	// would forget its term and vote and could vote twice in one term,
	// losing committed writes.
	Volatile bool
	// Secret authenticates the nodes to each other (see the peer
	// handshake); every member must have the same one. It is required with
	// peers; a lone node without one gets a random secret, so no other
	// process can talk to it.
	Secret []byte
	// Clock stamps the transactions this node orders as leader; System by
	// default.
	Clock  clock.Clock
	Logger *slog.Logger

	// ElectionTimeout bounds failover: a follower that hears nothing from
	// the leader for a random time between HeartbeatTimeout and twice it
	// (by default, between half of ElectionTimeout and all of it) starts
	// an election, so a new leader is normally in place well within two
	// election timeouts of a crash. A candidate that is refused retries
	// after the same half to whole ElectionTimeout. Default
	// DefaultElectionTimeout.
	ElectionTimeout  time.Duration
	HeartbeatTimeout time.Duration // default ElectionTimeout/2
	// LeaderLeaseTimeout is how long a leader goes without hearing from a
	// quorum before it steps down; default HeartbeatTimeout, the most
	// Raft allows, so that a quiet ensemble's slower heartbeats fit in it
	// (quiet.go).
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is how long Raft lets a follower go without an append
	// that tells it the commit index; default ElectionTimeout: followers
	// hear of commits at once by notices (notices.go), so this is only a
	// backstop, and a shorter one wakes an idle ensemble often for nothing.
	CommitTimeout     time.Duration
	SnapshotThreshold uint64 // log entries between snapshots; default 8192
	// SnapshotInterval is how often Raft checks SnapshotThreshold; default 10s.
	SnapshotInterval time.Duration
	// TrailingLogs is how many entries a snapshot leaves in the log for slow
	// followers; default 10240. Followers further behind get the snapshot.
	TrailingLogs uint64
	// ForwardTimeout bounds a forwarded frame's round trip when the caller
	// sets no deadline; default ElectionTimeout.
	ForwardTimeout time.Duration
	// MaxForwardFrame bounds a frame a follower may forward; default
	// DefaultMaxForwardFrame.
	MaxForwardFrame int64
	// QuietAfter is how long a member of an ensemble that holds no session
	// waits before it stretches Raft's heartbeat and election timeouts
	// (see quiet.go); default DefaultQuietAfter, negative for never.
	QuietAfter time.Duration
	// ReportInterval is how often a follower reports its clients' activity
	// to the leader (Node); a follower answers a client only while a
	// report got through within a third of its session timeout, so a few
	// must fit in that. Default ElectionTimeout/10.
	ReportInterval time.Duration
	// ReadOnlyAfter, when positive, is how long a member goes without a
	// known leader (it lost its quorum), from when it noticed, before it
	// tells its server to
	// serve read-only clients (Events.ReadOnly): ZooKeeper's grace,
	// max(2s, tickTime), with readonlymode.enabled. Zero: never.
	ReadOnlyAfter time.Duration
	// Dial opens every connection this node makes to a peer (Raft and
	// write forwarding); nil dials TCP from RaftAddr's IP. Fault-injection
	// tests wrap it to cut links between nodes.
	Dial func(addr string, timeout time.Duration) (net.Conn, error)
	// Answer answers the questions other members put with Store.Ask
	// (ask.go); nil answers none.
	Answer Answerer

	// wrapLogs and wrapStable, for tests, wrap the log store and the
	// stable store (term and vote) Raft is given.
	wrapLogs   func(raft.LogStore) raft.LogStore
	wrapStable func(raft.StableStore) raft.StableStore
	// onStored, for tests, is told the last index of every append to the
	// log once the store has returned (BenchmarkFollowerWriteStages).
	onStored func(last uint64)
	// ReconfigEnabled lets clients change the membership with reconfig,
	// as ZooKeeper's reconfigEnabled (off by default): the leader's
	// setting decides, as in ZooKeeper. The operator's own changes
	// (Node.ChangeMembership) are not subject to it.
	ReconfigEnabled bool
	// StandaloneDisabled is ZooKeeper's standaloneEnabled=false: a
	// reconfig may then leave a single participant; otherwise it must
	// leave at least two.
	StandaloneDisabled bool
	// MaxMemberID bounds the ids a reconfig may bring in (hutch's session
	// ids carry their member's id in one byte); 0 for none.
	MaxMemberID uint64
	// CatchUpTimeout bounds how long a reconfig that needs a joining
	// member for its new quorum waits for it to catch up; default five
	// election timeouts.
	CatchUpTimeout time.Duration
	// beforeSync and afterSync, for tests, run around each sync of a
	// leader's own appends (parallel.go): a test holds the first to keep
	// them unsynced; BenchmarkFollowerWriteStages times the second.
	beforeSync, afterSync func()
	// beforeStoreSync, for tests, runs before the sync of an append this
	// member syncs before Raft hears of it (a follower's; parallel.go).
	beforeStoreSync func()
	// streamlessNotices, for tests, makes this member lead as one from
	// before the standing notice question: it fails it, as an unknown
	// frame.
	streamlessNotices bool
}

// deriveMembers fills Peers from Members, or Members from Peers.
func (c *Config) deriveMembers() error {
	if len(c.Members) == 0 {
		for _, id := range slices.Sorted(maps.Keys(c.Peers)) {
			host, port, err := net.SplitHostPort(c.Peers[id])
			p, perr := strconv.Atoi(port)
			if err != nil || perr != nil {
				return fmt.Errorf("raftstore: peer %d: %q is not host:port", id, c.Peers[id])
			}
			c.Members = append(c.Members, membership.Member{ID: id, Host: host, QuorumPort: p})
		}
		return nil
	}
	peers := make(map[uint64]string, len(c.Members))
	for _, m := range c.Members {
		if _, dup := peers[m.ID]; dup {
			return fmt.Errorf("raftstore: member %d is listed twice", m.ID)
		}
		peers[m.ID] = m.RaftAddr()
	}
	c.Peers = peers
	return nil
}

// DefaultElectionTimeout is loose enough that a saturated two-core machine
// does not lose its leader mid-run (heartbeats go out every 50ms and a
// follower waits at least 500ms), tight enough that a crash is repaired
// in about a second.
const DefaultElectionTimeout = time.Second

// Configuration errors.
var (
	ErrVolatileEnsemble = errors.New("raftstore: a node with peers needs a data directory: " +
		"in memory it forgets its term, vote and log when it restarts, and can then vote twice and lose committed writes")
	ErrNoSecret = errors.New("raftstore: a node with peers needs a shared secret to authenticate them")
)

func (c *Config) check() error {
	if c.NodeID == 0 {
		return errors.New("raftstore: node id must be positive")
	}
	if err := c.deriveMembers(); err != nil {
		return err
	}
	addrs := make(map[string]uint64, len(c.Peers))
	for id, addr := range c.Peers {
		if id == 0 {
			return errors.New("raftstore: peer id must be positive")
		}
		if other, dup := addrs[addr]; dup {
			return fmt.Errorf("raftstore: peers %d and %d have the same address %s", min(id, other), max(id, other), addr)
		}
		addrs[addr] = id
	}
	if len(c.Peers) > 1 {
		if c.DataDir == "" && !c.Volatile {
			return ErrVolatileEnsemble
		}
		if len(c.Secret) == 0 {
			return ErrNoSecret
		}
	}
	return nil
}

func (c *Config) setDefaults() error {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.ElectionTimeout, DefaultElectionTimeout)
	def(&c.HeartbeatTimeout, c.ElectionTimeout/2)
	def(&c.LeaderLeaseTimeout, c.HeartbeatTimeout)
	def(&c.CommitTimeout, c.ElectionTimeout)
	def(&c.SnapshotInterval, 10*time.Second)
	def(&c.ForwardTimeout, c.ElectionTimeout)
	def(&c.ReportInterval, c.ElectionTimeout/10)
	def(&c.CatchUpTimeout, 5*c.ElectionTimeout)
	if c.QuietAfter == 0 {
		c.QuietAfter = DefaultQuietAfter
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 8192
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if c.MaxForwardFrame <= 0 {
		c.MaxForwardFrame = DefaultMaxForwardFrame
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.System
	}
	if len(c.Secret) == 0 {
		c.Secret = make([]byte, 32)
		if _, err := rand.Read(c.Secret); err != nil {
			return err
		}
	}
	if c.Dial == nil {
		d := net.Dialer{}
		if host, _, err := net.SplitHostPort(c.RaftAddr); err == nil {
			if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
				d.LocalAddr = &net.TCPAddr{IP: ip}
			}
		}
		c.Dial = func(addr string, timeout time.Duration) (net.Conn, error) {
			d := d
			d.Timeout = timeout
			return d.Dial("tcp", addr)
		}
	}
	return nil
}

// opTimeout bounds how long Raft calls may wait to be enqueued.
const opTimeout = 10 * time.Second

// Store is one node's Raft replica of the log, applied to a zkdb.DB.
type Store struct {
	cfg      Config
	log      *slog.Logger
	db       *zkdb.DB
	addr     string // advertised Raft address
	raft     *raft.Raft
	fsm      *fsm
	mux      *mux
	trans    *raft.NetworkTransport
	logStore *logStore
	logs     raft.LogStore // for the first index, which Raft's statistics lack
	// reloadable is Raft's timing as configured, for setQuiet.
	reloadable raft.ReloadableConfig
	snaps      *timedSnapshots

	// fwdMu guards pipes, dialing, inbound and closed.
	fwdMu      sync.Mutex
	pipes      []*pipe               // pipelined connections to the leader (pipe.go)
	dialing    bool                  // a pipe is being dialled
	pipeDialed *changes              // fired when a dial ends
	inbound    map[net.Conn]struct{} // forwarding connections being served
	closed     bool
	handlers   sync.WaitGroup // inbound forwarding handlers

	// askIndex and barrier share one question to the leader, and one
	// barrier on the leader, among concurrent syncs (coalesce.go).
	askIndex, barrier *coalesced

	// answering counts the members' questions being answered (ask.go);
	// their connections are in inbound and their handlers in handlers,
	// so Close ends them with forwarding's. Guarded by fwdMu.
	answering int

	// judge compares followers' state digests with this member's while
	// it leads (digest.go).
	judge digestJudge
	// halting records a halt (guard.go); running is set once Raft is up,
	// when a halt closes the store.
	halting haltState
	running atomic.Bool
	// parkedCh is closed once a Raft goroutine was parked after a
	// failure (guard.go): Raft's shutdown then never completes, and Close
	// stops waiting for it.
	parkedCh   chan struct{}
	parkedOnce sync.Once
	// appended counts the bytes of entries' data this member appended to
	// its log (log_appended_bytes).
	appended atomic.Int64
	// notices reads the log for commit notices through a guard that
	// returns its failures rather than parking.
	noticeLogs raft.LogStore

	notices *notices // commit notices heard from the leader
	// noticeQuestions counts the notice questions this member was put
	// as a leader (tests show one standing question serves many commits).
	noticeQuestions atomic.Int64
	// onReconfig decides a reconfig forwarded to this node as leader
	// (the Node's, set once it is open); nil until then.
	onReconfig atomic.Pointer[func(payload []byte) (status byte)]
	changes    *changes      // fired when Raft's state or leader changes
	ready      chan struct{} // closed once raft exists: forwarding may be served
	stop       chan struct{} // closed by Close
	// stopCtx is cancelled by Close, for I/O that must end with it.
	stopCtx    context.Context
	cancelStop context.CancelFunc
	following  sync.WaitGroup // followNotices, applyNotices and the log's syncer
}

// serverID is Raft's id for a node.
func serverID(id uint64) raft.ServerID { return raft.ServerID(strconv.FormatUint(id, 10)) }

// Open starts a node replicating into db. Without existing state it
// bootstraps the cluster from cfg.Peers (a node that finds state just
// rejoins); with state, db is restored from the latest snapshot and the
// log replayed into it.
func Open(cfg Config, db *zkdb.DB) (*Store, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, log: cfg.Logger, db: db, inbound: make(map[net.Conn]struct{}),
		fsm: &fsm{db: db, log: cfg.Logger}, notices: newNotices(), changes: newChanges(), pipeDialed: newChanges(),
		ready: make(chan struct{}), stop: make(chan struct{}), parkedCh: make(chan struct{})}
	s.askIndex = &coalesced{run: s.askLeaderIndex}
	s.barrier = &coalesced{run: s.barrierIndex}
	s.stopCtx, s.cancelStop = context.WithCancel(context.Background())

	ln, err := net.Listen("tcp", cfg.RaftAddr)
	if err != nil {
		return nil, err
	}
	s.addr = cfg.Peers[cfg.NodeID]
	if s.addr == "" {
		s.addr = advertise(cfg.RaftAddr, ln.Addr())
	}
	s.mux = newMux(ln, s.addr, cfg.Secret, s.log, s.handlePipe, s.handleAsk, cfg.Dial)
	s.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  s.mux,
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  newHCLogger(s.log, "raft-net"),
	})

	ls, err := openLogStore(cfg.DataDir, cfg.LogStore, s.log)
	if err != nil {
		s.abandon()
		return nil, err
	}
	s.logStore = ls
	if err := verifyLog(ls.logs, cfg.DataDir); err != nil {
		s.abandon()
		return nil, err
	}
	s.fsm.halt = s.halt
	if cfg.wrapLogs != nil {
		ls.logs = cfg.wrapLogs(ls.logs)
	}
	if cfg.wrapStable != nil {
		ls.stable = cfg.wrapStable(ls.stable)
	}
	var (
		logs   raft.LogStore      = guardedLogs{LogStore: ls.logs, s: s, park: true}
		stable raft.StableStore   = guardedStable{StableStore: ls.stable, s: s}
		snaps  raft.SnapshotStore = guardedSnapshots{SnapshotStore: ls.snaps, s: s}
	)

	rc := raft.DefaultConfig()
	rc.LocalID = serverID(cfg.NodeID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	// A candidate waits as long as a follower before trying again: the
	// first try after a crash is often refused by the other follower,
	// which still has the old leader until its own timeout, so a full
	// ElectionTimeout wait there would double the failover.
	rc.ElectionTimeout = max(cfg.HeartbeatTimeout, cfg.ElectionTimeout/2)
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = cfg.TrailingLogs
	rc.MaxAppendEntries = 256
	rc.BatchApplyCh = true
	// A member a reconfig removes stays up, so that it can say it is not
	// serving and be added back; Raft would shut itself down.
	rc.ShutdownOnRemove = false
	rc.Logger = newHCLogger(s.log, "raft")
	s.reloadable = reloadableOf(rc)

	first, err := logs.FirstIndex()
	if err != nil {
		s.abandon()
		return nil, err
	}
	checked := newCheckedSnapshots(snaps, cfg.DataDir, first, s.log)
	if err := checked.usable(); err != nil {
		s.abandon()
		return nil, err
	}
	s.fsm.restoreFailed = checked.restoreFailed
	logs = storedLogs{LogStore: logs, stored: func(last uint64) {
		s.notices.wake()
		if cfg.onStored != nil {
			cfg.onStored(last)
		}
	}}
	s.logs, s.snaps = logs, newTimedSnapshots(checked, cfg.DataDir)
	s.fsm.logs = s.logs
	s.noticeLogs = guardedLogs{LogStore: ls.logs, s: s}
	trans := newClampedTransport(s.trans, s.stop)
	if p := ls.parallel; p != nil {
		s.fsm.durable = func(index uint64) bool { return p.waitDurable(index, s.stop) }
		trans.durable = p.Durable
		p.written = s.notices.wake
		p.beforeStoreSync = cfg.beforeStoreSync
	}
	s.raft, err = raft.NewRaft(rc, s.fsm, logs, stable, s.snaps, trans)
	if err != nil {
		s.abandon()
		if failed := checked.failuresText(); failed != "" {
			err = fmt.Errorf("raftstore: %w: %s; this member cannot start from its data directory: "+
				"move it aside and start it empty to resync from the others (docs/operations.md, \"A damaged or corrupt log\")", err, failed)
		}
		return nil, err
	}
	checked.started()
	if p := ls.parallel; p != nil {
		lead := func() bool { return s.raft.State() == raft.Leader }
		p.stop = s.stop
		p.leading.Store(&lead)
		p.beforeSync, p.afterSync = cfg.beforeSync, cfg.afterSync
		s.following.Go(func() {
			p.syncLoop(s.stop, func(err error) { s.storeFailed("syncing the log", err) })
		})
	}
	s.running.Store(true)
	// From here on a snapshot replaces the state under live clients, and
	// peers' forwarded frames can be served.
	s.fsm.serving.Store(true)
	close(s.ready)

	s.following.Go(s.observe)
	s.following.Go(s.followNotices)
	s.following.Go(s.applyNotices)

	if boot, ok := s.bootstrapConfig(); ok {
		err := s.raft.BootstrapCluster(boot).Error()
		if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			s.Close()
			return nil, fmt.Errorf("raftstore: bootstrap: %w", err)
		}
	}
	return s, nil
}

// advertise picks the address peers should dial when Peers does not name
// this node: the configured one when it names a host and port, else the
// bound one.
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
// to be sent the log: one added later, or an observer (a non-voter, which
// Raft does not let bootstrap; the voters' configuration names it, so the
// leader replicates to it from the start).
func (s *Store) bootstrapConfig() (raft.Configuration, bool) {
	var c raft.Configuration
	if len(s.cfg.Peers) == 0 {
		c.Servers = []raft.Server{{Suffrage: raft.Voter, ID: serverID(s.cfg.NodeID), Address: raft.ServerAddress(s.addr)}}
		return c, true
	}
	if !slices.ContainsFunc(s.cfg.Members, func(m membership.Member) bool { return m.ID == s.cfg.NodeID && m.Votes() }) {
		return c, false
	}
	for _, m := range s.cfg.Members {
		suffrage := raft.Voter
		if !m.Votes() {
			suffrage = raft.Nonvoter
		}
		c.Servers = append(c.Servers, raft.Server{Suffrage: suffrage, ID: serverID(m.ID), Address: raft.ServerAddress(m.RaftAddr())})
	}
	return c, true
}

// Config returns the configuration in effect, defaults filled in.
func (s *Store) Config() Config { return s.cfg }

// Addr returns the address peers dial for Raft and forwarding.
func (s *Store) Addr() string { return s.addr }

// append puts encoded commands into the log as one entry stamped with this
// node's clock. Leader only: elsewhere Raft refuses it, and the commands'
// origin finds out when they never apply.
func (s *Store) append(commands []byte) raft.ApplyFuture {
	return s.raft.Apply(zkdb.AppendEntry(nil, s.cfg.Clock.Now().UnixMilli(), commands), 0)
}

// Forward hands encoded commands (zkdb.AppendCommands) to the leader
// without waiting for them to commit: on the leader it appends them;
// elsewhere it sends them over the forwarding channel and returns once the
// leader has taken them. The origin hears the outcome through its state.
// ErrNoLeader, ErrNotLeader and ErrUnreachable mean nothing was taken;
// after any other error the commands may or may not commit, which callers
// must treat like ZooKeeper's connection loss. A caller that forwards
// from one goroutine gets its commands into the log in the order it
// forwarded them, or some of them not at all.
func (s *Store) Forward(ctx context.Context, commands []byte) error {
	if s.IsLeader() {
		s.append(commands)
		return nil
	}
	_, err := s.call(ctx, frameCommands, commands)
	return err
}

// ReportTouches tells the leader, which owns session expiry, that this
// node's clients were active on the sessions ids, and returns the index
// the leader had applied when it heard. It is not logged: only the
// leader's timers need it, and a new leader starts every session on a
// full timeout anyway.
func (s *Store) ReportTouches(ctx context.Context, ids []int64) (uint64, error) {
	if s.IsLeader() {
		s.db.TouchAll(ids, s.cfg.Clock.Now())
		return s.db.Applied(), nil
	}
	return s.call(ctx, frameTouches, encodeTouches(ids))
}

// IsLeader reports whether this node is the leader.
func (s *Store) IsLeader() bool { return s.raft.State() == raft.Leader }

// LastContact is when this node last heard from a leader; zero if never.
// On the leader it is meaningless.
func (s *Store) LastContact() time.Time { return s.raft.LastContact() }

// Term returns the current Raft term.
func (s *Store) Term() uint64 { return s.raft.CurrentTerm() }

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

// Configuration returns Raft's latest configuration (committed or not),
// by id, and the log index it was written at: the prevIndex a change to
// it must name, so that changes made from a stale view fail.
func (s *Store) Configuration() ([]zkdb.Replica, uint64, error) {
	f := s.raft.GetConfiguration()
	if err := s.wait(f); err != nil {
		return nil, 0, err
	}
	return replicasOf(f.Configuration()), f.Index(), nil
}

// replicasOf is a Raft configuration in the DB's terms, by id.
func replicasOf(c raft.Configuration) []zkdb.Replica {
	out := make([]zkdb.Replica, 0, len(c.Servers))
	for _, srv := range c.Servers {
		id, _ := strconv.ParseUint(string(srv.ID), 10, 64)
		out = append(out, zkdb.Replica{ID: id, Addr: string(srv.Address), Voter: srv.Suffrage == raft.Voter})
	}
	slices.SortFunc(out, func(a, b zkdb.Replica) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Barrier waits until every entry committed before it has been applied
// here. Leader only.
func (s *Store) Barrier(timeout time.Duration) error {
	return s.wait(s.raft.Barrier(timeout))
}

// wait returns f's error, or ErrClosed once the store is closing: a
// future Raft took but had not answered when it shut down is never
// answered, and must not hold up Close.
func (s *Store) wait(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-s.stop:
		return ErrClosed
	}
}

// syncIndex is the leader's answer to "how far must I catch up": after a
// barrier, every entry committed before the question was asked is in its
// state, and the applied index covers them all. Questions that arrive
// while a barrier is under way share the next one.
func (s *Store) syncIndex() (uint64, error) { return s.barrier.do(s.stopCtx) }

// barrierIndex runs one barrier and returns the applied index after it.
func (s *Store) barrierIndex() (uint64, error) {
	if err := s.wait(s.raft.Barrier(opTimeout)); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return 0, ErrNotLeader
		}
		return 0, err
	}
	return s.db.Applied(), nil
}

// WaitApplied makes this node's state include every write committed before
// the call, as ZooKeeper's sync does: it asks the leader for its applied
// index (on the leader itself, it runs the barrier) and waits until the
// local state has applied at least that index. During an election it
// waits for the next leader rather than fail, until ctx ends: a client
// syncing then is answered late instead of being sent to another node
// that is waiting for the same election.
func (s *Store) WaitApplied(ctx context.Context) error {
	idx, err := s.leaderIndex(ctx)
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

// leaderRetry is how often leaderIndex asks again while no leader answers.
const leaderRetry = 20 * time.Millisecond

// leaderIndex returns the leader's applied index, retrying until ctx ends
// while there is no leader or the one asked has just lost the role.
func (s *Store) leaderIndex(ctx context.Context) (uint64, error) {
	for {
		var (
			idx uint64
			err error
		)
		if s.IsLeader() {
			idx, err = s.syncIndex()
		} else {
			// Concurrent syncs share one question (askLeaderIndex).
			idx, err = s.askIndex.do(ctx)
		}
		if err == nil {
			return idx, nil
		}
		if s.raft.State() == raft.Shutdown {
			return 0, err
		}
		t := time.NewTimer(leaderRetry)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, errors.Join(ctx.Err(), err)
		}
	}
}

// askLeaderIndex asks the leader for its sync index, one try at a time,
// so a leader that went silent (a partition that drops traffic) is given
// up on and the next one asked.
func (s *Store) askLeaderIndex() (uint64, error) {
	try, cancel := context.WithTimeout(s.stopCtx, s.cfg.ForwardTimeout)
	defer cancel()
	return s.call(try, frameIndex, nil)
}

// Snapshot takes a snapshot now and compacts the log behind it, keeping
// TrailingLogs entries.
func (s *Store) Snapshot() error { return s.wait(s.raft.Snapshot()) }

// The changes below are Raft's single-server membership changes. Each is
// leader only, names the index of the configuration it changes
// (Configuration), and fails if that is no longer the latest: two changes
// made from the same view cannot both apply. Each returns once the new
// configuration is committed.

// AddVoter adds a voting member, or makes a non-voter vote.
func (s *Store) AddVoter(id uint64, addr string, prevIndex uint64) error {
	return s.wait(s.raft.AddVoter(serverID(id), raft.ServerAddress(addr), prevIndex, opTimeout))
}

// AddNonvoter adds a member that is sent the log but does not vote.
func (s *Store) AddNonvoter(id uint64, addr string, prevIndex uint64) error {
	return s.wait(s.raft.AddNonvoter(serverID(id), raft.ServerAddress(addr), prevIndex, opTimeout))
}

// DemoteVoter keeps a member as a non-voter.
func (s *Store) DemoteVoter(id uint64, prevIndex uint64) error {
	return s.wait(s.raft.DemoteVoter(serverID(id), prevIndex, opTimeout))
}

// RemoveServer removes a member.
func (s *Store) RemoveServer(id uint64, prevIndex uint64) error {
	return s.wait(s.raft.RemoveServer(serverID(id), prevIndex, opTimeout))
}

// Stats returns Raft's statistics plus this node's id, address, the
// state's applied index, the log's first index and when the newest
// snapshot was written (last_snapshot_unix_ms, 0 before any).
func (s *Store) Stats() map[string]string {
	st := s.raft.Stats()
	if first, err := s.logs.FirstIndex(); err == nil {
		st["first_log_index"] = strconv.FormatUint(first, 10)
	}
	st["last_snapshot_unix_ms"] = strconv.FormatInt(s.snaps.newest.Load(), 10)
	st["node_id"] = strconv.FormatUint(s.cfg.NodeID, 10)
	st["log_store"] = s.logStore.kind
	st["log_bytes"] = strconv.FormatInt(s.logStore.bytes(), 10)
	st["log_appended_bytes"] = strconv.FormatInt(s.appended.Load(), 10)
	st["raft_addr"] = s.addr
	st["fsm_applied_index"] = strconv.FormatUint(s.db.Applied(), 10)
	if err := s.Halted(); err != nil {
		st["halted"] = haltedText(err)
	}
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
	close(s.stop)
	s.cancelStop()
	pipes := s.pipes
	s.pipes = nil
	for c := range s.inbound {
		c.Close()
	}
	s.fwdMu.Unlock()
	for _, p := range pipes {
		p.fail(ErrClosed)
	}

	err := s.shutdownRaft()
	s.handlers.Wait()
	s.following.Wait()
	if cerr := s.closeStores(); err == nil {
		err = cerr
	}
	return err
}

// shutdownRaft shuts Raft down and waits for it, unless a goroutine of
// its was parked after a failure, before the shutdown or during it (a
// failing disk fails the writes of a member that is closing too): that
// one never returns, so the wait is then bounded to let the others
// finish.
func (s *Store) shutdownRaft() error {
	f := s.raft.Shutdown()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-s.parkedCh:
	}
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Second):
		return nil
	}
}

// abandon undoes a failed Open: it stops whatever waits for Raft, then
// closes the transport and stores.
func (s *Store) abandon() {
	close(s.stop)
	s.cancelStop()
	s.closeStores()
}

// closeStores closes the transport (and with it the listener) and the
// on-disk store.
func (s *Store) closeStores() error {
	var err error
	if s.trans != nil {
		err = s.trans.Close()
	}
	if s.mux != nil {
		s.mux.Close()
		s.mux.wg.Wait()
	}
	if s.logStore != nil && s.logStore.close != nil {
		if lerr := s.logStore.close(); err == nil {
			err = lerr
		}
	}
	return err
}

var _ io.Closer = (*Store)(nil)
