package raftstore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/hashicorp/raft"
)

// Applier is the state machine, implemented by the server.
type Applier interface {
	// ApplyEntries is called by the FSM in commit order, one batch per log
	// entry. It assigns zxids (entries carry Txn.Zxid 0).
	ApplyEntries(entries []Entry)
	// WriteSnapshot streams a consistent snapshot (tree.WriteSnapshot under
	// the server's read lock).
	WriteSnapshot(w io.Writer) error
	// RestoreSnapshot replaces the state (tree.Restore).
	RestoreSnapshot(r io.Reader) error
}

// snapMagic starts every snapshot this package writes; the Raft index the
// state covers follows it, then the Applier's bytes.
const snapMagic = "hutch-raft-snap-1\n"

// fsm adapts an Applier to raft.FSM and tracks the index of the last log
// entry reflected in the Applier's state.
//
// Snapshots are not copies: Persist streams the live state through
// Applier.WriteSnapshot, which holds the server's read lock for the whole
// write. Raft calls Persist concurrently with later Applies, so the state
// written may be ahead of the index Raft recorded for the snapshot. The
// snapshot therefore carries its own index, taken under mu together with the
// state, and Apply skips entries at or below it: replaying the log after a
// restore cannot apply a transaction twice.
type fsm struct {
	app Applier
	log *slog.Logger
	// onApplied runs after each entry that carried transactions.
	onApplied func()

	// mu orders Apply against Persist so that applied and the state written
	// describe the same point; Persist holds it shared while streaming.
	mu sync.RWMutex

	// wmu guards applied and notify.
	wmu     sync.Mutex
	applied uint64        // index of the last entry in the Applier's state
	notify  chan struct{} // closed when applied advances; nil if nobody waits
}

// Apply decodes one batch and hands it to the Applier. It returns the log
// index, or an error for an entry that does not decode (skipped on every
// node alike).
func (f *fsm) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l.Index <= f.appliedIndex() {
		return l.Index // already in a restored snapshot
	}
	var res any = l.Index
	if entries, err := DecodeBatch(l.Data); err != nil {
		f.log.Error("raftstore: skipping undecodable log entry", "index", l.Index, "err", err)
		res = fmt.Errorf("log index %d: %w", l.Index, err)
	} else if len(entries) > 0 {
		f.app.ApplyEntries(entries)
		if f.onApplied != nil {
			f.onApplied()
		}
	}
	f.advance(l.Index)
	return res
}

func (f *fsm) appliedIndex() uint64 {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	return f.applied
}

// advance records index as applied and wakes waiters.
func (f *fsm) advance(index uint64) {
	f.wmu.Lock()
	f.applied = index
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
	return f.applied, f.notify
}

// Snapshot returns a handle that streams the live state when persisted.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{f: f}, nil
}

// Restore replaces the Applier's state with a snapshot.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 64<<10)
	magic := make([]byte, len(snapMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != snapMagic {
		return errors.New("raftstore: not a hutch snapshot")
	}
	index, err := binary.ReadUvarint(br)
	if err != nil {
		return fmt.Errorf("raftstore: snapshot header: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.app.RestoreSnapshot(br); err != nil {
		return err
	}
	f.advance(index)
	return nil
}

// fsmSnapshot writes the state at Persist time, not at Snapshot time; see fsm.
type fsmSnapshot struct{ f *fsm }

// Persist streams the header and the Applier's snapshot into sink. It holds
// fsm.mu shared and, inside WriteSnapshot, the server's read lock for the
// whole write, so writes pause while a snapshot is written but no second
// copy of the tree is ever made.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	s.f.mu.RLock()
	err := s.persist(sink)
	s.f.mu.RUnlock()
	if err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) persist(w io.Writer) error {
	hdr := append([]byte(snapMagic), make([]byte, 0, binary.MaxVarintLen64)...)
	hdr = binary.AppendUvarint(hdr, s.f.appliedIndex())
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	return s.f.app.WriteSnapshot(w)
}

// Release does nothing: the snapshot holds no resources of its own.
func (s *fsmSnapshot) Release() {}
