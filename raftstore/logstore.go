package raftstore

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"go.etcd.io/bbolt"

	"github.com/hutchzk/hutch/seglog"
)

// Log store kinds: where a node keeps its Raft log, term and vote.
const (
	// LogStoreSeglog is hutch's own segmented log (package seglog): one
	// write and one fdatasync per append batch, a checksum per record.
	LogStoreSeglog = "seglog"
	// LogStoreBolt is raft-boltdb: one B-tree file, two fsyncs per append.
	LogStoreBolt = "bolt"
	// LogStoreWAL is hashicorp/raft-wal v0.4.0: segment files, one fsync
	// per append, but a log whose tail Raft truncated cannot be reopened
	// (hashicorp/raft-wal#31): experimental, for measurement.
	LogStoreWAL = "wal"
)

// LogStores lists the kinds a data directory may hold.
var LogStores = []string{LogStoreSeglog, LogStoreBolt, LogStoreWAL}

// DefaultLogStore is the kind a new data directory gets. It was chosen by
// measurement and by the crash-consistency suite (crash_test.go, which
// every kind runs):
//
//   - bolt (raft-boltdb) passes the suite but pays two fsyncs per append,
//     its pages and then its meta page: a lone replicated write waits for
//     four in series (leader, then follower), the largest stage of its
//     time (docs/performance.md).
//   - wal (raft-wal v0.4.0, the only release the module proxy serves)
//     pays one, but fails the suite's truncate-then-restart case: it seals
//     a segment without its index when Raft truncates the tail, and the
//     member cannot read its log after a restart (hashicorp/raft-wal#31,
//     fixed upstream, unreleased). A follower's tail is truncated whenever
//     a new leader overwrites it, so this is routine, not rare; wrapping
//     it cannot help, as the flaw is in the files it leaves.
//   - pebble (cockroachdb/pebble, synced batches) would pay one fsync,
//     but brings an LSM engine of its own (memtables, compactions, dozens
//     of packages and their start-up cost) to hold what is a sequence of
//     records appended and cut at either end.
//   - seglog, hutch's own, pays one write and one fdatasync per batch,
//     keeps no state beyond its files, and passes the suite. ZooKeeper,
//     etcd and ClickHouse Keeper own their logs for the same reasons.
const DefaultLogStore = LogStoreSeglog

// logFormatFile records, in a data directory, which kind of log store it
// holds, so that a node never reads one kind's files as another's.
const logFormatFile = "log-format"

// logStore is what a node keeps on disk, or in memory without a data
// directory: the log, the stable store (term and vote) and the snapshots.
type logStore struct {
	kind   string
	logs   raft.LogStore
	stable raft.StableStore
	snaps  raft.SnapshotStore
	close  func() error // nil in memory
	// parallel is the seglog log under logs, whose leader appends are
	// synced beside replication (parallel.go); nil for other kinds.
	parallel *parallelLog
	// files are the log and stable store's files, for their size.
	files func() []string
}

// bytes is the size on disk of the log and stable store, 0 in memory.
func (l *logStore) bytes() int64 {
	if l.files == nil {
		return 0
	}
	var n int64
	for _, f := range l.files() {
		if fi, err := os.Stat(f); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// openLogStore opens the store of dir, or a memory one for dir "". want
// is the kind asked for ("" for whatever dir holds, or the default for a
// new one); a directory holding another kind is refused rather than
// started afresh beside the old log, which would forget the term, vote
// and every entry.
func openLogStore(dir, want string, log *slog.Logger) (*logStore, error) {
	if dir == "" {
		mem := raft.NewInmemStore()
		return &logStore{kind: "memory", logs: mem, stable: mem, snaps: raft.NewInmemSnapshotStore()}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kind, err := logFormat(dir, want)
	if err != nil {
		return nil, err
	}
	var st *logStore
	switch kind {
	case LogStoreSeglog:
		st, err = openSeglog(dir, log)
	case LogStoreBolt:
		st, err = openBolt(dir)
	case LogStoreWAL:
		log.Warn("raft-wal v0.4.0 is experimental here: a node whose log tail was truncated may not restart (hashicorp/raft-wal#31); use --log-store bolt for anything you keep", "dir", dir)
		st, err = openWAL(dir, log)
	}
	if err != nil {
		return nil, err
	}
	if st.snaps, err = raft.NewFileSnapshotStoreWithLogger(dir, 2, newHCLogger(log, "raft-snap")); err != nil {
		st.close()
		return nil, err
	}
	return st, nil
}

// logFormat decides the kind of dir's log: what its format file says, or
// for a directory without one, bolt if raft.db is there (directories from
// before the file existed), else want or the default, which it records.
func logFormat(dir, want string) (string, error) {
	if want != "" && !slices.Contains(LogStores, want) {
		return "", fmt.Errorf("raftstore: unknown log store %q (one of %s)", want, strings.Join(LogStores, ", "))
	}
	path := filepath.Join(dir, logFormatFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		have := strings.TrimSpace(string(b))
		if !slices.Contains(LogStores, have) {
			return "", fmt.Errorf("raftstore: %s names an unknown log store %q", path, have)
		}
		if want != "" && want != have {
			return "", fmt.Errorf("raftstore: %s holds a %s log, not %s: use --log-store %s, or a new data directory", dir, have, want, have)
		}
		return have, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", err
	}
	kind := want
	if _, err := os.Stat(filepath.Join(dir, "raft.db")); err == nil {
		if want != "" && want != LogStoreBolt {
			return "", fmt.Errorf("raftstore: %s holds a bolt log, not %s: use --log-store bolt, or a new data directory", dir, want)
		}
		kind = LogStoreBolt
	}
	if kind == "" {
		kind = DefaultLogStore
	}
	if err := seglog.WriteFileAtomic(path, []byte(kind+"\n")); err != nil {
		return "", err
	}
	return kind, nil
}

func openBolt(dir string) (*logStore, error) {
	if err := checkBoltFile(filepath.Join(dir, "raft.db")); err != nil {
		return nil, err
	}
	bolt, err := raftboltdb.New(raftboltdb.Options{
		Path: filepath.Join(dir, "raft.db"),
		// The freelist is rebuilt on open instead of written with every
		// commit: fewer pages per fsynced append.
		// A directory another process holds is refused after a second
		// rather than waited for forever.
		BoltOptions: &bbolt.Options{NoFreelistSync: true, FreelistType: bbolt.FreelistMapType, Timeout: time.Second},
	})
	if err != nil {
		return nil, err
	}
	logs, err := raft.NewLogCache(1024, bolt)
	if err != nil {
		bolt.Close()
		return nil, err
	}
	path := filepath.Join(dir, "raft.db")
	return &logStore{kind: LogStoreBolt, logs: logs, stable: bolt, close: bolt.Close,
		files: func() []string { return []string{path} }}, nil
}

func openWAL(dir string, log *slog.Logger) (*logStore, error) {
	walDir := filepath.Join(dir, "wal")
	if err := os.MkdirAll(walDir, 0o755); err != nil {
		return nil, err
	}
	// The meta store is ours to close: raft-wal's Close leaves it open
	// (v0.4.0), and its file lock would keep a reopened WAL waiting.
	if err := checkBoltFile(filepath.Join(walDir, metadb.FileName)); err != nil {
		return nil, err
	}
	meta := &metadb.BoltMetaDB{}
	w, err := raftwal.Open(walDir, raftwal.WithLogger(newHCLogger(log, "raft-wal")), raftwal.WithMetaStore(meta))
	if err != nil {
		meta.Close()
		return nil, err
	}
	closeAll := func() error { return errors.Join(w.Close(), meta.Close()) }
	logs, err := raft.NewLogCache(1024, w)
	if err != nil {
		closeAll()
		return nil, err
	}
	files := func() []string {
		entries, _ := os.ReadDir(walDir)
		out := make([]string, 0, len(entries))
		for _, e := range entries {
			out = append(out, filepath.Join(walDir, e.Name()))
		}
		return out
	}
	return &logStore{kind: LogStoreWAL, logs: logs, stable: w, close: closeAll, files: files}, nil
}

// seglogDir is where a seglog data directory keeps its segments and
// stable store.
const seglogDir = "log"

func openSeglog(dir string, log *slog.Logger) (*logStore, error) {
	path := filepath.Join(dir, seglogDir)
	l, err := seglog.Open(path, seglog.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	stable, err := seglog.OpenStable(path)
	if err != nil {
		l.Close()
		return nil, err
	}
	parallel := newParallelLog(l)
	logs, err := raft.NewLogCache(1024, parallel)
	if err != nil {
		l.Close()
		return nil, err
	}
	files := func() []string { return append(l.Files(), filepath.Join(path, "stable")) }
	return &logStore{kind: LogStoreSeglog, logs: logs, stable: stable, close: l.Close, files: files, parallel: parallel}, nil
}
