package raftstore

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// writeBoltLog fills dir/raft.db as a node's log store does: entries
// appended, the head compacted away, term and vote set.
func writeBoltLog(t *testing.T, dir string, syncFreelist bool) string {
	t.Helper()
	path := filepath.Join(dir, "raft.db")
	b, err := raftboltdb.New(raftboltdb.Options{Path: path,
		BoltOptions: &bbolt.Options{NoFreelistSync: !syncFreelist, FreelistType: bbolt.FreelistMapType}})
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("hutch"), 300)
	var batch []*raft.Log
	for i := uint64(1); i <= 3000; i++ {
		batch = append(batch, &raft.Log{Index: i, Term: 1 + i/1000, Type: raft.LogCommand, Data: data})
		if len(batch) == 50 {
			if err := b.StoreLogs(batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := b.DeleteRange(1, 1200); err != nil {
		t.Fatal(err)
	}
	if err := b.SetUint64([]byte("CurrentTerm"), 4); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBoltCheckAcceptsHealthyFiles(t *testing.T) {
	for _, synced := range []bool{false, true} {
		path := writeBoltLog(t, t.TempDir(), synced)
		if err := checkBoltFile(path); err != nil {
			t.Errorf("free list synced %v: %v", synced, err)
		}
	}
	if err := checkBoltFile(filepath.Join(t.TempDir(), "raft.db")); err != nil {
		t.Errorf("a missing file (a new data directory): %v", err)
	}
	// A directory a node used, with snapshots and compaction.
	dir := t.TempDir()
	ls, err := openLogStore(dir, LogStoreBolt, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ls.close()
	if err := checkBoltFile(filepath.Join(dir, "raft.db")); err != nil {
		t.Errorf("a new store's file: %v", err)
	}
}

// damage is one way a raft.db is broken; it returns what the error
// must say.
type damage struct {
	name string
	do   func(t *testing.T, path string, size int64) string
}

var damages = []damage{
	{"truncated to a third", func(t *testing.T, path string, size int64) string {
		truncate(t, path, size/3)
		return "truncated"
	}},
	{"truncated mid-page", func(t *testing.T, path string, size int64) string {
		truncate(t, path, size-size/4-1000)
		return "truncated"
	}},
	{"truncated to nothing", func(t *testing.T, path string, size int64) string {
		truncate(t, path, 0)
		return "shorter than its two header pages"
	}},
	{"a page zeroed", func(t *testing.T, path string, size int64) string {
		// The newest meta's root page is reachable whatever happened.
		c := &boltChecker{}
		f, _ := os.Open(path)
		c.f = f
		m, err := c.readMeta(0, 0)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		overwrite(t, path, int64(m.root)*int64(m.pageSize), make([]byte, m.pageSize))
		return "offset"
	}},
	{"both headers broken", func(t *testing.T, path string, size int64) string {
		overwrite(t, path, 16, []byte{0xde, 0xad})
		overwrite(t, path, 4096+16, []byte{0xbe, 0xef})
		return "neither header page is valid"
	}},
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func overwrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// openDamagedEnv names the data directory a child test process opens
// (TestDamagedBoltRefusedClearly).
const openDamagedEnv = "HUTCH_TEST_OPEN_DAMAGED"

// TestDamagedBoltRefusedClearly: a raft.db that is truncated or has a
// broken page is refused at open with an error naming the file and where
// it is broken, never a crash. The open runs in a child process, since
// bbolt (without the check) takes the process down with SIGBUS or a
// panic in a goroutine of its own (issue 26: SIGBUS).
func TestDamagedBoltRefusedClearly(t *testing.T) {
	if dir := os.Getenv(openDamagedEnv); dir != "" {
		ls, err := openLogStore(dir, "", slog.New(slog.DiscardHandler))
		if err == nil {
			// Read the whole log, as Raft does on start and on its way.
			first, _ := ls.logs.FirstIndex()
			last, _ := ls.logs.LastIndex()
			for i := first; i <= last && i != 0; i++ {
				var l raft.Log
				if err = ls.logs.GetLog(i, &l); err != nil {
					break
				}
			}
			ls.close()
		}
		os.Stdout.WriteString("open: " + errString(err) + "\n")
		return
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeBoltLog(t, dir, false)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			want := d.do(t, path, fi.Size())
			cmd := exec.Command(os.Args[0], "-test.run=^TestDamagedBoltRefusedClearly$")
			cmd.Env = append(os.Environ(), openDamagedEnv+"="+dir)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				t.Fatalf("opening the damaged file crashed the process (%v):\n%s", err, firstLines(string(out), 12))
			}
			if err != nil {
				t.Fatal(err)
			}
			line := firstLine(string(out), "open: ")
			if !strings.Contains(line, path) || !strings.Contains(line, want) || !strings.Contains(line, "is damaged") {
				t.Fatalf("open said %q; want an error naming %s and saying %q", line, path, want)
			}
			t.Log(line)
		})
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func firstLine(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
