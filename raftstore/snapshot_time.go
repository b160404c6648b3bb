package raftstore

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// timedSnapshots wraps a snapshot store to remember when the newest
// snapshot was written, whether this node took it or received it from the
// leader: Raft's statistics tell a snapshot's index but not its age,
// which the metrics report.
type timedSnapshots struct {
	raft.SnapshotStore
	newest atomic.Int64 // unix milliseconds; 0 before any snapshot
}

// newTimedSnapshots wraps store; dir, when set, is the file store's
// directory, whose newest snapshot dates the one found at start.
func newTimedSnapshots(store raft.SnapshotStore, dir string) *timedSnapshots {
	t := &timedSnapshots{SnapshotStore: store}
	if dir == "" {
		return t
	}
	if metas, err := store.List(); err == nil && len(metas) > 0 {
		if fi, err := os.Stat(filepath.Join(dir, "snapshots", metas[0].ID)); err == nil {
			t.newest.Store(fi.ModTime().UnixMilli())
		}
	}
	return t
}

func (t *timedSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := t.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return &timedSink{SnapshotSink: sink, store: t}, nil
}

// timedSink stamps its store when the snapshot it writes is complete.
type timedSink struct {
	raft.SnapshotSink
	store *timedSnapshots
}

func (s *timedSink) Close() error {
	err := s.SnapshotSink.Close()
	if err == nil {
		s.store.newest.Store(time.Now().UnixMilli())
	}
	return err
}
