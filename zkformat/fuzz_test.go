package zkformat

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// seeds adds every file of a testdata directory ZooKeeper 3.8.0 wrote.
func seeds(f *testing.F, dir string) {
	f.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

type countingHandler struct{ sessions, nodes int }

func (c *countingHandler) Session(int64, int32) error { c.sessions++; return nil }
func (c *countingHandler) Node(string, []byte, []wire.ACL, tree.StoredStat) error {
	c.nodes++
	return nil
}

// FuzzReadSnapshot: any bytes give a snapshot or an *Error, never a panic
// or a huge allocation.
func FuzzReadSnapshot(f *testing.F) {
	seeds(f, "testdata/zk38/data")
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := ReadSnapshot(bytes.NewReader(b), &countingHandler{})
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("error of another kind: %v", err)
		}
	})
}

// FuzzLogReader: any bytes read as a log end in io.EOF or an error, after
// entries whose offsets only grow.
func FuzzLogReader(f *testing.F) {
	seeds(f, "testdata/zk38/log")
	f.Fuzz(func(t *testing.T, b []byte) {
		lr, err := NewLogReader(bytes.NewReader(b))
		if err != nil {
			return
		}
		last := int64(-1)
		for i := 0; i < 10000; i++ {
			e, err := lr.Next()
			if err != nil {
				var fe *Error
				if err != io.EOF && !errors.As(err, &fe) {
					t.Fatalf("error of another kind: %v", err)
				}
				return
			}
			if e.Offset <= last || lr.Offset() > int64(len(b)) {
				t.Fatalf("entry at %d after %d, next at %d of %d", e.Offset, last, lr.Offset(), len(b))
			}
			last = e.Offset
		}
	})
}

// FuzzDecodeEntry: any entry bytes decode or fail, never panic.
func FuzzDecodeEntry(f *testing.F) {
	lr, err := OpenLog("testdata/zk38/log/log.23")
	if err != nil {
		f.Fatal(err)
	}
	defer lr.Close()
	for {
		at := lr.Offset()
		if _, err := lr.Next(); err != nil {
			break
		}
		b, _ := os.ReadFile("testdata/zk38/log/log.23")
		f.Add(b[at+12 : lr.Offset()-1])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _, _ = DecodeEntry(b)
	})
}

// FuzzSnappy: snappy-java streams of any bytes fail cleanly.
func FuzzSnappy(f *testing.F) {
	f.Add(append(append([]byte{}, snappyMagic...), 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 3, 2, 4, 'h', 'i'))
	seeds(f, "testdata/zk38snappy")
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decompress(bytes.NewReader(b), "snapshot.1.snappy")
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(r, 1<<20))
	})
}

// TestSnappySnapshot reads a snapshot ZooKeeper 3.8.0 compressed with
// snappy-java (zookeeper.snapshot.compression.method=snappy).
func TestSnappySnapshot(t *testing.T) {
	f, err := OpenSnapshot("testdata/zk38snappy/snapshot.13.snappy")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var c countingHandler
	tr, err := ReadSnapshot(f, &c)
	if err != nil {
		t.Fatal(err)
	}
	if c.sessions != 1 || c.nodes < 5 || tr.Digest == nil || tr.Digest.Zxid < 0x13 {
		t.Fatalf("%d sessions, %d nodes, trailer %+v", c.sessions, c.nodes, tr)
	}
}
