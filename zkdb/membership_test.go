package zkdb

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

func testConfig(tb testing.TB) membership.Config {
	tb.Helper()
	var ms []membership.Member
	for _, spec := range []string{"127.0.0.1:7001:7101", "127.0.0.1:7002:7102;2182", "127.0.0.1:7003:7103:observer;127.0.0.1:2183"} {
		m, err := membership.ParseServer(uint64(len(ms)+1), spec)
		if err != nil {
			tb.Fatal(err)
		}
		ms = append(ms, m)
	}
	return membership.FromMembers(0, ms)
}

func reconfig(conn, session int64, out Outcome) Command {
	return Command{Conn: conn, Kind: KindReconfig, Txn: tree.Txn{Session: session, Op: wire.OpReconfig, Req: &out}}
}

func readConfig(tb testing.TB, db *DB) ([]byte, wire.Stat) {
	tb.Helper()
	var data []byte
	var st wire.Stat
	var err error
	db.Read(func(v *View) { data, st, err = v.Tree.GetData("/zookeeper/config", nil) })
	if err != nil {
		tb.Fatal(err)
	}
	return data, st
}

// TestReconfigApplies: a reconfig's outcome installs the membership and
// writes /zookeeper/config as ZooKeeper's reconfig txn does (version -1,
// mzxid and the config's version the txn's zxid, NodeDataChanged fired),
// and answers with the data and Stat; refusals take a zxid and change
// nothing; a decision made against another version never applies.
func TestReconfigApplies(t *testing.T) {
	db, rec, _ := newDB(t)
	a := &applier{db: db}
	db.Read(func(v *View) { v.AddDataWatch("/zookeeper/config", 9) })
	cfg := testConfig(t)
	a.apply(5000, reconfig(0, 0, Outcome{Config: cfg}))
	e := rec.last()
	if e.Result.Err != nil || e.Command.Txn.Zxid != 1 {
		t.Fatalf("first config: %v at zxid %d", e.Result.Err, e.Command.Txn.Zxid)
	}
	got := db.Membership()
	want := cfg.Clone()
	want.Version = 1
	if !got.Equal(want) {
		t.Fatalf("membership %+v, want %+v", got, want)
	}
	data, st := readConfig(t, db)
	if string(data) != want.Text() || st.Version != -1 || st.Mzxid != 1 || st.Mtime != 5000 || st.Czxid != 0 || st.Aversion != -1 {
		t.Fatalf("/zookeeper/config %q %+v", data, st)
	}
	if resp, ok := e.Result.Resp.(*wire.GetDataResponse); !ok || string(resp.Data) != want.Text() || resp.Stat != st {
		t.Fatalf("reply %+v", e.Result.Resp)
	}
	if len(rec.notified) != 1 || rec.notified[0] != 9 {
		t.Fatalf("watchers notified %v", rec.notified)
	}

	const sid = 0x0100000000000002
	a.apply(5001, createSession(sid, 4))
	for _, tc := range []struct {
		name string
		cmd  Command
		err  error
	}{
		{"refused", reconfig(4, sid, Outcome{Code: wire.CodeNewConfigNoQuorum, Base: 1}), tree.ErrNewConfigNoQuorum},
		{"stale base", reconfig(4, sid, Outcome{Base: 0, Config: cfg}), tree.ErrBadVersion},
		{"moved session", reconfig(5, sid, Outcome{Base: 1, Config: cfg}), ErrSessionMoved},
		{"expired session", reconfig(4, sid+1, Outcome{Base: 1, Config: cfg}), tree.ErrSessionExpired},
	} {
		before := db.LastZxid()
		a.apply(5002, tc.cmd)
		if e := rec.last(); !errors.Is(e.Result.Err, tc.err) || e.Command.Txn.Zxid != before+1 || db.LastZxid() != before+1 {
			t.Errorf("%s: %v at zxid %d, want %v at %d", tc.name, e.Result.Err, e.Command.Txn.Zxid, tc.err, before+1)
		}
		if db.Membership().Version != 1 {
			t.Errorf("%s changed the membership", tc.name)
		}
	}
	next, _ := membership.Incremental(db.Membership(), nil, []byte("3"), false)
	a.apply(6000, reconfig(4, sid, Outcome{Base: 1, Config: next}))
	if e := rec.last(); e.Result.Err != nil || db.Membership().Version != e.Command.Txn.Zxid || len(db.Membership().Members) != 2 {
		t.Fatalf("second reconfig: %v, membership %+v", e.Result.Err, db.Membership())
	}

	// The membership and the replicas travel in snapshots.
	db.ApplyReplicas(a.index+1, []Replica{{ID: 2, Addr: "127.0.0.1:7002", Voter: true}, {ID: 1, Addr: "127.0.0.1:7001"}})
	snap, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := newDB(t)
	if err := other.Restore(bytes.NewReader(snap), false); err != nil {
		t.Fatal(err)
	}
	if !other.Membership().Equal(db.Membership()) || len(other.Replicas()) != 2 || other.Replicas()[0].ID != 1 || !other.Replicas()[1].Voter {
		t.Fatalf("restored membership %+v replicas %+v", other.Membership(), other.Replicas())
	}
	if d1, _ := db.Digest(); d1 != func() uint64 { d, _ := other.Digest(); return d }() {
		t.Fatal("digests differ after restore")
	}
}

// TestReconfigNotForwarded: only a leader logs a reconfig's outcome; a
// follower's forwarded batch holding one is refused, while the log entry
// decodes.
func TestReconfigNotForwarded(t *testing.T) {
	cmds := []Command{reconfig(0, 0, Outcome{Config: testConfig(t)})}
	b, err := AppendCommands(nil, cmds)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckCommands(b); err == nil {
		t.Fatal("a forwarded reconfig outcome was accepted")
	}
	batch, err := DecodeEntry(AppendEntry(nil, 1, b))
	if err != nil {
		t.Fatal(err)
	}
	out, ok := batch.Commands[0].Txn.Req.(*Outcome)
	if !ok || !out.Config.Equal(testConfig(t)) {
		t.Fatalf("decoded %+v", batch.Commands[0].Txn.Req)
	}
}
