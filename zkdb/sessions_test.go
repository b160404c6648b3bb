package zkdb

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// TestCreateSessionRefusesAnIDInUse: a second createSession for a live id
// (a server restarted with its clock behind minted it again) is refused,
// the same on every replica, and leaves the session as it was: its
// password, timeout, ephemerals, owning connection and write turn.
func TestCreateSessionRefusesAnIDInUse(t *testing.T) {
	const sid, owner, stranger = 0x0100000000000001, 5, 6
	db, rec, fake := newDB(t)
	a := &applier{db: db}
	a.apply(1000, createSession(sid, owner), write(sid, owner, 1, "/e"))
	pw := bytes.Repeat([]byte{1}, 16) // createSession's

	again := Command{Conn: stranger, Kind: KindTxn, Txn: tree.Txn{Session: sid, Op: wire.OpCreateSession,
		Req: &tree.CreateSession{ID: sid, Timeout: 4000, Passwd: bytes.Repeat([]byte{2}, 16)}}}
	a.apply(2000, again)
	e := rec.last()
	if !errors.Is(e.Result.Err, tree.ErrSessionExists) {
		t.Fatalf("second create of %#x: %v, want ErrSessionExists", sid, e.Result.Err)
	}
	if e.Command.Txn.Zxid != 3 || db.LastZxid() != 3 {
		t.Fatalf("refused create took zxid %d (last %d), want 3", e.Command.Txn.Zxid, db.LastZxid())
	}
	timeout, gotPW, ok := db.Session(sid)
	if !ok || timeout != time.Second || !bytes.Equal(gotPW, pw) {
		t.Fatalf("session after the refused create: timeout %v password %x (%v), want 1s %x", timeout, gotPW, ok, pw)
	}
	if got := db.Ephemerals()[sid]; len(got) != 1 || got[0] != "/e" {
		t.Fatalf("ephemerals after the refused create: %v", got)
	}
	// The owner still writes in its turn; the stranger does not own it.
	a.apply(3000, write(sid, owner, 2, "/e2"))
	if err := rec.last().Result.Err; err != nil {
		t.Fatalf("owner's next write: %v", err)
	}
	a.apply(3000, write(sid, stranger, 1, "/x"))
	if err := rec.last().Result.Err; !errors.Is(err, ErrSessionMoved) {
		t.Fatalf("stranger's write: %v, want ErrSessionMoved", err)
	}
	// Its timer is the one its creation set: alive within 1s of the
	// owner's last touch, and not restarted by the refused create.
	if got := db.Counts().Sessions; got != 1 {
		t.Fatalf("%d sessions, want 1", got)
	}
	fake.Advance(1200 * time.Millisecond)
	if got := db.ExpireSessions(fake.Now()); len(got) != 1 || got[0] != sid {
		t.Fatalf("expired %v after 1.2s, want the 1s session", got)
	}
}

func TestLastSessionID(t *testing.T) {
	db, _, _ := newDB(t)
	a := &applier{db: db}
	ids := []int64{0x0100000000000005, 0x0100000000000002, 0x0200000000000009, -0x0200000000000000 + 7, -0x0200000000000000 + 3}
	for i, id := range ids {
		a.apply(1000, createSession(id, int64(i+1)))
	}
	tests := []struct {
		like, want int64
		ok         bool
	}{
		{0x0100000000000001, 0x0100000000000005, true},
		{0x0200000000000001, 0x0200000000000009, true},
		{-0x0200000000000000, -0x0200000000000000 + 7, true}, // server 0xfe: negative ids
		{0x0300000000000001, 0, false},
	}
	for _, tc := range tests {
		if got, ok := db.LastSessionID(tc.like); got != tc.want || ok != tc.ok {
			t.Errorf("LastSessionID(%#x) = %#x %v, want %#x %v", uint64(tc.like), uint64(got), ok, uint64(tc.want), tc.ok)
		}
	}
}

// TestSessionsList: Sessions lists every open session by id with the
// timeout, owning connection and member of its last attach, and forgets
// a closed one; SessionDetails reads the same for the ids asked, with
// their ephemerals, skipping closed ones.
func TestSessionsList(t *testing.T) {
	const a, b = 0x0100000000000002, 0x0100000000000001
	db, _, _ := newDB(t)
	ap := &applier{db: db}
	onNode := func(c Command, node uint64) Command { c.Origin = node; return c }
	ap.apply(1000, onNode(createSession(a, 7), 2), onNode(createSession(b, 8), 3), write(b, 8, 1, "/eb"))
	ap.apply(2000, onNode(attach(a, 9), 1))
	want := []SessionInfo{{ID: b, Timeout: time.Second, Conn: 8, Node: 3}, {ID: a, Timeout: 2 * time.Second, Conn: 9, Node: 1}}
	if got := db.Sessions(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Sessions = %+v, want %+v", got, want)
	}
	if got := db.SessionIDs(); !slices.Equal(got, []int64{b, a}) {
		t.Fatalf("SessionIDs = %x", got)
	}
	details := []SessionInfo{want[1], want[0]}
	details[1].Ephemerals = []string{"/eb"}
	if got := db.SessionDetails([]int64{a, 0x0100000000000009, b}); !reflect.DeepEqual(got, details) {
		t.Fatalf("SessionDetails = %+v, want %+v", got, details)
	}
	ap.apply(3000, Command{Conn: 8, Order: 2, Kind: KindTxn, Txn: tree.Txn{Session: b, Op: wire.OpCloseSession}})
	if got := db.Sessions(); !reflect.DeepEqual(got, want[1:]) {
		t.Fatalf("after closing %#x: Sessions = %+v, want %+v", b, got, want[1:])
	}
	if got := db.SessionDetails([]int64{b}); len(got) != 0 {
		t.Fatalf("SessionDetails of a closed session = %+v", got)
	}
}
