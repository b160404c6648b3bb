package raftstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// restartEnv carries, to a child test process, the data directory and
// trailing-log count of a node to start (TestDamagedSnapshotReported).
const restartEnv = "HUTCH_TEST_RESTART_DIR"

// writeSnapshots runs a single node in dir that takes a snapshot after
// 40 and after 80 writes, with trailing entries kept behind each, and
// returns the digest and zxid it reached (100 writes).
func writeSnapshots(t *testing.T, dir string, trailing uint64, snapshots int) (uint64, int64) {
	t.Helper()
	cfg := testConfig(1)
	// bolt compacts entry by entry (seglog drops whole segments), so
	// the log head is gone behind a snapshot.
	cfg.DataDir, cfg.TrailingLogs, cfg.LogStore = dir, trailing, LogStoreBolt
	n := openNode(t, cfg, newTestApp())
	waitLeader(t, 5*time.Second, n)
	for i := range 100 {
		propose(t, n, createCommand(1, fmt.Sprintf("/n%d", i)))
		if (i == 39 && snapshots == 2) || i == 79 {
			if err := n.Snapshot(); err != nil {
				t.Fatal(err)
			}
		}
	}
	d, z := n.app.state()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	return d, z
}

// snapshotDirs lists dir's snapshots, newest first.
func snapshotDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(entries) - 1; i >= 0; i-- {
		out = append(out, filepath.Join(dir, "snapshots", entries[i].Name()))
	}
	return out
}

// TestDamagedSnapshotReported: a node whose newest snapshot is damaged
// starts from the one before it when its log follows on from that one,
// and otherwise refuses to start, naming the file and what is wrong with
// it, never crashing. hashicorp/raft falls back to an older snapshot
// whatever the log holds, then panics on the first entry missing.
func TestDamagedSnapshotReported(t *testing.T) {
	if dir := os.Getenv(restartEnv); dir != "" {
		restartChild(dir)
		return
	}
	tests := []struct {
		name      string
		trailing  uint64
		snapshots int
		damage    func(t *testing.T, snap string)
		want      string // in the child's error; "" for a clean start
	}{
		{"newest truncated, log covers the older", 1000, 2, func(t *testing.T, snap string) {
			truncate(t, filepath.Join(snap, "state.bin"), 50)
		}, ""},
		{"newest truncated, log does not cover the older", 5, 2, func(t *testing.T, snap string) {
			truncate(t, filepath.Join(snap, "state.bin"), 50)
		}, "is truncated: it ends at byte 50 of the"},
		{"only snapshot has a changed byte", 5, 1, func(t *testing.T, snap string) {
			overwrite(t, filepath.Join(snap, "state.bin"), 30, []byte{0xff})
		}, "fails its checksum"},
		{"only snapshot's meta lost", 5, 1, func(t *testing.T, snap string) {
			if err := os.Remove(filepath.Join(snap, "meta.json")); err != nil {
				t.Fatal(err)
			}
		}, "the log starts at entry"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			digest, zxid := writeSnapshots(t, dir, tc.trailing, tc.snapshots)
			snaps := snapshotDirs(t, dir)
			tc.damage(t, snaps[0])
			cmd := exec.Command(os.Args[0], "-test.run=^TestDamagedSnapshotReported$")
			cmd.Env = append(os.Environ(), restartEnv+"="+dir)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				t.Fatalf("the restart crashed (%v):\n%s", err, firstLines(string(out), 15))
			}
			if err != nil {
				t.Fatal(err)
			}
			line := firstLine(string(out), "restart: ")
			if tc.want == "" {
				if want := fmt.Sprintf("restart: state %x %d", digest, zxid); line != want {
					t.Fatalf("%s, want %s", line, want)
				}
				return
			}
			if !strings.Contains(line, tc.want) || !strings.Contains(line, dir) {
				t.Fatalf("%s; want an error naming the data directory and saying %q", line, tc.want)
			}
			t.Log(line)
		})
	}
}

// restartChild starts the node of dir and prints the state it reaches,
// or the error that stops it.
func restartChild(dir string) {
	cfg := testConfig(1)
	cfg.DataDir = dir
	app := newTestApp()
	s, err := Open(cfg, app.db)
	if err == nil {
		defer s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = s.WaitApplied(ctx)
	}
	if err != nil {
		fmt.Println("restart: error:", err)
		return
	}
	d, z := app.state()
	fmt.Printf("restart: state %x %d\n", d, z)
}
