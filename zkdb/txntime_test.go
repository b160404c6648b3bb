package zkdb

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/clock"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// createAt is the server's own create of path, for stamping tests.
func createAt(path string) Command {
	return Command{Kind: KindTxn, Txn: tree.Txn{Op: wire.OpCreate, Req: &wire.CreateRequest{Path: path, ACL: open}}}
}

// TestTransactionTime: a batch stamped by a clock a little behind the
// transaction time (a new leader's, an NTP correction) is held at it, so
// times do not go back; a clock behind by more than MaxTimeHold is
// followed back, so a leader's clock that jumped ahead and was put right
// does not freeze ctime and mtime until real time catches up.
func TestTransactionTime(t *testing.T) {
	const T = int64(1_800_000_000_000) // ms
	hour := time.Hour.Milliseconds()
	hold := MaxTimeHold.Milliseconds()
	tests := []struct {
		name         string
		stamps, want []int64
		warnings     int
	}{
		{"forward", []int64{T, T + 1, T + 5000}, []int64{T, T + 1, T + 5000}, 0},
		{"a small step back is held", []int64{T, T - 3000, T - 2000, T + 1}, []int64{T, T, T, T + 1}, 0},
		{"a new leader a little behind", []int64{T, T - 500, T + 100}, []int64{T, T, T + 100}, 0},
		{"back by exactly the bound is held", []int64{T, T - hold}, []int64{T, T}, 0},
		{"back by a ms more than the bound", []int64{T, T - hold - 1}, []int64{T, T - hold - 1}, 1},
		{"an hour ahead, then put right", []int64{T, T + hour, T + hour + 1000, T + 2000, T + 3000},
			[]int64{T, T + hour, T + hour + 1000, T + 2000, T + 3000}, 1},
		{"a few seconds ahead, then put right", []int64{T, T + 5000, T + 10, T + 5001},
			[]int64{T, T + 5000, T + 5000, T + 5001}, 0},
		{"an hour behind, then put right", []int64{T, T - hour, T - hour + 1000, T + 2000},
			[]int64{T, T - hour, T - hour + 1000, T + 2000}, 1},
		{"from zero", []int64{5000, 3000, 5001, 0}, []int64{5000, 5000, 5001, 5001}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			rec := &recorder{}
			db := New(Config{TickTime: tick, Clock: clock.NewFake(t0), Sink: rec,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			a := &applier{db: db}
			for i, stamp := range tc.stamps {
				a.apply(stamp, createAt(fmt.Sprintf("/n%d", i)))
				if got := rec.last().Command.Txn.Time; got != tc.want[i] {
					t.Fatalf("batch %d stamped %d: txn time %d, want %d", i, stamp, got, tc.want[i])
				}
				var st wire.Stat
				db.Read(func(v *View) { st, _ = v.Tree.Stat(fmt.Sprintf("/n%d", i)) })
				if st.Ctime != tc.want[i] || st.Mtime != tc.want[i] {
					t.Fatalf("batch %d: ctime %d mtime %d, want %d", i, st.Ctime, st.Mtime, tc.want[i])
				}
			}
			if got := db.LastTime(); got != tc.want[len(tc.want)-1] {
				t.Fatalf("LastTime %d, want %d", got, tc.want[len(tc.want)-1])
			}
			if got := strings.Count(logs.String(), "level=WARN"); got != tc.warnings {
				t.Fatalf("%d warnings, want %d:\n%s", got, tc.warnings, logs.String())
			}
			if tc.warnings > 0 && (!strings.Contains(logs.String(), "txnTime=") || !strings.Contains(logs.String(), "leaderTime=")) {
				t.Fatalf("the warning does not give both times:\n%s", logs.String())
			}
		})
	}
}

// TestTTLAfterClockPutRight: a TTL node created after the leader's clock
// came back from an hour ahead expires by its TTL. Had the transaction
// time stayed at the jumped time, the node's mtime would be an hour ahead
// and the cleanup's delete refused until real time caught up.
func TestTTLAfterClockPutRight(t *testing.T) {
	const T = int64(1_800_000_000_000)
	db, rec, _ := newDB(t)
	a := &applier{db: db}
	a.apply(T, createAt("/before"))
	a.apply(T+time.Hour.Milliseconds(), createAt("/jumped"))
	a.apply(T+2000, Command{Kind: KindTxn, Txn: tree.Txn{Op: wire.OpCreateTTL,
		Req: &wire.CreateTTLRequest{Path: "/ttl", ACL: open, Flags: wire.ModePersistentWithTTL, TTL: 1000}}})
	if err := rec.last().Result.Err; err != nil {
		t.Fatal(err)
	}
	if got := db.ExpiryCandidates(T + 3001); len(got) != 1 || got[0] != "/ttl" {
		t.Fatalf("candidates at T+3001: %v, want [/ttl]", got)
	}
	a.apply(T+3001, Command{Kind: KindTxn, Txn: tree.Txn{Op: wire.OpDeleteContainer, Req: &wire.PathRequest{Path: "/ttl"}}})
	if err := rec.last().Result.Err; err != nil {
		t.Fatalf("delete of the expired TTL node: %v", err)
	}
}

// TestTransactionTimeIsDeterministic: replicas whose own clocks disagree
// by an hour, one of them restored from a snapshot half way, apply the
// same batches (jumps ahead and back, small steps back) and agree on
// every stat (the digest covers ctime and mtime): the rule reads the
// batches and the replicated state only.
func TestTransactionTimeIsDeterministic(t *testing.T) {
	const T = int64(1_800_000_000_000)
	hour := time.Hour.Milliseconds()
	stamps := []int64{T, T + 100, T - 50, T + hour, T + hour + 10, T + 200, T + 150, T - hour, T + 300,
		T + 300 - MaxTimeHold.Milliseconds(), T + 300 - MaxTimeHold.Milliseconds() - 1, T + 400}
	replica := func(offset time.Duration) *DB {
		return New(Config{TickTime: tick, Clock: clock.NewFake(t0.Add(offset)), Sink: &recorder{}, Logger: quiet})
	}
	dbs := []*DB{replica(0), replica(time.Hour), replica(-time.Hour)}
	var restored *DB
	for i, stamp := range stamps {
		b := Batch{Time: stamp, Commands: []Command{createAt(fmt.Sprintf("/n%d", i))}}
		for _, db := range dbs {
			db.Apply(b, uint64(i+1))
		}
		if restored != nil {
			restored.Apply(b, uint64(i+1))
		}
		if i == len(stamps)/2 {
			snap, err := dbs[0].Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			restored = replica(2 * time.Hour)
			if err := restored.Restore(bytes.NewReader(snap), false); err != nil {
				t.Fatal(err)
			}
		}
	}
	want, wantZxid := dbs[0].Digest()
	for i, db := range append(dbs, restored) {
		if d, z := db.Digest(); d != want || z != wantZxid || db.LastTime() != dbs[0].LastTime() {
			t.Fatalf("replica %d: %x@%d time %d, want %x@%d time %d", i, d, z, db.LastTime(), want, wantZxid, dbs[0].LastTime())
		}
	}
}
