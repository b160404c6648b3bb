package zkdb

import (
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hutchzk/hutch/clock"
	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/session"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/watch"
	"github.com/hutchzk/hutch/wire"
)

// Sink receives what applying commands means for this node's clients. Its
// methods run with the DB's lock held: they must only queue work (a reply,
// a notification, a connection to close), never call back into the DB.
type Sink interface {
	// Notify delivers a watch event to watcher, the connection that set
	// the watch. from is the tree's event: its ACL decides whether that
	// connection may hear of it (ZooKeeper drops it otherwise).
	Notify(watcher int64, ev *wire.WatcherEvent, from *tree.Event)
	// Applied receives the effects of one command, after its watches fired.
	Applied(e *Effects)
	// Reset says the state was replaced by a snapshot while serving: every
	// watch is gone and clients must re-synchronise (reconnect and set
	// their watches again), as with a ZooKeeper follower that took a
	// snapshot from its leader.
	Reset()
}

// Effects is what one command did.
type Effects struct {
	Command *Command
	// Result is the tree's result; for a refused command or an attach only
	// Result.Err is set (ErrSessionMoved, ErrOutOfOrder,
	// tree.ErrSessionExpired). Command.Txn.Zxid is the zxid it took (0 for
	// an attach).
	Result tree.Result
	// ClosedSession is the session a closeSession removed, and ClosedConn
	// the connection that owned it (0 if none): it should close once its
	// queued replies are written.
	ClosedSession int64
	ClosedConn    int64
	// ClosedNode and ClosedTimeout are where the closed session was
	// connected (the member, as replicated) and its timeout in ms, for
	// those who report on ended sessions.
	ClosedNode    uint64
	ClosedTimeout int32
	// MovedFrom is the connection that owned the session before an attach
	// moved it elsewhere; it should be dropped (0 if none).
	MovedFrom int64
	// Membership is the configuration a reconfig installed; nil otherwise.
	Membership *membership.Config
}

// Config configures a DB.
type Config struct {
	// TickTime is the width of the session timers' buckets.
	TickTime time.Duration
	// Clock times the session timers; System when nil.
	Clock clock.Clock
	// Sink receives the effects of applied commands; required.
	Sink Sink
	// SASL registers the sasl ACL scheme in the tree (tree.EnableSASL),
	// restored snapshots included.
	SASL bool
	// EnforceQuota makes hard quota limits refuse the writes that would
	// pass them (zookeeper.enforceQuota, tree.EnforceQuota), restored
	// snapshots included. Every member must agree on it.
	EnforceQuota bool
	// Logger receives the DB's rare warnings (the transaction clock
	// stepping back); slog.Default() when nil.
	Logger *slog.Logger
}

// DB is one node's replica of the state, and the node's own watches and
// session timers. Lock order: mu, then watchMu, then timersMu.
type DB struct {
	sasl         bool // Config.SASL: every tree it holds accepts the sasl scheme
	enforceQuota bool // Config.EnforceQuota: every tree it holds enforces quotas
	log          *slog.Logger
	clock        clock.Clock
	tick         time.Duration
	sink         Sink
	// notify is deliver bound once; firing is the event being delivered
	// (set and read only by Apply, under mu).
	notify func(watcher int64, ev wire.WatcherEvent)
	firing *tree.Event

	// mu guards the replicated state: tree, owners, members, replicas,
	// lastTime and applied.
	// Apply and Restore take it to write; reads, snapshots and watch
	// registration (which must be atomic with the read that sets it) take
	// it to read.
	mu       sync.RWMutex
	tree     *tree.Tree
	owners   map[int64]*owner // by session
	members  membership.Config
	replicas []Replica // by id
	lastTime int64     // the largest transaction time applied
	applied  uint64    // log index of the last batch applied
	// digests samples the tree's digest every digestInterval zxids, the
	// newest digestLogLimit kept, for the hash command (ZooKeeper's
	// DataTree digest log).
	digests []ZxidDigest
	// stateDigests holds the tree's digest after each recent batch, by
	// log index, stateDigestNext the slot to overwrite next once full
	// (statedigest.go).
	stateDigests    []IndexDigest
	stateDigestNext int
	// lastSnapshot is set by Snapshot, which holds only the read lock.
	lastSnapshot atomic.Pointer[SnapshotInfo]

	// watchMu guards watches; readers under mu's read lock add watches
	// concurrently.
	watchMu sync.Mutex
	watches *watch.Manager

	// timersMu guards timers and closing. Touch takes it alone, so client
	// activity never waits for an apply or a snapshot.
	timersMu sync.Mutex
	timers   *session.Tracker
	closing  map[int64]bool // sessions handed out by ExpireSessions, close not yet applied
}

// ZxidDigest is the tree's digest right after the transaction Zxid.
type ZxidDigest struct {
	Zxid   int64
	Digest uint64
}

// How often the digest is sampled, and how many samples are kept.
const (
	digestInterval = 128
	digestLogLimit = 1024
)

// DigestLog returns the sampled digests, oldest first.
func (d *DB) DigestLog() []ZxidDigest {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return slices.Clone(d.digests)
}

// owner is who may write for a session: the connection that created or
// last attached it, and the Order its next command must carry.
type owner struct {
	conn    int64
	next    uint64
	timeout int32 // negotiated at creation or the last attach, ms
	// node is the member that took the creation or last attach from the
	// client (Command.Origin): where the session is connected.
	node uint64
}

// New returns a DB holding a fresh tree (tree.New).
func New(cfg Config) *DB {
	if cfg.Clock == nil {
		cfg.Clock = clock.System
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &DB{
		sasl:         cfg.SASL,
		enforceQuota: cfg.EnforceQuota,
		log:          cfg.Logger,
		clock:        cfg.Clock,
		tick:         cfg.TickTime,
		sink:         cfg.Sink,
		tree:         tree.New(),
		owners:       make(map[int64]*owner),
		watches:      watch.NewManager(),
		timers:       session.NewTracker(cfg.TickTime),
		closing:      make(map[int64]bool),
	}
	if cfg.SASL {
		d.tree.EnableSASL()
	}
	if cfg.EnforceQuota {
		d.tree.EnforceQuota()
	}
	d.notify = d.deliver
	return d
}

// Apply applies a batch, command by command, as log entry index (entries at
// or below the index already applied, by a restored snapshot, are
// skipped). Every replica applying the same batches reaches the same
// state: the transaction time follows the batch's (see advanceTime) and
// zxids follow the tree's last one.
func (d *DB) Apply(b Batch, index uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if index <= d.applied {
		return
	}
	d.applied = index
	if len(b.Commands) == 0 {
		return
	}
	d.advanceTime(b.Time, index)
	now := d.clock.Now()
	for i := range b.Commands {
		d.applyLocked(&b.Commands[i], b.Term, now)
	}
	d.recordStateDigestLocked(index)
}

// MaxTimeHold is how far a leader's clock may be behind the transaction
// time and still be held up to it. A clock that far behind is not skew
// between members or an NTP correction (milliseconds; a leap second is
// one second) but a clock that jumped ahead and was put right, or one
// stepped back: the transaction time then follows it back, as ZooKeeper's
// (the leader's clock, unheld) always does. Ten seconds holds every
// ordinary step with a wide margin, and bounds how long ctime and mtime
// stand still after a leader's clock jumped ahead and came back.
const MaxTimeHold = 10 * time.Second

// advanceTime sets the transaction time for a batch stamped stamp (ms):
// the stamp, held at the last transaction time if it is behind that by at
// most MaxTimeHold, so transaction times do not go back when a new
// leader's clock is a little behind the old one's. Beyond the bound the
// transaction time steps back to the stamp, with a warning. The rule reads
// only the batch and the replicated state, never this node's clock, so
// every replica decides alike. mu is held.
func (d *DB) advanceTime(stamp int64, index uint64) {
	switch {
	case stamp >= d.lastTime:
		d.lastTime = stamp
	case d.lastTime-stamp > MaxTimeHold.Milliseconds():
		d.log.Warn("transaction time steps back to the leader's clock: it was ahead, or has been set back",
			"txnTime", time.UnixMilli(d.lastTime).UTC(), "leaderTime", time.UnixMilli(stamp).UTC(),
			"back", time.Duration(d.lastTime-stamp)*time.Millisecond, "index", index)
		d.lastTime = stamp
	}
}

func (d *DB) applyLocked(c *Command, term uint64, now time.Time) {
	e := Effects{Command: c}
	id := c.Txn.Session
	if c.Kind == KindAttach {
		c.Txn.Zxid, c.Txn.Time = 0, d.lastTime
		if _, _, ok := d.tree.Session(id); !ok {
			e.Result.Err = tree.ErrSessionExpired
			d.sink.Applied(&e)
			return
		}
		if o := d.owners[id]; o != nil && o.conn != c.Conn {
			e.MovedFrom = o.conn
		}
		d.owners[id] = &owner{conn: c.Conn, next: 1, timeout: c.Timeout, node: c.Origin}
		d.timersMu.Lock()
		delete(d.closing, id)
		d.timers.Add(id, millis(c.Timeout), now)
		d.timersMu.Unlock()
		d.sink.Applied(&e)
		return
	}

	txn := &c.Txn
	txn.Zxid, txn.Time = d.tree.LastZxid()+1, d.lastTime
	if c.Kind == KindReconfig {
		d.applyReconfig(c, &e)
		d.sampleDigest(txn.Zxid)
		d.fire(&e)
		d.sink.Applied(&e)
		return
	}
	if err := d.admit(c, term); err != nil {
		d.tree.ConsumeZxid(txn.Zxid)
		e.Result.Err = err
		d.sink.Applied(&e)
		return
	}
	e.Result = d.tree.Apply(txn)
	d.sampleDigest(txn.Zxid)
	d.fire(&e)
	if e.Result.Err == nil {
		switch txn.Op {
		case wire.OpCreateSession:
			cs := txn.Req.(*tree.CreateSession) // Apply succeeded, so it is one
			d.owners[cs.ID] = &owner{conn: c.Conn, next: 1, timeout: cs.Timeout, node: c.Origin}
			d.timersMu.Lock()
			d.timers.Add(cs.ID, millis(cs.Timeout), now)
			d.timersMu.Unlock()
		case wire.OpCloseSession:
			e.ClosedSession = id
			if o := d.owners[id]; o != nil {
				e.ClosedConn, e.ClosedNode, e.ClosedTimeout = o.conn, o.node, o.timeout
			}
			delete(d.owners, id)
			d.timersMu.Lock()
			d.timers.Remove(id)
			delete(d.closing, id)
			d.timersMu.Unlock()
		}
	}
	d.sink.Applied(&e)
}

// sampleDigest keeps the tree's digest after every digestInterval-th zxid.
func (d *DB) sampleDigest(zxid int64) {
	if zxid%digestInterval != 0 || d.tree.LastZxid() != zxid {
		return
	}
	if len(d.digests) == digestLogLimit {
		d.digests = append(d.digests[:0], d.digests[1:]...)
	}
	d.digests = append(d.digests, ZxidDigest{Zxid: zxid, Digest: d.tree.Digest()})
}

// fire triggers the watches of a command's events.
func (d *DB) fire(e *Effects) {
	if len(e.Result.Events) == 0 {
		return
	}
	d.watchMu.Lock()
	for i := range e.Result.Events {
		d.firing = &e.Result.Events[i]
		d.watches.Trigger(d.firing.Type, d.firing.Path, d.notify)
	}
	d.firing = nil
	d.watchMu.Unlock()
}

// admit decides whether a command may apply now. A client's: its session
// must exist, be owned by the command's connection, and expect this
// command next (a session's creation is always admitted). The server's own
// (Conn 0): if a leader decided it, only in that leader's term.
func (d *DB) admit(c *Command, term uint64) error {
	if c.Term != 0 && c.Term != term {
		return ErrStaleDecision
	}
	if c.Conn == 0 || c.Txn.Op == wire.OpCreateSession {
		return nil
	}
	o := d.owners[c.Txn.Session]
	switch {
	case o == nil:
		return tree.ErrSessionExpired
	case o.conn != c.Conn:
		return ErrSessionMoved
	case c.Order != o.next:
		return ErrOutOfOrder
	}
	o.next++
	return nil
}

// deliver hands one triggered watch to the sink; d.firing is the event.
func (d *DB) deliver(watcher int64, ev wire.WatcherEvent) {
	d.sink.Notify(watcher, &ev, d.firing)
}

func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

// Applied returns the log index of the last batch applied.
func (d *DB) Applied() uint64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.applied
}

// LastZxid returns the zxid of the last transaction applied.
func (d *DB) LastZxid() int64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.tree.LastZxid()
}

// LastTime returns the transaction clock: the time of the last batch
// applied, in ms since the epoch. It goes back only when a leader's clock
// is behind it by more than MaxTimeHold (advanceTime).
func (d *DB) LastTime() int64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.lastTime
}

// Digest returns the tree's digest and last zxid, read together.
func (d *DB) Digest() (uint64, int64) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.tree.Digest(), d.tree.LastZxid()
}

// SessionCount returns how many sessions exist.
func (d *DB) SessionCount() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.owners)
}

// Counts are sizes for monitoring.
type Counts struct {
	Nodes, Sessions, Watches, Ephemerals int
	DataSize                             int64 // paths plus data, in bytes
	LastZxid                             int64
}

// Counts reads the sizes; every one is kept as the state changes, so the
// locks are held only to copy them.
func (d *DB) Counts() Counts {
	d.mu.RLock()
	c := Counts{Nodes: d.tree.NodeCount(), Sessions: len(d.owners), LastZxid: d.tree.LastZxid(),
		Ephemerals: d.tree.EphemeralCount(), DataSize: d.tree.ApproximateDataSize()}
	d.mu.RUnlock()
	d.watchMu.Lock()
	c.Watches = d.watches.Count()
	d.watchMu.Unlock()
	return c
}

// Ephemerals lists each session's ephemeral paths (the dump command). It
// walks the sessions that own ephemerals under the read lock.
func (d *DB) Ephemerals() map[int64][]string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.tree.EphemeralsBySession()
}

// Watches lists every watch, keyed by the connection that set it (the
// operator views: wchc, wchp, wchs).
func (d *DB) Watches() []watch.Entry {
	d.watchMu.Lock()
	defer d.watchMu.Unlock()
	return d.watches.Entries()
}

// ExpiryBuckets lists the session timers this node runs, soonest first
// (the dump command); a node that does not expire sessions has none.
func (d *DB) ExpiryBuckets() []session.Bucket {
	d.timersMu.Lock()
	defer d.timersMu.Unlock()
	return d.timers.Buckets()
}
