package treejson_test

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/hutchtest"
	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/treejson"
)

func TestMain(m *testing.M) { realzk.Main(m) }

// TestCopyBetweenServers copies a subtree out of Debian's ZooKeeper 3.8
// into hutch and back out into ZooKeeper again, through a JSON file: data
// (text, binary, empty, none), ACLs and nesting come across; Stats are
// dumped for reading.
func TestCopyBetweenServers(t *testing.T) {
	zks := realzk.Start(t)
	zc, _, err := zk.Connect([]string{zks.Addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	if err := zc.AddAuth("digest", []byte("alice:pw")); err != nil {
		t.Fatal(err)
	}
	open := zk.WorldACL(zk.PermAll)
	for _, n := range []struct {
		path string
		data []byte
		acl  []zk.ACL
	}{
		{"/app", []byte("root of the app"), open},
		{"/app/text", []byte("héllo"), open},
		{"/app/binary", []byte{0, 1, 0xff, 0xfe}, open},
		{"/app/empty", []byte{}, open},
		{"/app/locked", []byte("r only"), zk.WorldACL(zk.PermRead | zk.PermCreate)},
		{"/app/deep", nil, open},
		{"/app/deep/er", []byte("x"), zk.DigestACL(zk.PermAll, "alice", "pw")},
	} {
		if _, err := zc.Create(n.path, n.data, 0, n.acl); err != nil {
			t.Fatalf("%s: %v", n.path, err)
		}
	}
	fromZK := hutchtest.Dump(t, zc, "/app", true)
	if len(fromZK.Nodes) != 7 || fromZK.Nodes[0].Stat == nil || fromZK.Nodes[0].Stat.NumChildren != 5 {
		t.Fatalf("dump of ZooKeeper's /app: %+v", fromZK)
	}
	file := filepath.Join(t.TempDir(), "app.json")
	if err := fromZK.WriteFile(file); err != nil {
		t.Fatal(err)
	}
	read, err := treejson.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}

	srv := hutchtest.Start(t)
	hc, _ := srv.Connect(10 * time.Second)
	if err := hc.AddAuth("digest", []byte("alice:pw")); err != nil {
		t.Fatal(err)
	}
	hutchtest.LoadInto(t, hc, read, "/copy")
	fromHutch := hutchtest.Dump(t, hc, "/copy", false)
	same(t, fromZK, fromHutch)

	// And back into ZooKeeper, under another name.
	hutchtest.LoadInto(t, zc, fromHutch, "/back")
	same(t, fromZK, hutchtest.Dump(t, zc, "/back", false))
}

// same compares two dumps node by node, by path below their roots.
func same(t *testing.T, a, b treejson.Tree) {
	t.Helper()
	if len(a.Nodes) != len(b.Nodes) {
		t.Fatalf("%d nodes against %d", len(a.Nodes), len(b.Nodes))
	}
	for i := range a.Nodes {
		x, y := a.Nodes[i], b.Nodes[i]
		if a.Rebase(x.Path, b.Root) != y.Path || !bytes.Equal(x.Data, y.Data) || !slices.Equal(x.ACL, y.ACL) {
			t.Errorf("%s %q %v, copied as %s %q %v", x.Path, x.Data, x.ACL, y.Path, y.Data, y.ACL)
		}
	}
}
