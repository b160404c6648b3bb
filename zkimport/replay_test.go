package zkimport

import (
	"testing"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkformat"
)

var openACL = []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}

// TestReplayFuzzySnapshot replays over a snapshot taken while writes went
// on, where ZooKeeper wrote the root before a create applied and the new
// node after it: the create finds its node, and replay must still move the
// parent's cversion and pzxid on (DataTree.processTxn's NodeExists rule),
// or the next sequential name repeats one. A failed multi leaves nothing.
func TestReplayFuzzySnapshot(t *testing.T) {
	l := tree.NewLoader()
	if err := l.Node("/", nil, openACL, tree.StoredStat{}); err != nil {
		t.Fatal(err)
	}
	if err := l.Node("/a", nil, openACL, tree.StoredStat{Czxid: 5, Mzxid: 5, Pzxid: 5}); err != nil {
		t.Fatal(err)
	}
	r := replayer{l: l, lastZxid: 4}
	entries := []zkformat.Entry{
		{Header: zkformat.TxnHeader{Zxid: 5, Type: wire.OpCreate}, Txn: &zkformat.CreateTxn{Path: "/a", ACL: openACL, ParentCVersion: 1}},
		{Header: zkformat.TxnHeader{Zxid: 6, Type: wire.OpMulti}, Txn: &zkformat.MultiTxn{Ops: []zkformat.SubTxn{
			{Type: wire.OpCreate, Txn: &zkformat.CreateTxn{Path: "/b", ACL: openACL, ParentCVersion: 2}},
			{Type: wire.OpError, Txn: &zkformat.ErrorTxn{Err: -101}},
		}}},
	}
	for i := range entries {
		if err := r.apply(&entries[i]); err != nil {
			t.Fatal(err)
		}
	}
	_, _, st, _ := l.Lookup("/")
	if st.Cversion != 1 || st.Pzxid != 5 {
		t.Fatalf("root after the replayed create: cversion %d pzxid %d, want 1 and 5", st.Cversion, st.Pzxid)
	}
	if _, _, _, ok := l.Lookup("/b"); ok {
		t.Fatal("the failed multi's create applied")
	}
}
