package zkexport_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/zkexport"
	"github.com/hutchzk/hutch/zkformat"
	"github.com/hutchzk/hutch/zkimport"
)

func TestMain(m *testing.M) { realzk.Main(m) }

// TestExportSeedsZooKeeperEnsemble: files ZooKeeper 3.8 wrote, imported
// into hutch and exported again, seed a three-member ZooKeeper 3.8
// ensemble (the snapshot and the epoch files in every member's dataDir):
// it forms, every member serves the tree with the Stats the files hold,
// and none finds the snapshot's digest wrong.
func TestExportSeedsZooKeeperEnsemble(t *testing.T) {
	hutchDir := filepath.Join(t.TempDir(), "hutch")
	fixture := filepath.Join("..", "zkformat", "testdata", "zk38")
	if _, err := zkimport.Import(zkimport.Options{
		Source: zkimport.Source{DataDir: filepath.Join(fixture, "data"), LogDir: filepath.Join(fixture, "log")},
		Output: zkimport.Output{Dir: hutchDir},
	}); err != nil {
		t.Fatal(err)
	}
	zkDir := filepath.Join(t.TempDir(), "zookeeper")
	res, err := zkexport.Export(zkexport.Options{DataDir: hutchDir, Out: zkDir})
	if err != nil {
		t.Fatal(err)
	}
	if res.LastZxid != 0x34 {
		t.Fatalf("export: %+v", res)
	}
	for _, f := range []string{zkformat.SnapshotName(0x34), "currentEpoch", "acceptedEpoch"} {
		if _, err := os.Stat(filepath.Join(zkDir, zkformat.VersionDir, f)); err != nil {
			t.Fatal(err)
		}
	}
	seed := realzk.Prepare(func(dataDir string) error {
		return os.CopyFS(filepath.Join(dataDir, zkformat.VersionDir), os.DirFS(filepath.Join(zkDir, zkformat.VersionDir)))
	})
	members := realzk.StartEnsemble(t, 3, seed)
	for _, m := range members {
		c, _, err := zk.Connect([]string{m.Addr}, 10*time.Second, zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var data []byte
		var st *zk.Stat
		deadline := time.Now().Add(30 * time.Second)
		for {
			if data, st, err = c.Get("/c"); err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil || string(data) != "x" || st.Czxid != 0x2b || st.Mzxid != 0x2d || st.Version != 1 {
			t.Fatalf("member %s: /c %q %+v (%v)", m.Addr, data, st, err)
		}
		kids, _, err := c.Children("/")
		if err != nil || !slices.Contains(kids, "n0000000039") || !slices.Contains(kids, "m2") {
			t.Fatalf("member %s: / has %v (%v)", m.Addr, kids, err)
		}
		mntr, err := realzk.FourLetterWord(m.Addr, "mntr", 10*time.Second)
		if err != nil || !strings.Contains(mntr, "zk_digest_mismatches_count\t0") && !strings.Contains(mntr, "digest_mismatches_count\t0") {
			t.Fatalf("member %s: mntr (%v):\n%s", m.Addr, err, mntr)
		}
	}
}
