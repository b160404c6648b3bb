package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/diskfault"
	"github.com/hutchzk/hutch/raftstore"
)

// TestResyncInterruptedByFullDisk: a member restarted on an empty disk
// (a failed disk replaced) resyncs from the others, from their log or,
// once they have compacted it, from a snapshot; its new disk fills
// while it does, so it stops itself; once space is freed and it is
// restarted, it must catch up with the others again.
func TestResyncInterruptedByFullDisk(t *testing.T) {
	for _, snap := range []bool{false, true} {
		name := "from the log"
		if snap {
			name = "from a snapshot"
		}
		t.Run(name, func(t *testing.T) { testResyncInterruptedByFullDisk(t, snap) })
	}
}

func testResyncInterruptedByFullDisk(t *testing.T, snapshot bool) {
	const room = 3 << 20
	if !diskfault.CanMount(t) {
		t.Skip("the disk faults need root to mount disks")
	}
	c := startInprocCluster(t, 500*time.Millisecond, true)
	leader := -1
	waitFor(t, 20*time.Second, "a leader", func() bool { leader = c.Leader(); return leader >= 0 })
	follower := (leader + 1) % c.Size()
	conn, _ := dial(t, c.ClientAddrs()[leader], 10*time.Second)
	defer conn.Close()
	const nodes, size = 40, 256 << 10 // 10 MB to resync
	for i := range nodes {
		create(t, conn, fmt.Sprintf("/big%d", i), make([]byte, size))
	}
	if snapshot {
		// Past the log a snapshot leaves (raftstore's TrailingLogs,
		// 10,240 entries), then a snapshot: the leader's log no longer
		// starts at 1, so a member with none is sent the snapshot.
		// One create at a time: each is an entry of its own.
		for i := 0; lastIndex(c.server(leader)) < 11_000; i++ {
			if i == 20_000 {
				t.Fatalf("20,000 creates left node %d's log at %d entries", leader+1, lastIndex(c.server(leader)))
			}
			create(t, conn, fmt.Sprintf("/small-%d", i), nil)
		}
		waitFor(t, 20*time.Second, "a leader", func() bool { leader = c.Leader(); return leader >= 0 })
		if err := c.server(leader).repl.(*raftstore.Node).Store().Snapshot(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Kill(follower); err != nil {
		t.Fatal(err)
	}
	if err := c.Disks.Restore(follower, true, c.Leader); err != nil {
		t.Fatal(err)
	}
	// The new disk has room for the member's first writes (its term,
	// its vote, the first appends) but not for all it is sent.
	filler := filepath.Join(c.Disks[follower].Dir, "filler")
	var st syscall.Statfs_t
	if err := syscall.Statfs(c.Disks[follower].Dir, &st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filler, make([]byte, int64(st.Bavail)*st.Bsize-room), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(follower); err != nil {
		t.Fatal(err)
	}
	// Writes go on, so the member needs blocks whatever it had taken.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; !c.Halted(follower); i++ {
		if time.Now().After(deadline) {
			t.Fatalf("node %d did not stop itself on a full disk within 30s", follower+1)
		}
		// A write may fail while the members elect: only the halt counts.
		_, _ = conn.Set(fmt.Sprintf("/big%d", i%nodes), make([]byte, size), -1)
	}
	t.Logf("node %d stopped itself: %v", follower+1, c.server(follower).HaltError())
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := c.Recover(follower, false); err != nil {
		t.Fatal(err)
	}
	var ds []string
	waitFor(t, 30*time.Second, "every member's digest equal", func() bool {
		var err error
		ds, err = c.Digests()
		return err == nil && !slices.ContainsFunc(ds, func(d string) bool { return d != ds[0] })
	})
	t.Logf("digests: %v", ds)
}

// create creates path, trying again after a lost answer (on a loaded
// machine an election may drop the connection), and finding it there
// after one is success.
func create(tb testing.TB, conn *zk.Conn, path string, data []byte) {
	tb.Helper()
	var err error
	for try := 0; try < 50; try++ {
		_, err = conn.Create(path, data, 0, zk.WorldACL(zk.PermAll))
		if err == nil || (try > 0 && errors.Is(err, zk.ErrNodeExists)) {
			return
		}
		time.Sleep(100 * time.Millisecond) // an election takes a second or so
	}
	tb.Fatalf("create %s: %v", path, err)
}

// lastIndex is the last index in s's Raft log.
func lastIndex(s *Server) uint64 {
	n, _ := strconv.ParseUint(s.Replication().Raft["last_log_index"], 10, 64)
	return n
}
