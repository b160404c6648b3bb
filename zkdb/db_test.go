package zkdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc64"
	"log/slog"
	"testing"
	"time"

	"github.com/hutchzk/hutch/clock"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// recorder is a Sink that keeps everything it is given.
type recorder struct {
	effects  []Effects
	notified []int64 // watchers, in order
	resets   int
}

func (r *recorder) Notify(watcher int64, _ *wire.WatcherEvent, _ *tree.Event) {
	r.notified = append(r.notified, watcher)
}
func (r *recorder) Applied(e *Effects) { r.effects = append(r.effects, *e) }
func (r *recorder) Reset()             { r.resets++ }

func (r *recorder) last() Effects { return r.effects[len(r.effects)-1] }

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

const tick = 100 * time.Millisecond

var quiet = slog.New(slog.DiscardHandler)

func newDB(tb testing.TB) (*DB, *recorder, *clock.Fake) {
	tb.Helper()
	rec := &recorder{}
	fake := clock.NewFake(t0)
	return New(Config{TickTime: tick, Clock: fake, Sink: rec, Logger: quiet}), rec, fake
}

// applier feeds a DB one batch per call, as a log would.
type applier struct {
	db    *DB
	index uint64
}

func (a *applier) apply(ms int64, cmds ...Command) {
	a.index++
	a.db.Apply(Batch{Time: ms, Commands: cmds}, a.index)
}

var open = []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}

func createSession(id, conn int64) Command {
	return Command{Conn: conn, Kind: KindTxn, Txn: tree.Txn{Session: id, Op: wire.OpCreateSession,
		Req: &tree.CreateSession{ID: id, Timeout: 1000, Passwd: bytes.Repeat([]byte{1}, 16)}}}
}

func write(id, conn int64, order uint64, path string) Command {
	return Command{Conn: conn, Order: order, Kind: KindTxn, Txn: tree.Txn{Session: id, Op: wire.OpCreate,
		Req: &wire.CreateRequest{Path: path, ACL: open, Flags: wire.ModeEphemeral}}}
}

func attach(id, conn int64) Command {
	return Command{Conn: conn, Kind: KindAttach, Timeout: 2000, Txn: tree.Txn{Session: id}}
}

func exists(db *DB, path string) bool {
	var err error
	db.Read(func(v *View) { _, err = v.Tree.Exists(path) })
	return err == nil
}

// TestOwnershipAndOrder walks the rules that keep a session's writes in
// the order its client sent them: only the owning connection writes, in
// turn; an attach moves the session and starts the count again; refusals
// take a zxid like ZooKeeper's error txns.
func TestOwnershipAndOrder(t *testing.T) {
	const sid, connA, connB = 0x0100000000000001, 11, 22
	tests := []struct {
		name      string
		cmd       Command
		wantErr   error
		wantZxid  int64
		wantMoved int64
		exists    string
	}{
		{"create session", createSession(sid, connA), nil, 1, 0, ""},
		{"first write", write(sid, connA, 1, "/a1"), nil, 2, 0, "/a1"},
		{"second write", write(sid, connA, 2, "/a2"), nil, 3, 0, "/a2"},
		{"a write after a lost one", write(sid, connA, 4, "/a4"), ErrOutOfOrder, 4, 0, ""},
		{"the turn is still 3", write(sid, connA, 3, "/a3"), nil, 5, 0, "/a3"},
		{"attach moves the session", attach(sid, connB), nil, 0, connA, ""},
		{"the old connection's write", write(sid, connA, 4, "/late"), ErrSessionMoved, 6, 0, ""},
		{"the new connection counts from 1", write(sid, connB, 1, "/b1"), nil, 7, 0, "/b1"},
		{"an unknown session", write(0x0100000000000099, connB, 1, "/x"), tree.ErrSessionExpired, 8, 0, ""},
		{"the server's own write is not checked", Command{Kind: KindTxn, Txn: tree.Txn{Op: wire.OpCreate,
			Req: &wire.CreateRequest{Path: "/server", ACL: open}}}, nil, 9, 0, "/server"},
		{"attach of an unknown session", attach(0x0100000000000099, connB), tree.ErrSessionExpired, 0, 0, ""},
	}
	db, rec, _ := newDB(t)
	a := &applier{db: db}
	for _, tc := range tests {
		a.apply(1000, tc.cmd)
		e := rec.last()
		if !errors.Is(e.Result.Err, tc.wantErr) || (tc.wantErr == nil && e.Result.Err != nil) {
			t.Fatalf("%s: err %v, want %v", tc.name, e.Result.Err, tc.wantErr)
		}
		if e.Command.Txn.Zxid != tc.wantZxid {
			t.Fatalf("%s: zxid %d, want %d", tc.name, e.Command.Txn.Zxid, tc.wantZxid)
		}
		if e.MovedFrom != tc.wantMoved {
			t.Fatalf("%s: moved from %d, want %d", tc.name, e.MovedFrom, tc.wantMoved)
		}
		if tc.exists != "" && !exists(db, tc.exists) {
			t.Fatalf("%s: %s missing", tc.name, tc.exists)
		}
	}
	if exists(db, "/a4") || exists(db, "/late") {
		t.Fatal("a refused write changed the tree")
	}
	if got := db.LastZxid(); got != 9 {
		t.Fatalf("last zxid %d, want 9", got)
	}
}

func TestCloseSessionNamesItsConnection(t *testing.T) {
	const sid = 0x0100000000000001
	db, rec, fake := newDB(t)
	a := &applier{db: db}
	a.apply(1000, createSession(sid, 5), write(sid, 5, 1, "/e"))
	a.apply(1000, attach(sid, 6))
	a.apply(1000, Command{Conn: 6, Order: 1, Kind: KindTxn, Txn: tree.Txn{Session: sid, Op: wire.OpCloseSession}})
	e := rec.last()
	if e.ClosedSession != sid || e.ClosedConn != 6 {
		t.Fatalf("closed %#x conn %d, want %#x conn 6", e.ClosedSession, e.ClosedConn, sid)
	}
	if exists(db, "/e") {
		t.Fatal("ephemeral survived its session")
	}
	if db.Touch(sid, fake.Now()) {
		t.Fatal("a closed session still has a timer")
	}
}

func TestApplySkipsEntriesAlreadyApplied(t *testing.T) {
	db, rec, _ := newDB(t)
	db.Apply(Batch{Time: 1, Commands: []Command{createSession(0x0100000000000001, 1)}}, 5)
	db.Apply(Batch{Time: 1, Commands: []Command{createSession(0x0100000000000002, 1)}}, 5)
	db.Apply(Batch{}, 6)
	if len(rec.effects) != 1 || db.Applied() != 6 {
		t.Fatalf("%d commands applied, index %d; want 1 and 6", len(rec.effects), db.Applied())
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	const sid = 0x0100000000000001
	db, _, _ := newDB(t)
	a := &applier{db: db}
	a.apply(7000, createSession(sid, 5), write(sid, 5, 1, "/e"))
	moved := attach(sid, 6)
	moved.Origin = 3
	a.apply(8000, moved)
	snap, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	other, rec, _ := newDB(t)
	if err := other.Restore(bytes.NewReader(snap), false); err != nil {
		t.Fatal(err)
	}
	if rec.resets != 0 {
		t.Fatal("a start-up restore asked for a reset")
	}
	d1, z1 := db.Digest()
	d2, z2 := other.Digest()
	if d1 != d2 || z1 != z2 || other.Applied() != db.Applied() || other.LastTime() != 8000 {
		t.Fatalf("restored %x@%d index %d time %d, want %x@%d index %d time 8000",
			d2, z2, other.Applied(), other.LastTime(), d1, z1, db.Applied())
	}
	// Ownership came along, with the member the session is on: the old
	// connection is refused, the new one's turn is 1.
	if got := other.Sessions(); len(got) != 1 || got[0].Conn != 6 || got[0].Node != 3 {
		t.Fatalf("restored sessions %+v, want conn 6 on node 3", got)
	}
	oa := &applier{db: other, index: other.Applied()}
	oa.apply(9000, write(sid, 5, 2, "/old"))
	if err := rec.last().Result.Err; !errors.Is(err, ErrSessionMoved) {
		t.Fatalf("old owner after restore: %v", err)
	}
	oa.apply(9000, write(sid, 6, 1, "/new"))
	if err := rec.last().Result.Err; err != nil {
		t.Fatalf("new owner after restore: %v", err)
	}
	// Restoring while serving drops watches and asks for a reset.
	other.Read(func(v *View) { v.AddDataWatch("/new", 77) })
	if err := other.Restore(bytes.NewReader(snap), true); err != nil {
		t.Fatal(err)
	}
	if rec.resets != 1 || other.Counts().Watches != 0 {
		t.Fatalf("resets %d watches %d after a live restore", rec.resets, other.Counts().Watches)
	}
	// Corruption anywhere is refused.
	for i := range snap {
		bad := bytes.Clone(snap)
		bad[i] ^= 0x40
		if err := other.Restore(bytes.NewReader(bad), false); err == nil {
			t.Fatalf("snapshot with byte %d flipped restored", i)
		}
	}
}

// TestSnapshotOldVersions: snapshots written before owners carried their
// member (version 1) and before the membership was kept (version 2) still
// restore: their sessions on an unknown member (0), no membership.
func TestSnapshotOldVersions(t *testing.T) {
	const sid = 0x0100000000000001
	db, _, _ := newDB(t)
	a := &applier{db: db}
	a.apply(7000, createSession(sid, 5))
	snap, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// The header as version 1 wrote it: each owner without its node.
	var body []byte
	body = binary.AppendUvarint(body, db.Applied())
	body = binary.AppendVarint(body, 7000)
	body = binary.AppendUvarint(body, 1)
	body = binary.AppendVarint(body, sid)
	body = binary.AppendVarint(body, 5)    // conn
	body = binary.AppendUvarint(body, 1)   // next
	body = binary.AppendVarint(body, 1000) // timeout
	ownersEnd := len(snapMagic) + len(body)
	// Version 3 adds the owner's node (0), an empty membership (length 2:
	// version 0, no members) and no replicas.
	v3Tail := []byte{0, 2, 0, 0, 0}
	if !bytes.Equal(snap[len(snapMagic):ownersEnd], body) || !bytes.Equal(snap[ownersEnd:ownersEnd+len(v3Tail)], v3Tail) {
		t.Fatalf("version 3 header is not version 1's with a node and a membership: % x", snap[:ownersEnd+len(v3Tail)])
	}
	tree := snap[ownersEnd+len(v3Tail)+8:]
	for _, old := range []struct {
		magic  string
		header []byte
	}{
		{snapMagicV1, body},
		{snapMagicV2, append(bytes.Clone(body), 0)},
	} {
		b := append([]byte(old.magic), old.header...)
		b = binary.LittleEndian.AppendUint64(b, crc64.Checksum(old.header, crcTable))
		b = append(b, tree...)
		other, _, _ := newDB(t)
		if err := other.Restore(bytes.NewReader(b), false); err != nil {
			t.Fatalf("%q: %v", old.magic, err)
		}
		if got := other.Sessions(); len(got) != 1 || got[0].Conn != 5 || got[0].Node != 0 {
			t.Fatalf("%q: restored sessions %+v", old.magic, got)
		}
		if !other.Membership().IsZero() {
			t.Fatalf("%q: restored a membership %+v", old.magic, other.Membership())
		}
	}
}

func TestWatchesFireUnderApply(t *testing.T) {
	db, rec, _ := newDB(t)
	a := &applier{db: db}
	db.Read(func(v *View) {
		v.AddDataWatch("/w", 1)
		v.AddChildWatch("/", 2)
	})
	a.apply(1, Command{Kind: KindTxn, Txn: tree.Txn{Op: wire.OpCreate, Req: &wire.CreateRequest{Path: "/w", ACL: open}}})
	if len(rec.notified) != 2 || rec.notified[0] != 1 || rec.notified[1] != 2 {
		t.Fatalf("notified %v, want [1 2]", rec.notified)
	}
	// Fired before the command's effects reached the sink.
	if len(rec.effects) != 1 {
		t.Fatalf("%d effects", len(rec.effects))
	}
}

// TestTimers covers expiry ownership: reset on takeover, closing sessions
// that come back if their close is lost, touches refused while closing,
// and a shift after a stall.
func TestTimers(t *testing.T) {
	const s1, s2 = 0x0100000000000001, 0x0100000000000002
	db, _, fake := newDB(t)
	a := &applier{db: db}
	a.apply(1, createSession(s1, 1), createSession(s2, 2)) // 1s timeouts at t0

	fake.Advance(900 * time.Millisecond)
	if !db.Touch(s2, fake.Now()) {
		t.Fatal("touch of a live session refused")
	}
	fake.Advance(300 * time.Millisecond) // t0+1.2s: s1 due (bucket 1.1s), s2 not
	got := db.ExpireSessions(fake.Now())
	if len(got) != 1 || got[0] != s1 {
		t.Fatalf("expired %v, want [s1]", got)
	}
	if db.Touch(s1, fake.Now()) {
		t.Fatal("a closing session accepted a touch")
	}
	// Its close is lost; one timeout later it is handed out again.
	fake.Advance(1100 * time.Millisecond)
	got = db.ExpireSessions(fake.Now())
	if len(got) != 2 || got[0] != s1 && got[1] != s1 {
		t.Fatalf("expired %v, want s1 again (and s2, silent since 0.9s)", got)
	}

	// A new leader starts everyone afresh.
	db.ResetTimers(fake.Now())
	fake.Advance(time.Second)
	if got := db.ExpireSessions(fake.Now()); len(got) != 0 {
		t.Fatalf("expired %v within a full timeout of the reset", got)
	}
	// A stall of 500ms pushes the deadlines back by as much.
	db.ShiftTimers(500 * time.Millisecond)
	fake.Advance(200 * time.Millisecond)
	if got := db.ExpireSessions(fake.Now()); len(got) != 0 {
		t.Fatalf("expired %v before the shifted deadline", got)
	}
	fake.Advance(500 * time.Millisecond)
	if got := db.ExpireSessions(fake.Now()); len(got) != 2 {
		t.Fatalf("expired %v after the shifted deadline, want both", got)
	}
}

// TestLeaderDecisionsHoldOnlyInTheirTerm: an expiry or cleanup a leader
// decided applies only from a log entry of its own term. A leader deposed
// after deciding may hand the command to the next leader; it is refused.
func TestLeaderDecisionsHoldOnlyInTheirTerm(t *testing.T) {
	const sid = 0x0100000000000001
	db, rec, _ := newDB(t)
	db.Apply(Batch{Time: 1, Term: 3, Commands: []Command{createSession(sid, 5), write(sid, 5, 1, "/e")}}, 1)
	expire := Command{Kind: KindTxn, Term: 3, Txn: tree.Txn{Session: sid, Op: wire.OpCloseSession}}
	db.Apply(Batch{Time: 2, Term: 4, Commands: []Command{expire}}, 2)
	if err := rec.last().Result.Err; !errors.Is(err, ErrStaleDecision) {
		t.Fatalf("a term-3 expiry in a term-4 entry: %v", err)
	}
	if !exists(db, "/e") || db.LastZxid() != 3 {
		t.Fatalf("the refused expiry closed the session (or took no zxid): zxid %d", db.LastZxid())
	}
	expire.Term = 4
	db.Apply(Batch{Time: 3, Term: 4, Commands: []Command{expire}}, 3)
	if err := rec.last().Result.Err; err != nil || exists(db, "/e") {
		t.Fatalf("the term-4 expiry in its own term: %v, ephemeral still there: %v", err, exists(db, "/e"))
	}
}

// TestSASLSchemeSurvivesRestore checks that Config.SASL holds for the tree
// a snapshot brings in, not only for the one New made: a sasl ACL is
// accepted before and after a restore, and refused without SASL.
func TestSASLSchemeSurvivesRestore(t *testing.T) {
	const sid = 0x0100000000000001
	saslACL := []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "sasl", ID: "bob"}}}
	create := func(order uint64, path string) Command {
		return Command{Conn: 5, Order: order, Kind: KindTxn, Txn: tree.Txn{Session: sid, Op: wire.OpCreate,
			Req: &wire.CreateRequest{Path: path, ACL: saslACL}}}
	}
	for _, enabled := range []bool{true, false} {
		var want error
		if !enabled {
			want = tree.ErrInvalidACL
		}
		rec := &recorder{}
		db := New(Config{TickTime: tick, Clock: clock.NewFake(t0), Sink: rec, SASL: enabled})
		a := &applier{db: db}
		a.apply(7000, createSession(sid, 5), create(1, "/before"))
		if err := rec.last().Result.Err; err != want {
			t.Errorf("SASL %v: create before restore: %v, want %v", enabled, err, want)
		}
		snap, err := db.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Restore(bytes.NewReader(snap), false); err != nil {
			t.Fatal(err)
		}
		a.apply(8000, create(2, "/after"))
		if err := rec.last().Result.Err; err != want {
			t.Errorf("SASL %v: create after restore: %v, want %v", enabled, err, want)
		}
	}
}
