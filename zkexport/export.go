package zkexport

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
	"github.com/hutchzk/hutch/zkformat"
)

// WriteSnapshot writes t as a ZooKeeper 3.8 snapshot: sessions with their
// timeouts, every node with its data, ACL and stored Stat, and ZooKeeper's
// digest of the tree at its last zxid, which ZooKeeper checks when it
// loads it. With lastZxid, 3.9's trailer (the last zxid processed, which
// its restore command needs) follows. The tree must not change meanwhile.
func WriteSnapshot(w io.Writer, t *tree.Tree, lastZxid bool) error {
	ids := t.Sessions()
	sessions := make([]zkformat.Session, 0, len(ids))
	for _, id := range ids {
		timeout, _, _ := t.Session(id)
		sessions = append(sessions, zkformat.Session{ID: id, Timeout: timeout})
	}
	// The ACL table comes first, so the tree is walked twice.
	var acls [][]wire.ACL
	seen := map[*wire.ACL]bool{}
	_ = t.Walk("/", func(r *tree.NodeRecord) error {
		if len(r.ACL) == 0 {
			acls = append(acls, r.ACL)
		} else if !seen[&r.ACL[0]] {
			seen[&r.ACL[0]] = true
			acls = append(acls, r.ACL)
		}
		return nil
	})
	sw := zkformat.NewSnapshotWriter(w)
	if err := sw.Begin(sessions, acls); err != nil {
		return err
	}
	if err := t.Walk("/", func(r *tree.NodeRecord) error {
		return sw.Node(r.Path, r.Data, r.ACL, r.Stat)
	}); err != nil {
		return err
	}
	z := t.LastZxid()
	digest := &zkformat.ZxidDigest{Zxid: z, Version: tree.ZKDigestVersion, Digest: t.ZKDigest()}
	if z == 0 {
		digest = &zkformat.ZxidDigest{Version: tree.ZKDigestVersion} // ZooKeeper's "none yet"
	}
	var last *int64
	if lastZxid {
		last = &z
	}
	return sw.End(digest, last)
}

// Options configures an export.
type Options struct {
	// DataDir is a stopped hutch node's data directory.
	DataDir string
	// Out is the ZooKeeper dataDir to create (it must not exist, or be
	// empty): Out/version-2/snapshot.<zxid>, with currentEpoch and
	// acceptedEpoch beside it.
	Out string
}

// Result says what an export wrote.
type Result struct {
	Snapshot string
	LastZxid int64
	Nodes    int
	Sessions int
	ZKDigest int64
}

// Export reads a stopped node's state and writes it as a ZooKeeper dataDir.
// The directory is written aside and renamed into place when complete.
func Export(opts Options) (*Result, error) {
	if ents, err := os.ReadDir(opts.Out); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("%s already holds files: an export writes a new dataDir", opts.Out)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if _, err := os.Stat(opts.DataDir); err != nil {
		return nil, err
	}
	db := zkdb.New(zkdb.Config{TickTime: time.Second, Sink: zkdb.Discard{}})
	if err := raftstore.ReadState(opts.DataDir, db); err != nil {
		return nil, err
	}
	parent := filepath.Dir(filepath.Clean(opts.Out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(opts.Out)+".exporting-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp's 0700 is for its name, not the data
		os.RemoveAll(tmp)
		return nil, err
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	res := &Result{}
	var werr error
	db.Read(func(v *zkdb.View) {
		t := v.Tree
		res.LastZxid, res.Nodes, res.Sessions, res.ZKDigest = t.LastZxid(), t.NodeCount()-1, len(t.Sessions()), t.ZKDigest()
		werr = writeDataDir(tmp, t)
	})
	if werr != nil {
		return nil, werr
	}
	if err := os.Remove(opts.Out); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.Rename(tmp, opts.Out); err != nil {
		return nil, err
	}
	done = true
	res.Snapshot = filepath.Join(opts.Out, zkformat.VersionDir, zkformat.SnapshotName(res.LastZxid))
	return res, syncPath(parent)
}

// writeDataDir lays out dir as ZooKeeper's dataDir holding t.
func writeDataDir(dir string, t *tree.Tree) error {
	v2 := filepath.Join(dir, zkformat.VersionDir)
	if err := os.MkdirAll(v2, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(v2, zkformat.SnapshotName(t.LastZxid())))
	if err != nil {
		return err
	}
	err = WriteSnapshot(f, t, false)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// A quorum member reads the epoch it is in, and the one it accepted,
	// beside its snapshot; both are the epoch of the last zxid.
	epoch := strconv.FormatInt(t.LastZxid()>>32, 10) + "\n"
	for _, name := range []string{"currentEpoch", "acceptedEpoch"} {
		if err := os.WriteFile(filepath.Join(v2, name), []byte(epoch), 0o644); err != nil {
			return err
		}
	}
	if err := syncPath(v2); err != nil {
		return err
	}
	return syncPath(dir)
}

func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}
