package zkimport

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkexport"
	"github.com/hutchzk/hutch/zkformat"
)

// BenchmarkImport imports a ZooKeeper snapshot of 100,000 znodes (100
// parents of 1,000 children, 100 bytes of data each), written by
// zkexport in ZooKeeper 3.8's format, into a new data directory. It
// reports the heap the import holds at its end beside the snapshot's
// size: go test -run XXX -bench Import -benchtime 3x ./zkimport
func BenchmarkImport(b *testing.B) {
	dir := b.TempDir()
	snapDir := filepath.Join(dir, "zk", zkformat.VersionDir)
	if err := os.MkdirAll(snapDir, 0o755); err != nil {
		b.Fatal(err)
	}
	t := tree.New()
	open := []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
	zxid := int64(0)
	data := make([]byte, 100)
	for g := range 100 {
		zxid++
		t.Apply(&tree.Txn{Zxid: zxid, Op: wire.OpCreate, Req: &wire.CreateRequest{Path: fmt.Sprintf("/g%03d", g), ACL: open}})
		for i := range 1000 {
			zxid++
			t.Apply(&tree.Txn{Zxid: zxid, Op: wire.OpCreate, Req: &wire.CreateRequest{Path: fmt.Sprintf("/g%03d/n%06d", g, i), Data: data, ACL: open}})
		}
	}
	f, err := os.Create(filepath.Join(snapDir, zkformat.SnapshotName(t.LastZxid())))
	if err != nil {
		b.Fatal(err)
	}
	if err := zkexport.WriteSnapshot(f, t, false); err != nil {
		b.Fatal(err)
	}
	fi, _ := f.Stat()
	f.Close()
	t = nil
	b.ResetTimer()
	for i := range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := Import(Options{Source: Source{DataDir: filepath.Join(dir, "zk")}, Output: Output{Dir: filepath.Join(dir, fmt.Sprint("out", i))}})
		if err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(r.Nodes), "znodes")
		b.ReportMetric(float64(fi.Size())/(1<<20), "snapshot-MB")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), "alloc-MB/op")
	}
}
