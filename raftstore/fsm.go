package raftstore

import (
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/hutchzk/hutch/zkdb"
)

// fsm is the raft.FSM over a zkdb.DB: committed entries are applied to the
// DB, snapshots are the DB's own, and it lets callers wait for an index
// to be applied.
type fsm struct {
	db  *zkdb.DB
	log *slog.Logger
	// onApplied runs after each entry that carried commands.
	onApplied func()
	// serving is set once the store is open: a snapshot restored after
	// that replaces the state under live clients.
	serving atomic.Bool

	// wmu guards notify.
	wmu    sync.Mutex
	notify chan struct{} // closed when the applied index advances; nil if nobody waits
}

// Apply applies one committed entry. It returns the log index; an entry
// that does not decode (impossible unless the log is corrupt, since the
// leader checks what it appends) is skipped on every node alike.
func (f *fsm) Apply(l *raft.Log) any {
	b, err := zkdb.DecodeEntry(l.Data)
	if err != nil {
		f.log.Error("raftstore: skipping undecodable log entry", "index", l.Index, "err", err)
		b = zkdb.Batch{}
	}
	b.Term = l.Term
	f.db.Apply(b, l.Index)
	if len(b.Commands) > 0 && f.onApplied != nil {
		f.onApplied()
	}
	f.wake()
	return l.Index
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
