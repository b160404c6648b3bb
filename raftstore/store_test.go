package raftstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

func TestSingleNodeInMemory(t *testing.T) {
	n := openNode(t, testConfig(1), newTestApp())
	waitLeader(t, 5*time.Second, n)

	f := n.Propose([]Entry{createEntry(1, "/a"), createEntry(1, "/b")})
	if err := f.Error(); err != nil {
		t.Fatalf("propose: %v", err)
	}
	if idx, ok := f.Response().(uint64); !ok || idx != f.Index() {
		t.Fatalf("response %v, want index %d", f.Response(), f.Index())
	}
	if !n.app.exists("/a") || !n.app.exists("/b") {
		t.Fatal("proposed nodes missing after commit")
	}
	if _, zxid := n.app.state(); zxid != 2 {
		t.Fatalf("last zxid %d, want 2", zxid)
	}

	// Forward on the leader proposes without waiting; WaitApplied catches up.
	if err := n.Forward([]Entry{createEntry(1, "/c")}); err != nil {
		t.Fatalf("forward: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.WaitApplied(ctx); err != nil {
		t.Fatalf("wait applied: %v", err)
	}
	if !n.app.exists("/c") {
		t.Fatal("forwarded node missing after WaitApplied")
	}
	if id, addr := n.Leader(); id != 1 || addr != n.Addr() {
		t.Fatalf("leader %d %q, want 1 %q", id, addr, n.Addr())
	}
	if st := n.Stats(); st["state"] != "Leader" || st["fsm_applied_index"] == "0" {
		t.Fatalf("stats %v", st)
	}
}

func TestProposeRejectsMismatchedRequest(t *testing.T) {
	n := openNode(t, testConfig(1), newTestApp())
	waitLeader(t, 5*time.Second, n)
	bad := Entry{Txn: tree.Txn{Op: wire.OpDelete, Req: &wire.SetDataRequest{Path: "/x"}}}
	if err := n.Propose([]Entry{bad}).Error(); err == nil {
		t.Fatal("propose of a delete carrying a SetDataRequest succeeded")
	}
	if err := n.Forward([]Entry{bad}); err == nil {
		t.Fatal("forward of a delete carrying a SetDataRequest succeeded")
	}
}

func TestSingleNodeDataDirRestart(t *testing.T) {
	for _, tc := range []struct {
		name       string
		snapshotAt int // batch after which to take a snapshot; -1 for none
	}{
		{"log replay", -1},
		{"snapshot and replay", 60},
		{"snapshot at end", 99},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(1)
			cfg.DataDir = t.TempDir()
			n := openNode(t, cfg, newTestApp())
			waitLeader(t, 5*time.Second, n)
			for i := range 100 {
				if err := n.Propose([]Entry{createEntry(1, fmt.Sprintf("/n%d", i))}).Error(); err != nil {
					t.Fatalf("propose %d: %v", i, err)
				}
				if i == tc.snapshotAt {
					if err := n.raft.Snapshot().Error(); err != nil {
						t.Fatalf("snapshot: %v", err)
					}
				}
			}
			wantDigest, wantZxid := n.app.state()
			if wantZxid != 100 {
				t.Fatalf("last zxid %d, want 100", wantZxid)
			}
			if err := n.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}

			cfg.RaftAddr = n.Addr()
			r := openNode(t, cfg, newTestApp())
			waitLeader(t, 5*time.Second, r)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := r.WaitApplied(ctx); err != nil {
				t.Fatalf("wait applied: %v", err)
			}
			if d, z := r.app.state(); d != wantDigest || z != wantZxid {
				t.Fatalf("after restart digest %x zxid %d, want %x %d", d, z, wantDigest, wantZxid)
			}
			if want := tc.snapshotAt >= 0; (r.app.restoreCount() > 0) != want {
				t.Fatalf("restores %d, snapshot expected %v", r.app.restoreCount(), want)
			}
			// The restarted node keeps accepting writes with the next zxid.
			if err := r.Propose([]Entry{createEntry(1, "/after")}).Error(); err != nil {
				t.Fatalf("propose after restart: %v", err)
			}
			if _, z := r.app.state(); z != wantZxid+1 {
				t.Fatalf("zxid after restart %d, want %d", z, wantZxid+1)
			}
		})
	}
}

// TestSnapshotAheadOfIndex covers a snapshot persisted while later entries
// were applied: restoring it and replaying the log must not apply any
// transaction twice.
func TestSnapshotAheadOfIndex(t *testing.T) {
	app := newTestApp()
	f := &fsm{app: app, log: testLogger()}
	apply := func(i uint64) {
		data, err := EncodeBatch(nil, []Entry{createEntry(1, fmt.Sprintf("/s%d", i))})
		if err != nil {
			t.Fatal(err)
		}
		f.Apply(&raftLog{Index: i, Data: data})
	}
	for i := uint64(1); i <= 5; i++ {
		apply(i)
	}
	snap, _ := f.Snapshot() // Raft records index 5 ...
	apply(6)                // ... but the state persisted below includes 6.
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	d6, z6 := app.state()

	app2 := newTestApp()
	f2 := &fsm{app: app2, log: testLogger()}
	if err := f2.Restore(sink.reader()); err != nil {
		t.Fatal(err)
	}
	// Raft replays from index 6 after a snapshot taken at 5.
	data, _ := EncodeBatch(nil, []Entry{createEntry(1, "/s6")})
	f2.Apply(&raftLog{Index: 6, Data: data})
	if d, z := app2.state(); d != d6 || z != z6 {
		t.Fatalf("after restore+replay digest %x zxid %d, want %x %d", d, z, d6, z6)
	}
}
