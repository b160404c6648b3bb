package zkimport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hutchzk/hutch/zkformat"
)

// FollowOptions tunes Follow.
type FollowOptions struct {
	// Poll is how often the log is read for new entries; default 100ms.
	Poll time.Duration
	// Checkpoint is how often the output is rewritten with what has been
	// replayed so far, so that it is never far behind if the follow
	// stops abnormally; 0 writes it only at the end.
	Checkpoint time.Duration
	// Ready, when set, is called once the initial import is done and the
	// follow has begun.
	Ready func(*Report)
}

// Follow imports a running ZooKeeper's data, then keeps replaying the new
// entries of its log as they are written, until ctx is done: then it
// reads the log to its end one last time (stop ZooKeeper first, so that
// this final catch-up sees every transaction it acknowledged) and writes
// the output. Live cut-over: follow, stop ZooKeeper, stop the follow,
// start hutch on ZooKeeper's client port; clients re-attach their
// sessions.
func Follow(ctx context.Context, opts Options, fo FollowOptions) (*Report, error) {
	if err := checkOutput(opts.Output.Dir); err != nil {
		return nil, err
	}
	if fo.Poll <= 0 {
		fo.Poll = 100 * time.Millisecond
	}
	st, err := loadLive(opts.Source, opts.Logger)
	if err != nil {
		return nil, err
	}
	if fo.Ready != nil {
		st.report.LastZxid = st.rep.lastZxid
		fo.Ready(&st.report)
	}
	poll := time.NewTicker(fo.Poll)
	defer poll.Stop()
	lastWrite, written := time.Now(), int64(-1)
	for {
		select {
		case <-ctx.Done():
			if err := st.catchUp(false); err != nil {
				return nil, err
			}
			if err := st.replace(opts.Output); err != nil {
				return nil, err
			}
			return &st.report, nil
		case <-poll.C:
		}
		if err := st.catchUp(true); err != nil {
			return nil, err
		}
		if fo.Checkpoint > 0 && time.Since(lastWrite) >= fo.Checkpoint && st.rep.lastZxid != written {
			if err := st.replace(opts.Output); err != nil {
				return nil, err
			}
			lastWrite, written = time.Now(), st.rep.lastZxid
			st.log.Info("checkpoint written", "zxid", fmt.Sprintf("%#x", written), "dir", opts.Output.Dir)
		}
	}
}

// loadLive is load for a log that is being written.
func loadLive(src Source, logger *slog.Logger) (*state, error) { return loadMode(src, logger, true) }

// catchUp replays whatever the logs hold beyond the last entry read.
func (st *state) catchUp(live bool) error {
	_, logDir := st.src.dirs()
	logs, err := zkformat.List(logDir, "log")
	if err != nil {
		return err
	}
	return st.replayLogs(logs, live)
}

// replace writes the state as out.Dir, replacing what a previous
// checkpoint wrote there: the new directory is written aside, the old one
// moved away and the new one into place, so one of them is always whole.
func (st *state) replace(out Output) error {
	t, err := st.finish()
	if err != nil {
		return err
	}
	if err := checkOutput(out.Dir); err == nil {
		return writeTree(t, st.lastTime(t), out)
	}
	staged := out
	staged.Dir = filepath.Join(filepath.Dir(filepath.Clean(out.Dir)), "."+filepath.Base(out.Dir)+".next")
	if err := os.RemoveAll(staged.Dir); err != nil {
		return err
	}
	if err := writeTree(t, st.lastTime(t), staged); err != nil {
		return err
	}
	old := filepath.Join(filepath.Dir(filepath.Clean(out.Dir)), "."+filepath.Base(out.Dir)+".old")
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	if err := os.Rename(out.Dir, old); err != nil {
		return err
	}
	if err := os.Rename(staged.Dir, out.Dir); err != nil {
		return errors.Join(err, os.Rename(old, out.Dir))
	}
	return os.RemoveAll(old)
}
