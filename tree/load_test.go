package tree

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// loadCopy loads tr's nodes and sessions into a Loader, as an importer
// would, and finishes it.
func loadCopy(tb testing.TB, tr *Tree) *Tree {
	tb.Helper()
	l := NewLoader()
	for _, id := range tr.Sessions() {
		timeout, pw, _ := tr.Session(id)
		if err := l.Session(id, timeout, pw); err != nil {
			tb.Fatal(err)
		}
	}
	err := tr.Walk("/", func(r *NodeRecord) error {
		return l.Node(r.Path, r.Data, r.ACL, r.Stat)
	})
	if err != nil {
		tb.Fatal(err)
	}
	out, err := l.Finish(tr.LastZxid())
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestLoaderCopiesTreeExactly(t *testing.T) {
	tr := richTree(t)
	cp := loadCopy(t, tr)
	checkInvariants(t, cp)
	if cp.Digest() != tr.Digest() || cp.ZKDigest() != tr.ZKDigest() || cp.NodeCount() != tr.NodeCount() {
		t.Fatalf("copy: digest %x/%x zk %d/%d count %d/%d", cp.Digest(), tr.Digest(), cp.ZKDigest(), tr.ZKDigest(), cp.NodeCount(), tr.NodeCount())
	}
	if !bytes.Equal(snapshotBytes(t, cp), snapshotBytes(t, tr)) {
		t.Fatal("the copy's snapshot differs from the original's")
	}
	// The indexes a loaded tree needs: ephemerals, containers, TTL nodes.
	if got := cp.EphemeralsBySession(); len(got[0x11]) != 1 || len(got[0x22]) != 1 {
		t.Fatalf("ephemerals %v", got)
	}
	if c, _, _ := cp.Mode("/c"); !c {
		t.Fatal("/c lost its container mode")
	}
	if _, ttl, _ := cp.Mode("/ttl"); ttl != 100 {
		t.Fatalf("/ttl: ttl %d", ttl)
	}
}

func TestLoaderRefuses(t *testing.T) {
	st := StoredStat{Czxid: 1, Mzxid: 1, Pzxid: 1}
	eph := st
	eph.EphemeralOwner = 0x99
	cases := []struct {
		name string
		load func(l *Loader) error
		want string
	}{
		{"node before root", func(l *Loader) error { return l.Node("/a", nil, open, st) }, "before the root"},
		{"root twice", func(l *Loader) error {
			_ = l.Node("/", nil, open, st)
			return l.Node("/", nil, open, st)
		}, "listed twice"},
		{"missing parent", func(l *Loader) error {
			_ = l.Node("/", nil, open, st)
			return l.Node("/a/b", nil, open, st)
		}, "parent is missing"},
		{"duplicate", func(l *Loader) error {
			_ = l.Node("/", nil, open, st)
			_ = l.Node("/a", nil, open, st)
			return l.Node("/a", nil, open, st)
		}, "listed twice"},
		{"invalid path", func(l *Loader) error {
			_ = l.Node("/", nil, open, st)
			return l.Node("/a/../b", nil, open, st)
		}, "not a valid path"},
		{"child of an ephemeral", func(l *Loader) error {
			_ = l.Session(0x99, 1000, nil)
			_ = l.Node("/", nil, open, st)
			_ = l.Node("/e", nil, open, eph)
			return l.Node("/e/x", nil, open, st)
		}, "parent is an ephemeral"},
		{"session id 0", func(l *Loader) error { return l.Session(0, 1000, nil) }, "not a session id"},
		{"session twice", func(l *Loader) error {
			_ = l.Session(5, 1000, nil)
			return l.Session(5, 1000, nil)
		}, "listed twice"},
		{"ephemeral of a closed session", func(l *Loader) error {
			_ = l.Node("/", nil, open, st)
			_ = l.Node("/e", nil, open, eph)
			_, err := l.Finish(10)
			return err
		}, "which is not open"},
		{"zxid past the last", func(l *Loader) error {
			_ = l.Node("/", nil, open, st)
			_ = l.Node("/a", nil, open, StoredStat{Czxid: 1, Mzxid: 12, Pzxid: 1})
			_, err := l.Finish(10)
			return err
		}, "after the last transaction"},
		{"no root", func(l *Loader) error {
			_, err := l.Finish(0)
			return err
		}, "no root"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.load(NewLoader())
			var le *LoadError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a LoadError saying %q", err, c.want)
			}
		})
	}
}

// TestReplayRules checks the replay primitives against DataTree's rules,
// step by step, on stored Stats.
func TestReplayRules(t *testing.T) {
	l := NewLoader()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	stat := func(p string) StoredStat {
		t.Helper()
		_, _, st, ok := l.Lookup(p)
		if !ok {
			t.Fatalf("%s missing", p)
		}
		return st
	}
	must(l.Node("/", []byte{}, open, StoredStat{}))
	must(l.CreateNode("/a", []byte("x"), open, 0, -1, 5, 500))
	if st := stat("/"); st.Cversion != 1 || st.Pzxid != 5 {
		t.Fatalf("root after create: %+v", st)
	}
	if st := stat("/a"); st != (StoredStat{Czxid: 5, Mzxid: 5, Pzxid: 5, Ctime: 500, Mtime: 500}) {
		t.Fatalf("/a: %+v", st)
	}
	// A logged parentCVersion not above the parent's leaves it alone.
	must(l.CreateNode("/b", nil, open, 0, 1, 6, 600))
	if st := stat("/"); st.Cversion != 1 || st.Pzxid != 5 {
		t.Fatalf("root after a create with an old parentCVersion: %+v", st)
	}
	// Already there: NodeExists, nothing changes.
	if err := l.CreateNode("/a", nil, open, 0, 9, 7, 700); err != ErrNodeExists {
		t.Fatalf("create over /a: %v", err)
	}
	// Replay's answer to that: raise the parent's cversion and pzxid.
	must(l.SetCversionPzxid("/", 9, 7))
	must(l.SetCversionPzxid("/", 3, 8)) // lower: no change
	if st := stat("/"); st.Cversion != 9 || st.Pzxid != 7 {
		t.Fatalf("root after setCversionPzxid: %+v", st)
	}
	// setData and setACL set the logged version, not one more.
	must(l.SetData("/a", []byte("yy"), 4, 9, 900))
	must(l.SetACL("/a", readACL, 7))
	if st := stat("/a"); st.Version != 4 || st.Mzxid != 9 || st.Mtime != 900 || st.Aversion != 7 {
		t.Fatalf("/a after setData/setACL: %+v", st)
	}
	// Deleting a missing node still raises the parent's pzxid.
	if err := l.DeleteNode("/zz", 10); err != ErrNoNode {
		t.Fatalf("delete of a missing node: %v", err)
	}
	if st := stat("/"); st.Pzxid != 10 || st.Cversion != 9 {
		t.Fatalf("root after a delete of a missing node: %+v", st)
	}
	// Sessions: closing one deletes the paths it lists and the rest of
	// its ephemerals, whoever owns the listed ones.
	must(l.OpenSession(0x42, 4000, []byte("pw")))
	must(l.CreateNode("/e1", nil, open, 0x42, -1, 11, 1100))
	must(l.CreateNode("/e2", nil, open, 0x42, -1, 12, 1200))
	must(l.CreateNode("/p", nil, open, 0, -1, 13, 1300))
	l.CloseSession(0x42, 14, []string{"/e1", "/p"})
	for _, p := range []string{"/e1", "/e2", "/p"} {
		if _, _, _, ok := l.Lookup(p); ok {
			t.Fatalf("%s survived the close", p)
		}
	}
	tr, err := l.Finish(14)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := tr.Session(0x42); ok {
		t.Fatal("closed session still open")
	}
	checkInvariants(t, tr)
}

// TestReplayOrphans: a replayed delete of a node that has children (a
// fuzzy snapshot holding the node's next incarnation) leaves them in
// ZooKeeper's digest until their creates are replayed.
func TestReplayOrphans(t *testing.T) {
	l := NewLoader()
	for _, n := range []struct {
		path string
		z    int64
	}{{"/", 0}, {"/p", 20}, {"/p/c", 21}} {
		if err := l.Node(n.path, nil, open, StoredStat{Czxid: n.z, Mzxid: n.z, Pzxid: n.z}); err != nil {
			t.Fatal(err)
		}
	}
	// Replay from zxid 10: an old /p is deleted, /p and /p/c created again.
	if err := l.DeleteNode("/p", 10); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Finish(10); err == nil || !strings.Contains(err.Error(), "without its parent") {
		t.Fatalf("Finish with an orphan: %v", err)
	}
	if err := l.CreateNode("/p", nil, open, 0, -1, 20, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.CreateNode("/p/c", nil, open, 0, -1, 21, 0); err != nil {
		t.Fatal(err)
	}
	tr, err := l.Finish(21)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, tr)
	if l.ZKDigest() != tr.ZKDigest() {
		t.Fatal("orphan digest left behind")
	}
}

func TestWalk(t *testing.T) {
	tr := richTree(t)
	var paths []string
	if err := tr.Walk("/q", func(r *NodeRecord) error {
		paths = append(paths, r.Path)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"/q", "/q/eph", "/q/item-0000000000", "/q/item-0000000001", "/q/item-0000000003", "/q/item-0000000004"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Fatalf("walk /q: %v", paths)
	}
	stop := errors.New("stop")
	n := 0
	if err := tr.Walk("/", func(*NodeRecord) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("walk did not stop: %v after %d", err, n)
	}
	if err := tr.Walk("/missing", func(*NodeRecord) error { return nil }); err != ErrNoNode {
		t.Fatalf("walk of a missing node: %v", err)
	}
}

// TestZKDigestFreshTree pins ZooKeeper's digest of a fresh tree (zkformat's
// testdata holds the log it comes from).
func TestZKDigestFreshTree(t *testing.T) {
	if got := New().ZKDigest(); got != freshZKDigest {
		t.Fatalf("fresh tree: ZooKeeper digest %d, want %d", got, freshZKDigest)
	}
}

// freshZKDigest is the digest ZooKeeper 3.8.0 logged with the first
// transaction (a createSession, which changes no node) of a new standalone
// server: the digest of its fresh tree.
const freshZKDigest = 1371985504
