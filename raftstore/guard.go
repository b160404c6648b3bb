package raftstore

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/hutchzk/hutch/zkdb"
)

// A member that cannot go on safely stops: it halts. ZooKeeper exits on
// a failed write to its log ("Severe unrecoverable error") and refuses to
// load a log whose CRC fails; hutch's member shuts Raft down, closes its
// port to the others, and tells the server (Events.Halted), which closes
// every client and refuses new ones, so clients move to a member that
// can serve them. It halts when:
//
//   - a write to its log, stable store (term and vote) or snapshots fails:
//     what reached the disk is unknown, and a member that answers as if
//     it had persisted would let a quorum count a vote or an entry it may
//     not hold after a restart (a full disk, a failing fsync);
//   - an entry read back fails its checksum (zkdb.CheckEntry) or does not
//     decode: its bytes are not the ones the leader ordered, and applying
//     anything else, or skipping it, would make this replica differ from
//     the others while it serves reads;
//   - its state's digest differs from the others' at the same index
//     (digest.go).
//
// Whichever store a data directory holds, the guards below wrap it, so
// the rule holds for every kind.

// haltState is a Store's record of halting.
type haltState struct {
	once sync.Once
	err  atomic.Pointer[error]
	// mu guards hook, which runs once when the store halts: the Node's
	// way of telling the server.
	mu   sync.Mutex
	hook func(error)
}

// Halted returns why this store stopped itself, or nil while it runs.
func (s *Store) Halted() error {
	if p := s.halting.err.Load(); p != nil {
		return *p
	}
	return nil
}

// onHalt runs f, once, when the store halts (at once if it has).
func (s *Store) onHalt(f func(error)) {
	s.halting.mu.Lock()
	s.halting.hook = f
	s.halting.mu.Unlock()
	if err := s.Halted(); err != nil {
		go f(err)
	}
}

// halt stops this member for err, which says what failed and where. It
// may be called from any of Raft's goroutines (a store call, the FSM),
// so the shutdown runs on a goroutine of its own.
func (s *Store) halt(err error) {
	s.halting.once.Do(func() {
		s.halting.err.Store(&err)
		s.fsm.halted.Store(true)
		s.log.Error("raftstore: this member stops serving and leaves the ensemble: it cannot go on safely. "+
			"Fix the cause, then restart it; a log or snapshot that is damaged or differs from the others' is "+
			"replaced by starting the member from an empty data directory, which resyncs it from the others "+
			"(docs/operations.md, \"A member that stopped itself\")", "err", err, "node", s.cfg.NodeID)
		s.halting.mu.Lock()
		hook := s.halting.hook
		s.halting.mu.Unlock()
		if hook != nil {
			go hook(err)
		}
		if s.running.Load() {
			go s.Close()
		}
	})
}

// closing reports whether Close has begun: store errors then come from
// stores closing under Raft, not from the disk.
func (s *Store) closing() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// storeFailed halts for a failed store call, unless the store is
// closing.
func (s *Store) storeFailed(what string, err error) error {
	if err == nil || s.closing() {
		return err
	}
	if what == "" {
		s.halt(fmt.Errorf("%s: %w", s.where(), err))
	} else {
		s.halt(fmt.Errorf("%s in %s: %w", what, s.where(), err))
	}
	return err
}

// where names the member's log for messages.
func (s *Store) where() string {
	if s.cfg.DataDir == "" {
		return "the in-memory log"
	}
	return s.cfg.DataDir + " (" + s.logStore.kind + " log)"
}

// hashicorp/raft (v1.7.3) panics, taking the whole process down, when a
// read of a committed entry it is about to apply fails, or when it cannot
// store its term or vote. Returning those errors would turn a halt into
// a crash (an embedding program's too), and pretending success would let
// the member answer as if it had persisted a vote it may not hold after
// a restart, which can elect two leaders in one term. So the Raft
// goroutine that met such a failure is parked: it halts the member and
// never returns, the member's network is closed, and Close does not wait
// for it. Failures Raft handles itself (appends, compaction, snapshots)
// are returned to it.

// park holds the calling Raft goroutine for good, once the member has
// halted.
func (s *Store) park() {
	s.parkedOnce.Do(func() { close(s.parkedCh) })
	select {}
}

// guardedLogs is the log store with every write failure and every bad
// entry read back halting the member; park is set on the copy Raft reads,
// whose caller parks rather than panics on a failed read.
type guardedLogs struct {
	raft.LogStore
	s    *Store
	park bool
}

func (g guardedLogs) GetLog(index uint64, l *raft.Log) error {
	err := g.LogStore.GetLog(index, l)
	if errors.Is(err, raft.ErrLogNotFound) {
		return err
	}
	if err == nil {
		if err = checkLogEntry(index, l); err == nil {
			return nil
		}
		err = fmt.Errorf("the log: %w", err)
	} else {
		err = fmt.Errorf("reading log entry %d: %w", index, err)
	}
	// While the member closes too: Raft panics on a failed read of an
	// entry it applies, whether or not it is shutting down.
	g.s.storeFailed("", err)
	if g.park {
		g.s.park()
	}
	return err
}

// checkLogEntry checks an entry read back for index.
func checkLogEntry(index uint64, l *raft.Log) error {
	if l.Index != index {
		return fmt.Errorf("entry %d reads back as entry %d", index, l.Index)
	}
	if l.Type != raft.LogCommand {
		return nil
	}
	if err := zkdb.CheckEntry(l.Data); err != nil {
		return fmt.Errorf("entry %d (term %d, %d bytes): %w", index, l.Term, len(l.Data), err)
	}
	return nil
}

func (g guardedLogs) StoreLog(l *raft.Log) error {
	return g.StoreLogs([]*raft.Log{l})
}

func (g guardedLogs) StoreLogs(ls []*raft.Log) error {
	err := g.LogStore.StoreLogs(ls)
	if err == nil {
		var n int64
		for _, l := range ls {
			n += int64(len(l.Data))
		}
		g.s.appended.Add(n)
	}
	if err != nil && len(ls) > 0 {
		return g.s.storeFailed(fmt.Sprintf("appending log entries %d-%d", ls[0].Index, ls[len(ls)-1].Index), err)
	}
	return err
}

func (g guardedLogs) DeleteRange(lo, hi uint64) error {
	return g.s.storeFailed(fmt.Sprintf("deleting log entries %d-%d", lo, hi), g.LogStore.DeleteRange(lo, hi))
}

// IsMonotonic passes on raft.MonotonicLogStore.
func (g guardedLogs) IsMonotonic() bool {
	m, ok := g.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// guardedStable halts the member when its term or vote cannot be stored.
type guardedStable struct {
	raft.StableStore
	s *Store
}

func (g guardedStable) Set(key, val []byte) error {
	return g.failed(key, g.StableStore.Set(key, val))
}

func (g guardedStable) SetUint64(key []byte, val uint64) error {
	return g.failed(key, g.StableStore.SetUint64(key, val))
}

// failed halts and parks Raft's goroutine when the term or vote could not
// be stored (see park), while the member closes too: Raft panics on the
// error all the same (a member that halted on a full disk, and is closing,
// took the whole process down when an election asked it to store a new
// term).
func (g guardedStable) failed(key []byte, err error) error {
	if err == nil {
		return nil
	}
	g.s.storeFailed("storing "+string(key), err)
	g.s.park()
	return err
}

// guardedSnapshots halts the member when a snapshot cannot be written,
// whether this member took it or the leader sent it.
type guardedSnapshots struct {
	raft.SnapshotStore
	s *Store
}

func (g guardedSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := g.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, g.s.storeFailed(fmt.Sprintf("creating the snapshot at entry %d", index), err)
	}
	return &guardedSink{SnapshotSink: sink, s: g.s, index: index}, nil
}

type guardedSink struct {
	raft.SnapshotSink
	s     *Store
	index uint64
}

func (g *guardedSink) Write(p []byte) (int, error) {
	n, err := g.SnapshotSink.Write(p)
	if err != nil {
		g.s.storeFailed(fmt.Sprintf("writing the snapshot at entry %d", g.index), err)
	}
	return n, err
}

func (g *guardedSink) Close() error {
	return g.s.storeFailed(fmt.Sprintf("writing the snapshot at entry %d", g.index), g.SnapshotSink.Close())
}

// verifyLog reads every entry of the log once, before Raft starts, and
// refuses a log holding an entry that fails its checksum or is not where
// it should be, as ZooKeeper refuses a log whose CRC check fails: Raft
// itself reads only some entries at start, and would apply a damaged one
// only once elected or told of a commit, while serving clients.
func verifyLog(logs raft.LogStore, dir string) error {
	first, err := logs.FirstIndex()
	if err != nil {
		return err
	}
	last, err := logs.LastIndex()
	if err != nil || first == 0 {
		return err
	}
	for i := first; i <= last; i++ {
		l := new(raft.Log)
		err := logs.GetLog(i, l)
		if err == nil {
			err = checkLogEntry(i, l)
		}
		if err != nil {
			return fmt.Errorf("raftstore: the log in %s is damaged: %w; this member cannot start from it: "+
				"move its data directory aside and start it empty to resync from the others "+
				"(docs/operations.md, \"A damaged or corrupt log\")", dir, err)
		}
	}
	return nil
}

var _ io.Writer = (*guardedSink)(nil)

// haltedText is a halted store's error for Stats.
func haltedText(err error) string {
	if err == nil {
		return ""
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}
