package seglog

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func entry(i, term uint64) *raft.Log {
	return &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: fmt.Appendf(nil, "entry %d term %d", i, term),
		AppendedAt: time.Unix(1700000000, int64(i))}
}

func store(t testing.TB, l *Log, from, to, term uint64) {
	t.Helper()
	var batch []*raft.Log
	for i := from; i <= to; i++ {
		batch = append(batch, entry(i, term))
	}
	if err := l.StoreLogs(batch); err != nil {
		t.Fatalf("StoreLogs(%d-%d): %v", from, to, err)
	}
}

func open(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// check asserts the log holds exactly first..last, each entry of term
// termOf(i).
func check(t testing.TB, l *Log, first, last uint64, termOf func(uint64) uint64) {
	t.Helper()
	f, _ := l.FirstIndex()
	la, _ := l.LastIndex()
	if f != first || la != last {
		t.Fatalf("log holds %d-%d, want %d-%d", f, la, first, last)
	}
	for i := first; i <= last && last != 0; i++ {
		var got raft.Log
		if err := l.GetLog(i, &got); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		want := entry(i, termOf(i))
		if got.Index != i || got.Term != want.Term || !bytes.Equal(got.Data, want.Data) || !got.AppendedAt.Equal(want.AppendedAt) || got.Type != want.Type {
			t.Fatalf("GetLog(%d) = %+v, want %+v", i, got, want)
		}
	}
	var got raft.Log
	if err := l.GetLog(last+1, &got); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog(%d) past the end = %v, want ErrLogNotFound", last+1, err)
	}
}

func term1(uint64) uint64 { return 1 }

// TestLogAppendsRotatesAndDeletes: entries survive reopening across
// several segments; compaction removes whole segments behind the first
// index; a tail truncation followed by new entries of a later term reads
// back after a restart (the case raft-wal v0.4.0 fails, hashicorp/raft-wal#31).
func TestLogAppendsRotatesAndDeletes(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentEntries: 10}
	l := open(t, dir, opts)
	check(t, l, 0, 0, term1)
	if _, err := Open(dir, opts); err == nil {
		t.Fatal("a second Open of a directory in use succeeded")
	}
	for i := uint64(1); i <= 45; i += 5 {
		store(t, l, i, i+4, 1)
	}
	check(t, l, 1, 45, term1)
	if n := len(l.Files()); n != 5 {
		t.Fatalf("%d segments for 45 entries of 10 a segment, want 5", n)
	}

	if err := l.DeleteRange(1, 23); err != nil {
		t.Fatal(err)
	}
	check(t, l, 24, 45, term1)
	if n := len(l.Files()); n != 3 {
		t.Fatalf("%d segments after compacting to 24, want 3", n)
	}

	// Raft drops 38-45 (uncommitted, a new leader overwrote them) and
	// appends 38-50 of term 2.
	if err := l.DeleteRange(38, 45); err != nil {
		t.Fatal(err)
	}
	store(t, l, 38, 50, 2)
	termOf := func(i uint64) uint64 {
		if i >= 38 {
			return 2
		}
		return 1
	}
	check(t, l, 24, 50, termOf)
	l.Close()

	l = open(t, dir, opts)
	// The segment that held 24 starts at 21: its first entries are back.
	check(t, l, 21, 50, termOf)
	store(t, l, 51, 51, 2)

	if err := l.DeleteRange(1, 51); err != nil {
		t.Fatal(err)
	}
	check(t, l, 0, 0, term1)
	// After a snapshot install Raft starts the log anywhere.
	store(t, l, 900, 905, 3)
	check(t, l, 900, 905, func(uint64) uint64 { return 3 })
	if err := l.StoreLogs([]*raft.Log{entry(907, 3)}); err == nil {
		t.Fatal("a gap was accepted")
	}
	if err := l.DeleteRange(902, 903); err == nil {
		t.Fatal("a deletion from the middle was accepted")
	}
}

// TestLogTornTail: what a crash can leave at the end of the newest
// segment (a record cut short, zeros where records were being written, a
// segment created but its header never synced) is cut off at open; the
// same damage before valid records is refused, naming the file.
func TestLogTornTail(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(t *testing.T, path string, size int64)
		last    uint64 // entries left, or 0 for a refusal
		refused bool
		big     bool // entry 20 spans several sectors
	}{
		{name: "last record cut short", last: 19,
			damage: func(t *testing.T, path string, size int64) { truncate(t, path, size-3) }},
		{name: "only a record header left", last: 19,
			damage: func(t *testing.T, path string, size int64) {
				truncate(t, path, size-int64(len(entry(20, 1).Data))-bodyFixed)
			}},
		{name: "zeros appended", last: 20,
			damage: func(t *testing.T, path string, size int64) { writeAt(t, path, size, make([]byte, 4<<20)) }},
		{name: "no zeros after the records", last: 20,
			damage: func(t *testing.T, path string, size int64) { truncate(t, path, size) }},
		{name: "last record zeroed", last: 19,
			damage: func(t *testing.T, path string, size int64) {
				writeAt(t, path, size-encodedSize(entry(20, 1)), make([]byte, 64))
			}},
		{name: "the last record's last sector lost", last: 19, big: true,
			damage: func(t *testing.T, path string, size int64) {
				lost := (size - 1) / sectorSize * sectorSize
				writeAt(t, path, lost, make([]byte, size-lost))
			}},
		{name: "every sector of the last record but its first lost", last: 19, big: true,
			damage: func(t *testing.T, path string, size int64) {
				start := size - encodedSize(bigEntry(20, 1))
				lost := (start/sectorSize + 1) * sectorSize
				writeAt(t, path, lost, make([]byte, size-lost))
			}},
		// Rot in the last record is not a tear: cutting it could drop
		// an entry this member acknowledged.
		{name: "a flipped byte in the last record", refused: true,
			damage: func(t *testing.T, path string, size int64) { flip(t, path, size-2) }},
		{name: "a flipped byte in the last record's checksum", refused: true,
			damage: func(t *testing.T, path string, size int64) { flip(t, path, size-encodedSize(entry(20, 1))+5) }},
		{name: "the last record's length grown past the file", refused: true,
			damage: func(t *testing.T, path string, size int64) {
				truncate(t, path, size)
				flipBy(t, path, size-encodedSize(entry(20, 1))+1, 0x10)
			}},
		{name: "the last record's length grown into the zeros", refused: true, big: true,
			damage: func(t *testing.T, path string, size int64) {
				flipBy(t, path, size-encodedSize(bigEntry(20, 1))+2, 0x20)
			}},
		{name: "the last record's length shrunk", refused: true,
			damage: func(t *testing.T, path string, size int64) {
				flipBy(t, path, size-encodedSize(entry(20, 1))+3, 0x08)
			}},
		{name: "a middle sector of the last record lost", refused: true, big: true,
			damage: func(t *testing.T, path string, size int64) {
				start := size - encodedSize(bigEntry(20, 1))
				writeAt(t, path, (start/sectorSize+1)*sectorSize, make([]byte, sectorSize))
			}},
		{name: "a flipped byte before the last record", refused: true,
			damage: func(t *testing.T, path string, size int64) { flip(t, path, size-encodedSize(entry(20, 1))-3) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{SegmentEntries: 10}
			l := open(t, dir, opts)
			store(t, l, 1, 10, 1)
			for i := uint64(11); i < 20; i++ {
				store(t, l, i, i, 1)
			}
			last := entry(20, 1)
			if tc.big {
				last = bigEntry(20, 1)
			}
			if err := l.StoreLogs([]*raft.Log{last}); err != nil {
				t.Fatal(err)
			}
			files := l.Files()
			end := l.segs[len(l.segs)-1].end // where the records end, zeros after
			l.Close()
			path := files[len(files)-1]
			tc.damage(t, path, end)
			l2, err := Open(dir, opts)
			if tc.refused {
				if err == nil || !errors.Is(err, ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(path)) {
					t.Fatalf("Open = %v, want ErrCorrupt naming %s", err, path)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			check(t, l2, 1, tc.last, term1)
			store(t, l2, tc.last+1, tc.last+1, 2)
			check(t, l2, 1, tc.last+1, func(i uint64) uint64 {
				if i > tc.last {
					return 2
				}
				return 1
			})
		})
	}
	t.Run("a segment whose header never reached the disk", func(t *testing.T) {
		dir := t.TempDir()
		l := open(t, dir, Options{})
		store(t, l, 1, 5, 1)
		l.Close()
		if err := os.WriteFile(filepath.Join(dir, segName(6)), []byte("HUTCH"), 0o644); err != nil {
			t.Fatal(err)
		}
		l = open(t, dir, Options{})
		check(t, l, 1, 5, term1)
		store(t, l, 6, 6, 1)
	})
}

func encodedSize(l *raft.Log) int64 { return int64(len(appendRecord(nil, l))) }

// failingFS fails writes or syncs once armed.
type failingFS struct {
	osFS
	failWrite, failSync atomic.Pointer[error]
}

type failingFile struct {
	File
	fs *failingFS
}

func (f *failingFS) OpenFile(p string) (File, error) {
	file, err := f.osFS.OpenFile(p)
	return failingFile{file, f}, err
}
func (f *failingFS) CreateFile(p string) (File, error) {
	file, err := f.osFS.CreateFile(p)
	return failingFile{file, f}, err
}

func (f failingFile) WriteAt(b []byte, off int64) (int, error) {
	if e := f.fs.failWrite.Load(); e != nil {
		// A full disk takes part of the write.
		n, _ := f.File.WriteAt(b[:len(b)/2], off)
		return n, *e
	}
	return f.File.WriteAt(b, off)
}

func (f failingFile) Sync() error {
	if e := f.fs.failSync.Load(); e != nil {
		return *e
	}
	return f.File.Sync()
}

// TestLogRefusesAfterFailure: a write cut short by a full disk, or a
// failed sync, is reported and every later change refused (after a
// failed fsync the kernel may have dropped the pages, so trying again
// could acknowledge what is not on disk); after a restart the log holds
// what was acknowledged and nothing torn.
func TestLogRefusesAfterFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		arm  func(fs *failingFS)
	}{
		{"full disk", func(fs *failingFS) { e := error(syscall.ENOSPC); fs.failWrite.Store(&e) }},
		{"fsync error", func(fs *failingFS) { e := error(syscall.EIO); fs.failSync.Store(&e) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fs := &failingFS{}
			l := open(t, dir, Options{FS: fs})
			store(t, l, 1, 10, 1)
			tc.arm(fs)
			if err := l.StoreLogs([]*raft.Log{entry(11, 1), entry(12, 1)}); err == nil {
				t.Fatal("StoreLogs succeeded on a failing disk")
			}
			fs.failWrite.Store(nil)
			fs.failSync.Store(nil)
			if err := l.StoreLogs([]*raft.Log{entry(11, 1)}); err == nil {
				t.Fatal("StoreLogs succeeded after an earlier failure")
			}
			if err := l.DeleteRange(5, 10); err == nil {
				t.Fatal("DeleteRange succeeded after an earlier failure")
			}
			l.Close()
			l = open(t, dir, Options{})
			last, _ := l.LastIndex()
			if last < 10 || last > 12 {
				t.Fatalf("after restart the log ends at %d, want 10 (or the unacknowledged 11-12 if they reached the disk whole)", last)
			}
			check(t, l, 1, last, term1)
		})
	}
}

// TestStable: values survive reopening; a missing key says "not found",
// as Raft expects; a damaged file is refused.
func TestStable(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStable(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetUint64([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing key: %v, want \"not found\"", err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("127.0.0.1:1")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, stableFile+".tmp"), []byte("half a write"), 0o644)
	s, err = OpenStable(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); v != 7 || err != nil {
		t.Fatalf("CurrentTerm = %d, %v", v, err)
	}
	if v, err := s.Get([]byte("LastVoteCand")); string(v) != "127.0.0.1:1" || err != nil {
		t.Fatalf("LastVoteCand = %q, %v", v, err)
	}
	flip(t, filepath.Join(dir, stableFile), 10)
	if _, err := OpenStable(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged stable store: %v, want ErrCorrupt", err)
	}
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func flip(t *testing.T, path string, off int64) {
	t.Helper()
	flipBy(t, path, off, 0x40)
}

// bigEntry is an entry whose record spans several sectors and ends, as
// every entry hutch writes does, in non-zero bytes (zkdb's checksum).
func bigEntry(i, term uint64) *raft.Log {
	e := entry(i, term)
	e.Data = append(bytes.Repeat([]byte("x"), 3*sectorSize), e.Data...)
	return e
}

func flipBy(t *testing.T, path string, off int64, by byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= by
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzScanSegment: recovery reads any bytes without panicking, and what
// it keeps reads back as records.
func FuzzScanSegment(f *testing.F) {
	good := appendSegHeader(nil, 1)
	for i := uint64(1); i <= 3; i++ {
		good = appendRecord(good, entry(i, 1))
	}
	f.Add(good)
	f.Add(good[:len(good)-5])
	f.Add(append(good, 0, 0, 0, 0, 0, 0, 0, 0, 9))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := parseSegHeader(data); err != nil {
			return
		}
		res := scanSegment(data, 1)
		for k, off := range res.offsets {
			end := res.end
			if k+1 < len(res.offsets) {
				end = res.offsets[k+1]
			}
			body, err := checkRecord(data[off:end])
			if err != nil {
				t.Fatalf("kept record %d does not check: %v", k, err)
			}
			var l raft.Log
			_ = decodeBody(body, &l)
		}
	})
}

// countingFS counts syncs by file.
type countingFS struct {
	osFS
	mu    sync.Mutex
	syncs map[string]int
}

type countingFile struct {
	File
	fs   *countingFS
	path string
}

func (f *countingFS) OpenFile(p string) (File, error) {
	file, err := f.osFS.OpenFile(p)
	return countingFile{file, f, p}, err
}

func (f *countingFS) CreateFile(p string) (File, error) {
	file, err := f.osFS.CreateFile(p)
	return countingFile{file, f, p}, err
}

func (f countingFile) Sync() error {
	f.fs.mu.Lock()
	f.fs.syncs[filepath.Base(f.path)]++
	f.fs.mu.Unlock()
	return f.File.Sync()
}

func (f *countingFS) count() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.syncs)
}

// TestLogAppendThenSync: Append's entries read back at once and count as
// durable only after a Sync, which syncs every segment written since the
// last one (here an append that crossed into a new segment) and nothing
// else; deleting the tail takes the durable index back with it, and a
// failed Sync leaves it where it was and refuses every later change.
func TestLogAppendThenSync(t *testing.T) {
	fs := &countingFS{syncs: map[string]int{}}
	l := open(t, t.TempDir(), Options{FS: fs, SegmentEntries: 4})
	store(t, l, 1, 3, 1)
	if d := l.Durable(); d != 3 {
		t.Fatalf("Durable after StoreLogs(1-3) = %d, want 3", d)
	}
	before := fs.count()
	if err := l.Append([]*raft.Log{entry(4, 1)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]*raft.Log{entry(5, 1), entry(6, 1)}); err != nil { // a new segment
		t.Fatal(err)
	}
	check(t, l, 1, 6, term1)
	if d := l.Durable(); d != 3 {
		t.Fatalf("Durable after unsynced appends = %d, want 3", d)
	}
	if got := fs.count()[segName(1)]; got != before[segName(1)] {
		t.Fatalf("Append synced the first segment (%d syncs, %d before)", got, before[segName(1)])
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if d := l.Durable(); d != 6 {
		t.Fatalf("Durable after Sync = %d, want 6", d)
	}
	after := fs.count()
	if after[segName(1)] != before[segName(1)]+1 || after[segName(5)] < 2 {
		t.Fatalf("syncs by segment %v before the Sync %v: want one more of the first segment, and the new one's header and records", after, before)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if again := fs.count(); !maps.Equal(again, after) {
		t.Fatalf("a Sync with nothing appended synced %v (was %v)", again, after)
	}

	if err := l.DeleteRange(5, 6); err != nil {
		t.Fatal(err)
	}
	if d := l.Durable(); d != 4 {
		t.Fatalf("Durable after deleting 5-6 = %d, want 4", d)
	}
	if err := l.Append([]*raft.Log{entry(5, 2)}); err != nil {
		t.Fatal(err)
	}
	if d := l.Durable(); d != 4 {
		t.Fatalf("Durable after appending 5 again unsynced = %d, want 4", d)
	}

	failing := &failingFS{}
	l2 := open(t, t.TempDir(), Options{FS: failing})
	store(t, l2, 1, 2, 1)
	if err := l2.Append([]*raft.Log{entry(3, 1)}); err != nil {
		t.Fatal(err)
	}
	e := error(syscall.EIO)
	failing.failSync.Store(&e)
	if err := l2.Sync(); err == nil {
		t.Fatal("Sync succeeded on a failing disk")
	}
	failing.failSync.Store(nil)
	if d := l2.Durable(); d != 2 {
		t.Fatalf("Durable after a failed Sync = %d, want 2", d)
	}
	if err := l2.Append([]*raft.Log{entry(4, 1)}); err == nil {
		t.Fatal("Append succeeded after a failed Sync")
	}
	if err := l2.Sync(); err == nil {
		t.Fatal("Sync succeeded after a failed Sync")
	}
}
