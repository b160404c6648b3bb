package zkimport

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkformat"
)

// Source is where ZooKeeper keeps its files.
type Source struct {
	// DataDir is zoo.cfg's dataDir: the snapshots, in DataDir/version-2.
	DataDir string
	// LogDir is zoo.cfg's dataLogDir: the transaction logs; DataDir when
	// empty.
	LogDir string
}

// dirs returns the directories holding the snapshots and the logs: the
// version-2 subdirectory when there is one, as ZooKeeper lays them out,
// else the directory itself.
func (s Source) dirs() (snaps, logs string) {
	sub := func(d string) string {
		if fi, err := os.Stat(filepath.Join(d, zkformat.VersionDir)); err == nil && fi.IsDir() {
			return filepath.Join(d, zkformat.VersionDir)
		}
		return d
	}
	logDir := s.LogDir
	if logDir == "" {
		logDir = s.DataDir
	}
	return sub(s.DataDir), sub(logDir)
}

// Report says what an import read and built.
type Report struct {
	Snapshot     string // the snapshot loaded ("" if none: logs from the start)
	SnapshotZxid int64
	Logs         []string // the logs replayed from, in order
	Transactions int      // replayed (after the snapshot)
	LastZxid     int64
	Nodes        int // znodes, counting the root once
	Sessions     int
	Ephemerals   int
	// Digests is how many of ZooKeeper's recorded digests the replayed
	// tree was checked against; ZKDigest is its digest at the end.
	Digests  int
	ZKDigest int64
	// Warnings are what ZooKeeper itself would pass over: a snapshot cut
	// short by a crash (an older one is used), a log's last entry cut
	// short (never acknowledged).
	Warnings []string
}

// state is an import in progress: the tree being built and where the
// logs stand.
type state struct {
	src     Source
	log     *slog.Logger
	report  Report
	rep     replayer
	logPath string // the log being read
	logOff  int64  // where its next entry starts
}

// load reads the snapshot and every log after it.
func load(src Source, logger *slog.Logger) (*state, error) { return loadMode(src, logger, false) }

// loadMode is load; live says the newest log is still being written.
func loadMode(src Source, logger *slog.Logger, live bool) (*state, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	st := &state{src: src, log: logger}
	snapDir, logDir := src.dirs()
	snaps, err := zkformat.List(snapDir, "snapshot")
	if err != nil {
		return nil, err
	}
	logs, err := zkformat.List(logDir, "log")
	if err != nil {
		return nil, err
	}
	if len(snaps) == 0 && len(logs) == 0 {
		return nil, fmt.Errorf("%s holds no ZooKeeper snapshot and %s no transaction log", snapDir, logDir)
	}
	if err := st.loadSnapshot(snaps, logs); err != nil {
		return nil, err
	}
	if err := st.replayLogs(logs, live); err != nil {
		return nil, err
	}
	return st, nil
}

// loadSnapshot loads the newest snapshot that reads whole. ZooKeeper falls
// back to an older snapshot when the newest does not read, and so does
// this, saying so, as long as the logs cover what the older one misses
// (replayLogs checks that no transaction is missing).
func (st *state) loadSnapshot(snaps, logs []zkformat.File) error {
	var errs []error
	for i := len(snaps) - 1; i >= 0; i-- {
		s := snaps[i]
		l, tr, err := readSnapshot(s.Path)
		if err == nil {
			st.report.Snapshot, st.report.SnapshotZxid = s.Path, s.Zxid
			st.rep = replayer{l: l, lastZxid: s.Zxid, lastTime: 0}
			if tr.Digest != nil && tr.Digest.Zxid >= s.Zxid {
				st.rep.snapDigest = tr.Digest
				if err := st.rep.checkDigest(s.Zxid, nil); err != nil {
					return fmt.Errorf("%s: %w", s.Path, err)
				}
			}
			for _, e := range errs {
				st.warn(fmt.Sprintf("skipped %v; ZooKeeper would skip it too", e))
			}
			return nil
		}
		errs = append(errs, err)
	}
	if len(snaps) > 0 {
		return fmt.Errorf("no snapshot reads whole: %w", errors.Join(errs...))
	}
	// No snapshot: the logs from the very first transaction, on a fresh
	// tree, as ZooKeeper with zookeeper.snapshot.trust.empty.
	l := tree.NewLoader()
	fresh := tree.New()
	if err := fresh.Walk("/", func(r *tree.NodeRecord) error { return l.Node(r.Path, r.Data, r.ACL, r.Stat) }); err != nil {
		return err
	}
	st.rep = replayer{l: l}
	return nil
}

// readSnapshot loads one snapshot file into a new Loader.
func readSnapshot(path string) (*tree.Loader, zkformat.SnapshotTrailer, error) {
	f, err := zkformat.OpenSnapshot(path)
	if err != nil {
		return nil, zkformat.SnapshotTrailer{}, err
	}
	defer f.Close()
	l := tree.NewLoader()
	tr, err := zkformat.ReadSnapshot(f, snapshotLoader{l})
	if err != nil {
		var fe *zkformat.Error
		if errors.As(err, &fe) && fe.File == "" {
			fe.File = path
		}
		return nil, tr, err
	}
	return l, tr, nil
}

// snapshotLoader hands a snapshot's records to a Loader; a session gets the
// password ZooKeeper derives for it.
type snapshotLoader struct{ l *tree.Loader }

func (s snapshotLoader) Session(id int64, timeout int32) error {
	return s.l.Session(id, timeout, zkformat.SessionPassword(id))
}

func (s snapshotLoader) Node(path string, data []byte, acl []wire.ACL, st tree.StoredStat) error {
	return s.l.Node(path, data, acl, st)
}

func (st *state) warn(msg string) {
	st.report.Warnings = append(st.report.Warnings, msg)
	st.log.Warn(msg)
}

// replayLogs replays every transaction after the state's last zxid, from
// the last log whose first zxid is at or below it (FileTxnLog.getLogFiles)
// on. A log cut short in its last entry ends there (live: the rest is
// still being written, and is read on the next call); transactions must
// follow each other without a gap within an epoch.
func (st *state) replayLogs(logs []zkformat.File, live bool) error {
	start := 0
	for i, f := range logs {
		if f.Zxid <= st.rep.lastZxid {
			start = i
		}
	}
	for i := start; i < len(logs); i++ {
		f := logs[i]
		off := int64(0)
		if f.Path == st.logPath {
			off = st.logOff
		} else if st.logPath != "" && f.Zxid <= zxidOf(st.logPath, logs) {
			continue // read already
		}
		last := i == len(logs)-1
		if err := st.replayLog(f, off, live && last); err != nil {
			return err
		}
	}
	return nil
}

func zxidOf(path string, logs []zkformat.File) int64 {
	for _, f := range logs {
		if f.Path == path {
			return f.Zxid
		}
	}
	return -1
}

// replayLog replays one log from offset off.
func (st *state) replayLog(f zkformat.File, off int64, live bool) error {
	lr, err := zkformat.OpenLogAt(f.Path, off)
	if err != nil {
		return err
	}
	defer lr.Close()
	lr.Live = live
	if st.logPath != f.Path {
		st.report.Logs = append(st.report.Logs, f.Path)
	}
	st.logPath, st.logOff = f.Path, lr.Offset()
	for {
		e, err := lr.Next()
		if err == io.EOF {
			return nil
		}
		if errors.Is(err, zkformat.ErrIncomplete) {
			if !live {
				st.warn(fmt.Sprintf("%v: the log was cut short there (ZooKeeper acknowledged none of it)", named(err, f.Path)))
			}
			return nil
		}
		if err != nil {
			return named(err, f.Path)
		}
		z := e.Header.Zxid
		if z <= st.rep.lastZxid {
			st.logOff = lr.Offset()
			continue // before the snapshot, or a log overlapping the last
		}
		if prev := st.rep.lastZxid; prev != 0 && epoch(z) == epoch(prev) && z != prev+1 {
			missing := fmt.Sprintf("transactions %#x to %#x are", prev+1, z-1)
			if z == prev+2 {
				missing = fmt.Sprintf("transaction %#x is", prev+1)
			}
			return fmt.Errorf("%s: offset %d: transaction %#x follows %#x: %s missing (a log deleted or cut short?)",
				f.Path, e.Offset, z, prev, missing)
		}
		if err := st.rep.apply(e); err != nil {
			return fmt.Errorf("%s: offset %d: zxid %#x: %w", f.Path, e.Offset, z, err)
		}
		st.report.Transactions++
		st.logOff = lr.Offset()
	}
}

func epoch(zxid int64) int64 { return zxid >> 32 }

func named(err error, file string) error {
	var fe *zkformat.Error
	if errors.As(err, &fe) && fe.File == "" {
		fe.File = file
	}
	return err
}

// finish checks the tree and fills the report.
func (st *state) finish() (*tree.Tree, error) {
	if st.rep.mismatch != nil {
		return nil, fmt.Errorf("%s: %w", st.logPath, st.rep.mismatch)
	}
	for _, s := range st.rep.slips {
		st.warn(s)
	}
	st.rep.slips = nil
	if sd := st.rep.snapDigest; sd != nil {
		// As ZooKeeper warns: the logs end before the zxid the snapshot's
		// digest was taken at, so it could not be compared.
		st.warn(fmt.Sprintf("the snapshot's digest, taken at zxid %#x, was not checked: the logs end at %#x", sd.Zxid, st.rep.lastZxid))
		st.rep.snapDigest = nil
	}
	t, err := st.rep.l.Finish(st.rep.lastZxid)
	if err != nil {
		return nil, err
	}
	// ZooKeeper counts every quota's stats afresh when it loads a snapshot
	// (which holds them half way) and then as it applies transactions;
	// the replay keeps no stats, so they are counted once the tree is
	// whole. Stats nodes are outside ZooKeeper's digest.
	t.RecountQuotas()
	r := &st.report
	r.LastZxid, r.Digests, r.ZKDigest = st.rep.lastZxid, st.rep.digests, t.ZKDigest()
	r.Nodes, r.Sessions, r.Ephemerals = t.NodeCount()-1, len(t.Sessions()), t.EphemeralCount()
	return t, nil
}

// lastTime is the transaction clock the imported state carries: the newest
// time ZooKeeper stamped on a transaction, or on a node of the snapshot.
func (st *state) lastTime(t *tree.Tree) int64 {
	last := st.rep.lastTime
	if last == 0 {
		_ = t.Walk("/", func(r *tree.NodeRecord) error {
			last = max(last, r.Stat.Mtime, r.Stat.Ctime)
			return nil
		})
	}
	return last
}
