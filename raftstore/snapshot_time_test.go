package raftstore

import (
	"strconv"
	"testing"
	"time"
)

// TestStatsLogAndSnapshotTime: Stats carries the log's first index and
// when the newest snapshot was written, also across a restart, for the
// metrics' log size and snapshot age.
func TestStatsLogAndSnapshotTime(t *testing.T) {
	cfg := testConfig(1)
	cfg.DataDir = t.TempDir()
	n := openNode(t, cfg, newTestApp())
	waitLeader(t, 5*time.Second, n)
	propose(t, n, createCommand(1, "/a"), createCommand(1, "/b"))

	number := func(n *node, key string) int64 {
		t.Helper()
		v, err := strconv.ParseInt(n.Stats()[key], 10, 64)
		if err != nil {
			t.Fatalf("stats %s = %q: %v", key, n.Stats()[key], err)
		}
		return v
	}
	if first := number(n, "first_log_index"); first != 1 {
		t.Errorf("first_log_index = %d, want 1", first)
	}
	if ms := number(n, "last_snapshot_unix_ms"); ms != 0 {
		t.Errorf("last_snapshot_unix_ms = %d before any snapshot", ms)
	}
	before := time.Now().UnixMilli()
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixMilli()
	taken := number(n, "last_snapshot_unix_ms")
	if taken < before || taken > after {
		t.Errorf("last_snapshot_unix_ms = %d, snapshot taken in [%d, %d]", taken, before, after)
	}
	n.Close()

	reopened := openNode(t, cfg, newTestApp())
	if got := number(reopened, "last_snapshot_unix_ms"); got < before-1000 || got > after+1000 {
		t.Errorf("after a restart last_snapshot_unix_ms = %d, snapshot taken in [%d, %d]", got, before, after)
	}
}
