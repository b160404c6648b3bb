package raftstore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// checkedSnapshots wraps the snapshot store so that a damaged snapshot is
// reported by file and offset, and so that a node whose log cannot follow
// on from any snapshot it holds refuses to start instead of crashing.
//
// Raft restores the newest snapshot that opens (FileSnapshotStore checks
// each against the CRC-64 in its meta.json), falling back to older ones,
// as ZooKeeper does with snapshots that fail their checksum. That is safe
// only while the log still holds every entry after the snapshot restored:
// otherwise hashicorp/raft (v1.7.3) panics when it first reads the
// missing entry. So, while starting, List offers only the snapshots the
// log follows on from.
type checkedSnapshots struct {
	raft.SnapshotStore
	dir string // the file store's directory; "" in memory
	log *slog.Logger
	// firstLog is the log's first index when the node started (0: the log
	// is empty); starting is cleared once Raft is up.
	firstLog uint64
	starting atomic.Bool

	mu       sync.Mutex // guards failures and last
	failures []string   // each snapshot that failed to open or restore, and why
	// last is the snapshot opened most recently: the one being restored,
	// since Raft restores one at a time, straight after opening it.
	last *snapshotReader
}

func newCheckedSnapshots(store raft.SnapshotStore, dir string, firstLog uint64, log *slog.Logger) *checkedSnapshots {
	c := &checkedSnapshots{SnapshotStore: store, dir: dir, firstLog: firstLog, log: log}
	c.starting.Store(true)
	return c
}

// List lists the snapshots, newest first; while starting, only those the
// log follows on from.
func (c *checkedSnapshots) List() ([]*raft.SnapshotMeta, error) {
	metas, err := c.SnapshotStore.List()
	if err != nil || !c.starting.Load() || c.firstLog <= 1 {
		return metas, err
	}
	usable := metas[:0:0]
	for _, m := range metas {
		if m.Index+1 >= c.firstLog {
			usable = append(usable, m)
		}
	}
	return usable, nil
}

// usable checks, before Raft starts, that the log follows on from some
// snapshot: a log whose first entry is not 1 must start at most one past
// a snapshot the store lists.
func (c *checkedSnapshots) usable() error {
	if c.firstLog <= 1 {
		return nil
	}
	metas, err := c.List()
	if err != nil {
		return err
	}
	if len(metas) == 0 {
		where := "no snapshot"
		if c.dir != "" {
			where = "no readable snapshot in " + filepath.Join(c.dir, "snapshots")
		}
		return fmt.Errorf("raftstore: the log starts at entry %d, and %s holds the entries before it: "+
			"this member cannot start from its data directory; move it aside and start it empty to resync from the others "+
			"(docs/operations.md, \"A damaged or corrupt log\")", c.firstLog, where)
	}
	return nil
}

// started ends the start-up filtering.
func (c *checkedSnapshots) started() { c.starting.Store(false) }

// Open opens a snapshot; a failure names the file and, when its size
// tells, where it ends.
func (c *checkedSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := c.SnapshotStore.Open(id)
	if err != nil {
		err = c.failed(id, c.describe(id, meta, err))
		return nil, nil, err
	}
	r := &snapshotReader{ReadCloser: rc, name: c.statePath(id), store: c}
	c.mu.Lock()
	c.last = r
	c.mu.Unlock()
	return meta, r, nil
}

// restoreFailed describes a restore, of the snapshot opened last, that
// failed with err.
func (c *checkedSnapshots) restoreFailed(err error) error {
	c.mu.Lock()
	r := c.last
	c.mu.Unlock()
	if r == nil {
		return err
	}
	return c.failed(r.name, fmt.Errorf("%s does not decode (read up to byte %d): %w", r.name, r.n.Load(), err))
}

// failed records and logs a snapshot that could not be read.
func (c *checkedSnapshots) failed(id string, err error) error {
	c.mu.Lock()
	c.failures = append(c.failures, err.Error())
	c.mu.Unlock()
	c.log.Error("raftstore: snapshot damaged: Raft tries the one before it, if any", "snapshot", id, "err", err)
	return err
}

// failuresText lists the snapshots that failed, for a start that fails.
func (c *checkedSnapshots) failuresText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.failures, "; ")
}

func (c *checkedSnapshots) statePath(id string) string {
	if c.dir == "" {
		return "snapshot " + id
	}
	return filepath.Join(c.dir, "snapshots", id, "state.bin")
}

// describe says what is wrong with snapshot id, which failed to open.
func (c *checkedSnapshots) describe(id string, meta *raft.SnapshotMeta, err error) error {
	path := c.statePath(id)
	if c.dir == "" {
		return fmt.Errorf("%s: %w", path, err)
	}
	fi, serr := os.Stat(path)
	if serr != nil {
		return fmt.Errorf("%s: %w", path, errors.Join(err, serr))
	}
	want := meta
	if want == nil {
		// The store returns no meta with an error: read the size it was
		// written with from its listing.
		metas, _ := c.SnapshotStore.List()
		for _, m := range metas {
			if m.ID == id {
				want = m
			}
		}
	}
	switch {
	case want != nil && fi.Size() < want.Size:
		return fmt.Errorf("%s is truncated: it ends at byte %d of the %d written (%w)", path, fi.Size(), want.Size, err)
	case want != nil && fi.Size() > want.Size:
		return fmt.Errorf("%s has %d bytes past the %d written (%w)", path, fi.Size()-want.Size, want.Size, err)
	}
	return fmt.Errorf("%s (%d bytes) fails its checksum (%w): a byte of it changed after it was written", path, fi.Size(), err)
}

// snapshotReader counts what the state has read of a snapshot, so that a
// snapshot that does not decode is reported with where.
type snapshotReader struct {
	io.ReadCloser
	name  string
	store *checkedSnapshots
	n     atomic.Int64
}

func (r *snapshotReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}
