package zkimport

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/zkdb"
)

// Output is the hutch data directory an import writes.
type Output struct {
	// Dir is the data directory to create. It must not exist, or be empty.
	Dir string
	// Members is the ensemble the directory is for, by node id, as
	// --peers gives it; nil for a single node. Seed every member's
	// directory from the same import.
	Members map[uint64]string
	// LogStore is the Raft log store kind ("" for the default).
	LogStore string
}

// Options configures an import.
type Options struct {
	Source Source
	Output Output
	Logger *slog.Logger
}

// Import reads src and writes out: the whole import.
func Import(opts Options) (*Report, error) {
	if err := checkOutput(opts.Output.Dir); err != nil {
		return nil, err
	}
	st, err := load(opts.Source, opts.Logger)
	if err != nil {
		return nil, err
	}
	if err := st.write(opts.Output); err != nil {
		return nil, err
	}
	return &st.report, nil
}

// checkOutput refuses an output directory that holds anything.
func checkOutput(dir string) error {
	if dir == "" {
		return errors.New("no output directory")
	}
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case len(ents) > 0:
		return fmt.Errorf("%s already holds files: an import writes a new data directory", dir)
	}
	return nil
}

// write checks the tree and writes it as a hutch data directory: into a
// directory beside out.Dir, synced, then renamed into place, so that
// out.Dir is either absent or complete.
func (st *state) write(out Output) error {
	t, err := st.finish()
	if err != nil {
		return err
	}
	return writeTree(t, st.lastTime(t), out)
}

// writeTree writes t as the state of a new data directory out.Dir.
func writeTree(t *tree.Tree, lastTime int64, out Output) error {
	if err := checkOutput(out.Dir); err != nil {
		return err
	}
	parent := filepath.Dir(filepath.Clean(out.Dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(out.Dir)+".importing-")
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp's 0700 is for its name, not the data
		os.RemoveAll(tmp)
		return err
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	db := zkdb.New(zkdb.Config{TickTime: time.Second, Sink: zkdb.Discard{}})
	db.Load(t, raftstore.SeedIndex, lastTime)
	if err := raftstore.Seed(tmp, out.LogStore, out.Members, db.WriteSnapshot); err != nil {
		return err
	}
	if err := syncTree(tmp); err != nil {
		return err
	}
	if err := os.Remove(out.Dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err // not empty after all: leave it alone
	}
	if err := os.Rename(tmp, out.Dir); err != nil {
		return err
	}
	done = true
	return syncDir(parent)
}

// syncTree fsyncs every file and directory under dir.
func syncTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return syncDir(p)
	})
}

func syncDir(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}
