package raftstore

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/hutchzk/hutch/seglog"
)

// DataDirLogStore returns the kind of log store a data directory holds,
// without opening it. A directory that does not exist is an error.
func DataDirLogStore(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, logFormatFile))
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "raft.db")); err == nil {
		return LogStoreBolt, nil
	}
	if _, err := os.Stat(dir); err != nil {
		return "", err
	}
	return "", fmt.Errorf("raftstore: %s holds no Raft log", dir)
}

// Keys hashicorp/raft keeps in the stable store: the term and the vote.
var stableNumbers = []string{"CurrentTerm", "LastVoteTerm"}

const keyLastVoteCand = "LastVoteCand"

// storeFiles are the names, in a data directory, each kind keeps its log
// and stable store under.
var storeFiles = map[string][]string{
	LogStoreSeglog: {seglogDir},
	LogStoreBolt:   {"raft.db"},
	LogStoreWAL:    {"wal"},
}

// ConvertLogStore moves the Raft log, term and vote of a stopped member's
// data directory into a store of another kind (LogStores), so that a
// directory made with one can run on another: hutch log-store convert.
// The snapshots stay as they are. The new store is written beside the old
// one and read back entry by entry before the directory's log-format file
// is replaced, in one rename, to name it; the old store's files are then
// moved into a directory named in the returned path, for the operator to
// delete once the member runs. A crash at any point leaves a directory
// that opens with one store or the other, whole. It refuses a directory a
// running member holds (the stores lock their files).
func ConvertLogStore(dir, to string, log *slog.Logger) (old string, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !slices.Contains(LogStores, to) {
		return "", fmt.Errorf("raftstore: unknown log store %q (one of %s)", to, strings.Join(LogStores, ", "))
	}
	if _, err := os.Stat(dir); err != nil {
		return "", err
	}
	from, err := logFormat(dir, "")
	if err != nil {
		return "", err
	}
	if from == to {
		return "", fmt.Errorf("raftstore: %s holds a %s log already", dir, to)
	}
	src, err := openLogStore(dir, from, log)
	if err != nil {
		return "", fmt.Errorf("raftstore: opening the %s log of %s (is the member stopped?): %w", from, dir, err)
	}
	defer func() {
		if src != nil {
			src.close()
		}
	}()

	tmp := filepath.Join(dir, "convert-"+to+".tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	n, err := copyStore(src, tmp, to, log)
	if err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := src.close(); err != nil {
		return "", err
	}
	src = nil

	// The new store's files into the data directory, beside the old
	// one's (the kinds use different names), then the switch.
	for _, name := range storeFiles[to] {
		if err := os.Rename(filepath.Join(tmp, name), filepath.Join(dir, name)); err != nil {
			return "", err
		}
	}
	if err := seglog.SyncDir(dir); err != nil {
		return "", err
	}
	if err := seglog.WriteFileAtomic(filepath.Join(dir, logFormatFile), []byte(to+"\n")); err != nil {
		return "", err
	}
	os.RemoveAll(tmp)

	old = filepath.Join(dir, fmt.Sprintf("old-%s-log-%s", from, time.Now().UTC().Format("20060102T150405Z")))
	if err := os.Mkdir(old, 0o755); err != nil {
		return "", err
	}
	for _, name := range storeFiles[from] {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(old, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	}
	log.Info("log store converted", "dir", dir, "from", from, "to", to, "entries", n, "old", old)
	return old, seglog.SyncDir(dir)
}

// copyStore writes src's entries and stable keys into a new store of kind
// to in dir, and reads every entry back against src's.
func copyStore(src *logStore, dir, to string, log *slog.Logger) (int, error) {
	dst, err := openLogStore(dir, to, log)
	if err != nil {
		return 0, err
	}
	defer dst.close()
	first, err := src.logs.FirstIndex()
	if err != nil {
		return 0, err
	}
	last, err := src.logs.LastIndex()
	if err != nil {
		return 0, err
	}
	const batch = 256
	n := 0
	for lo := first; lo != 0 && lo <= last; lo += batch {
		var entries []*raft.Log
		for i := lo; i <= last && i < lo+batch; i++ {
			l, err := readLog(src.logs, i)
			if err != nil {
				return n, fmt.Errorf("raftstore: reading entry %d of %d-%d: %w", i, first, last, err)
			}
			entries = append(entries, l)
		}
		if err := dst.logs.StoreLogs(entries); err != nil {
			return n, err
		}
		n += len(entries)
	}
	for i := first; i != 0 && i <= last; i++ {
		a, err := readLog(src.logs, i)
		if err != nil {
			return n, err
		}
		b, err := readLog(dst.logs, i)
		if err != nil {
			return n, fmt.Errorf("raftstore: reading back entry %d: %w", i, err)
		}
		if a.Index != b.Index || a.Term != b.Term || a.Type != b.Type || !bytes.Equal(a.Data, b.Data) || !bytes.Equal(a.Extensions, b.Extensions) {
			return n, fmt.Errorf("raftstore: entry %d reads back differently from the new store", i)
		}
	}
	// Numbers through GetUint64 and SetUint64: the stores encode them
	// differently (raft-wal little-endian, the others big-endian).
	for _, k := range stableNumbers {
		v, err := src.stable.GetUint64([]byte(k))
		if err != nil || v == 0 {
			continue // never set (raft-wal answers 0 without an error)
		}
		if err := dst.stable.SetUint64([]byte(k), v); err != nil {
			return n, err
		}
	}
	if v, err := src.stable.Get([]byte(keyLastVoteCand)); err == nil && len(v) > 0 {
		if err := dst.stable.Set([]byte(keyLastVoteCand), v); err != nil {
			return n, err
		}
	}
	return n, nil
}
