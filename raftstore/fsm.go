package raftstore

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/hutchzk/hutch/zkdb"
)

// fsm is the raft.FSM over a zkdb.DB: committed entries are applied to the
// DB, snapshots are the DB's own, and it lets callers wait for an index
// to be applied. Configuration entries are applied too (it is a
// raft.ConfigurationStore), so the DB records who Raft replicates to at
// its place in the log. Besides Raft's own goroutine, a follower's commit
// notices apply entries of both kinds (applyCommitted): the DB skips any
// index at or below the last it applied, so each entry takes effect once,
// from whichever applies it first, and each source goes in log order.
type fsm struct {
	db  *zkdb.DB
	log *slog.Logger
	// serving is set once the store is open: a snapshot restored after
	// that replaces the state under live clients.
	serving atomic.Bool
	// restoreFailed, when set, says which snapshot a failed Restore read
	// and how far (checkedSnapshots).
	restoreFailed func(error) error
	// halt stops the member (Store.halt); once it has, halted is set and
	// nothing more is applied.
	halt   func(error)
	halted atomic.Bool
	// logs is the log store, from which a configuration entry's term is
	// read (Raft hands StoreConfiguration its index only); set at open.
	logs raft.LogStore
	// durable, when set, waits until this member's log holds an index
	// durably, false if the store stops first: a leader's own copy may
	// still be syncing when Raft commits it (parallel.go).
	durable func(index uint64) bool

	// wmu guards notify, lastIndex and lastTerm.
	wmu    sync.Mutex
	notify chan struct{} // closed when the applied index advances; nil if nobody waits
	// lastIndex and lastTerm are the newest command or configuration
	// entry applied: being applied, it is committed, and a follower
	// holding an entry of that index and term holds every committed entry
	// up to it. Commit notices carry them, so a follower applies a
	// configuration entry as soon as a command.
	lastIndex, lastTerm uint64
}

// Apply applies one committed entry. It returns the log index. An entry
// that does not decode (its checksum held, so its leader wrote it so, or
// it predates checksums) halts the member: skipping it would leave this
// replica different from the others, which decode it alike only if their
// copies are alike.
func (f *fsm) Apply(l *raft.Log) any {
	if f.halted.Load() {
		return l.Index
	}
	if l.Index > f.db.Applied() { // else a commit notice applied it already
		if f.durable != nil && !f.durable(l.Index) {
			return l.Index // stopping: nothing more is applied
		}
		b, ok := f.decode(l)
		if !ok {
			return l.Index
		}
		f.db.Apply(b, l.Index)
	}
	f.applied(l.Index, l.Term)
	return l.Index
}

// StoreConfiguration applies a committed configuration entry
// (raft.ConfigurationStore).
func (f *fsm) StoreConfiguration(index uint64, c raft.Configuration) {
	if f.halted.Load() {
		return
	}
	if index > f.db.Applied() { // else a commit notice applied it already
		f.db.ApplyReplicas(index, replicasOf(c))
	}
	if f.logs != nil {
		if l, err := readLog(f.logs, index); err == nil {
			f.applied(index, l.Term)
			return
		}
	}
	f.wake()
}

var _ raft.ConfigurationStore = (*fsm)(nil)

func (f *fsm) decode(l *raft.Log) (zkdb.Batch, bool) {
	b, err := zkdb.DecodeEntry(l.Data)
	if err != nil {
		if f.halt != nil {
			f.halt(fmt.Errorf("log entry %d (term %d, %d bytes) does not decode: %w", l.Index, l.Term, len(l.Data), err))
		} else {
			f.log.Error("raftstore: log entry does not decode", "index", l.Index, "err", err)
		}
		f.halted.Store(true)
		return zkdb.Batch{}, false
	}
	b.Term = l.Term
	return b, true
}

// decodeConfiguration decodes a configuration entry, halting the member
// where it does not decode: raft.DecodeConfiguration panics on bytes it
// cannot read.
func (f *fsm) decodeConfiguration(l *raft.Log) (c raft.Configuration, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("log entry %d (term %d, a configuration) does not decode: %v", l.Index, l.Term, r)
			if f.halt != nil {
				f.halt(err)
			}
			f.halted.Store(true)
			ok = false
		}
	}()
	return raft.DecodeConfiguration(l.Data), true
}

// applied records the newest command entry applied and wakes waiters.
func (f *fsm) applied(index, term uint64) {
	f.wmu.Lock()
	if index > f.lastIndex {
		f.lastIndex, f.lastTerm = index, term
	}
	if f.notify != nil {
		close(f.notify)
		f.notify = nil
	}
	f.wmu.Unlock()
}

// wake tells waiters the applied index moved.
func (f *fsm) wake() {
	f.wmu.Lock()
	if f.notify != nil {
		close(f.notify)
		f.notify = nil
	}
	f.wmu.Unlock()
}

// last returns the newest command entry applied, and a channel closed
// when another is.
func (f *fsm) last() (index, term uint64, moved <-chan struct{}) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.notify == nil {
		f.notify = make(chan struct{})
	}
	return f.lastIndex, f.lastTerm, f.notify
}

// applyCommitted applies, from this node's own log, the entries after
// the DB's last one up to index, if the entry at index has term term: a
// node that applied that entry has committed it, and by Raft's log
// matching every entry up to it is then the same here as in the leader's
// log, and committed. It reports whether it got that far; false means the
// entry is not (yet) here as committed, and Raft's own apply, or a later
// attempt once the entry has arrived, will do. Only command entries are
// applied, as Raft applies only those.
func (f *fsm) applyCommitted(logs raft.LogStore, index, term uint64) bool {
	from := f.db.Applied() + 1
	if index < from {
		return true
	}
	if l, err := readLog(logs, index); err != nil || l.Term != term {
		return false
	}
	// Not f.durable: the entry is committed, durable on a majority, and
	// this member's copy need only be written (parallel.go).
	for i := from; i <= index; i++ {
		l, err := readLog(logs, i)
		if err != nil {
			return false // compacted under a snapshot, which covers it
		}
		if l.Index <= f.db.Applied() {
			continue
		}
		if f.halted.Load() {
			return false
		}
		switch l.Type {
		case raft.LogCommand:
			b, ok := f.decode(l)
			if !ok {
				return false
			}
			f.db.Apply(b, l.Index)
			f.applied(l.Index, l.Term)
		case raft.LogConfiguration:
			c, ok := f.decodeConfiguration(l)
			if !ok {
				return false
			}
			f.db.ApplyReplicas(l.Index, replicasOf(c))
			f.applied(l.Index, l.Term)
		}
	}
	return true
}

// readLog reads one entry into a raft.Log of its own. Reusing one is
// unsafe: raft.LogCache hands out its cached entry's Data, and a store
// decoding the next entry into the same raft.Log writes over that buffer
// (the msgpack decoder reuses a slice it is given), corrupting the cache.
func readLog(logs raft.LogStore, index uint64) (*raft.Log, error) {
	l := new(raft.Log)
	return l, logs.GetLog(index, l)
}

// waitCh returns the applied index and a channel closed when it next moves.
func (f *fsm) waitCh() (uint64, <-chan struct{}) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.notify == nil {
		f.notify = make(chan struct{})
	}
	return f.db.Applied(), f.notify
}

// Snapshot encodes the state now, on Raft's FSM goroutine, so its index is
// exactly the last entry applied; Persist then writes the bytes with no
// lock held.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	data, err := f.db.Snapshot()
	if err != nil {
		return nil, err
	}
	return &fsmSnapshot{data: data}, nil
}

// Restore replaces the state with a snapshot: at start-up, or when the
// leader sends one to a node too far behind.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	if err := f.db.Restore(rc, f.serving.Load()); err != nil {
		if f.restoreFailed != nil {
			err = f.restoreFailed(err)
		}
		return err
	}
	f.wake()
	return nil
}

type fsmSnapshot struct{ data []byte }

// Persist writes the encoded state to the snapshot store.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s.data); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release drops the encoded state.
func (s *fsmSnapshot) Release() { s.data = nil }
