package zkimport

import (
	"errors"
	"hash/adler32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/zkdb"
	"github.com/hutchzk/hutch/zkformat"
)

// fixture copies the files ZooKeeper 3.8.0 wrote (zkformat's testdata: a
// standalone server with snapCount 20 and a separate dataLogDir, four
// snapshots and four logs) into a temporary directory a test may damage.
func fixture(tb testing.TB) Source {
	tb.Helper()
	dir := tb.TempDir()
	for _, sub := range []string{"data", "log"} {
		src := filepath.Join("..", "zkformat", "testdata", "zk38", sub)
		dst := filepath.Join(dir, sub, zkformat.VersionDir)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			tb.Fatal(err)
		}
		ents, err := os.ReadDir(src)
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				tb.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return Source{DataDir: filepath.Join(dir, "data"), LogDir: filepath.Join(dir, "log")}
}

func TestImportZooKeeper38Files(t *testing.T) {
	src := fixture(t)
	out := filepath.Join(t.TempDir(), "hutch")
	r, err := Import(Options{Source: src, Output: Output{Dir: out}})
	if err != nil {
		t.Fatal(err)
	}
	// ZooKeeper's last log entry (zxid 0x34, a closeSession) carries the
	// digest 82961850779; the replay checked it and every one before it
	// from the snapshot's digest at 0x2d on.
	if r.LastZxid != 0x34 || r.ZKDigest != 82961850779 || r.Digests != 7 || r.Transactions != 7 {
		t.Fatalf("report %+v", r)
	}
	if r.Nodes != 47 || r.Sessions != 1 || r.Ephemerals != 1 || len(r.Warnings) != 0 {
		t.Fatalf("report %+v", r)
	}
	// The output is a data directory whose state is that tree.
	db := zkdb.New(zkdb.Config{TickTime: 1e9, Sink: zkdb.Discard{}})
	if err := raftstore.ReadState(out, db); err != nil {
		t.Fatal(err)
	}
	if d, z := db.Digest(); z != 0x34 || db.LastZxid() != 0x34 {
		t.Fatalf("restored zxid %#x digest %x", z, d)
	}
	timeout, pw, ok := db.Session(0x100000ee8b10000)
	if !ok || timeout.Milliseconds() != 10000 || string(pw) != string(zkformat.SessionPassword(0x100000ee8b10000)) {
		t.Fatalf("session: %v %x %v", timeout, pw, ok)
	}
	// A second import into the same directory is refused.
	if _, err := Import(Options{Source: src, Output: Output{Dir: out}}); err == nil || !strings.Contains(err.Error(), "already holds files") {
		t.Fatalf("import over an import: %v", err)
	}
}

// TestImportRefusesDamage: each damage gives an error that names the file
// (and the offset where there is one), and no output.
func TestImportRefusesDamage(t *testing.T) {
	cases := []struct {
		name   string
		damage func(tb testing.TB, src Source)
		want   []string
	}{
		{"flipped byte in a log entry", func(tb testing.TB, src Source) {
			flip(tb, filepath.Join(src.LogDir, zkformat.VersionDir, "log.2f"), 60)
		}, []string{"log.2f", "offset 16", "checksum"}},
		{"log cut short in the middle", func(tb testing.TB, src Source) {
			// log.23 holds 0x23..0x2e; cut inside the entry of 0x2b.
			cut(tb, filepath.Join(src.LogDir, zkformat.VersionDir, "log.23"), 900)
			remove(tb, filepath.Join(src.DataDir, zkformat.VersionDir, "snapshot.2d"))
		}, []string{"log.2f", "missing"}},
		{"missing log in the middle", func(tb testing.TB, src Source) {
			remove(tb, filepath.Join(src.LogDir, zkformat.VersionDir, "log.23"))
		}, []string{"log.2f", "transaction 0x2e is missing"}},
		{"flipped byte in the only snapshot", func(tb testing.TB, src Source) {
			for _, s := range []string{"snapshot.0", "snapshot.10", "snapshot.21"} {
				remove(tb, filepath.Join(src.DataDir, zkformat.VersionDir, s))
			}
			flip(tb, filepath.Join(src.DataDir, zkformat.VersionDir, "snapshot.2d"), 100)
		}, []string{"snapshot.2d", "seal", "checksum"}},
		{"unknown transaction type", func(tb testing.TB, src Source) {
			retype(tb, filepath.Join(src.LogDir, zkformat.VersionDir, "log.2f"))
		}, []string{"log.2f", "unknown transaction type 99"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := fixture(t)
			c.damage(t, src)
			out := filepath.Join(t.TempDir(), "hutch")
			_, err := Import(Options{Source: src, Output: Output{Dir: out}})
			if err == nil {
				t.Fatal("import succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not say %q", err, w)
				}
			}
			if _, serr := os.Stat(out); !errors.Is(serr, os.ErrNotExist) {
				t.Fatalf("output left behind: %v", serr)
			}
			left, _ := os.ReadDir(filepath.Dir(out))
			if len(left) != 0 {
				t.Fatalf("files left beside the output: %v", left)
			}
		})
	}
}

// TestImportFallsBackPastCutSnapshot: a snapshot cut short (a crash while
// ZooKeeper wrote it) is passed over for the one before, as ZooKeeper does,
// with a warning; the logs cover the difference.
func TestImportFallsBackPastCutSnapshot(t *testing.T) {
	src := fixture(t)
	cut(t, filepath.Join(src.DataDir, zkformat.VersionDir, "snapshot.2d"), 700)
	r, err := Import(Options{Source: src, Output: Output{Dir: filepath.Join(t.TempDir(), "out")}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(r.Snapshot, "snapshot.21") || r.ZKDigest != 82961850779 {
		t.Fatalf("report %+v", r)
	}
	// The log's digest after 0x2b (/c, created with the container flag on
	// a plain create) is ZooKeeper's own slip: it counts /c as a container
	// and stores it as a plain node; the next digest matches again.
	if len(r.Warnings) != 2 || !strings.Contains(r.Warnings[0], "snapshot.2d") || !strings.Contains(r.Warnings[1], "after zxid 0x2b") {
		t.Fatalf("warnings %q", r.Warnings)
	}
}

func flip(tb testing.TB, path string, off int64) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	b[off] ^= 0x20
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

func cut(tb testing.TB, path string, size int64) {
	tb.Helper()
	if err := os.Truncate(path, size); err != nil {
		tb.Fatal(err)
	}
}

func remove(tb testing.TB, path string) {
	tb.Helper()
	if err := os.Remove(path); err != nil {
		tb.Fatal(err)
	}
}

// retype rewrites the type of the first entry of a log to 99 and fixes its
// checksum, so only the type is wrong.
func retype(tb testing.TB, path string) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	const entry = 16 // after the file header: crc(8) len(4) body
	size := int(uint32(b[entry+8])<<24 | uint32(b[entry+9])<<16 | uint32(b[entry+10])<<8 | uint32(b[entry+11]))
	body := b[entry+12 : entry+12+size]
	body[8+4+8+8+3] = 99 // clientId, cxid, zxid, time, then the type's low byte
	sum := adler(body)
	for i := 0; i < 8; i++ {
		b[entry+i] = byte(uint64(sum) >> (56 - 8*i))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

func adler(b []byte) uint32 { return adler32.Checksum(b) }
