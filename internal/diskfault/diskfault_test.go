package diskfault

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// writeSync writes n bytes to a new file in dir and syncs it.
func writeSync(dir, name string, n int) error {
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, n)); err != nil {
		return err
	}
	return f.Sync()
}

func TestFull(t *testing.T) {
	d := Full(t, 1<<20)
	if err := writeSync(d.Dir, "before", 4096); err != nil {
		t.Fatalf("before Fill: %v", err)
	}
	if err := d.Fill(); err != nil {
		t.Fatal(err)
	}
	if err := writeSync(d.Dir, "full", 4096); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("on the full disk: %v, want ENOSPC", err)
	}
	if err := d.Free(); err != nil {
		t.Fatal(err)
	}
	if err := writeSync(d.Dir, "after", 4096); err != nil {
		t.Fatalf("after Free: %v", err)
	}
}

func TestFailingSync(t *testing.T) {
	d := FailingSync(t, 8<<20, 64<<20)
	if err := writeSync(d.Dir, "before", 1<<20); err != nil {
		t.Fatalf("before FailSyncs: %v", err)
	}
	if err := d.FailSyncs(); err != nil {
		t.Fatal(err)
	}
	// The filesystem still has room: the write lands in the page cache,
	// and its fsync fails.
	f, err := os.Create(filepath.Join(d.Dir, "failing"))
	if err != nil {
		t.Fatalf("create on the failing disk: %v", err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 1<<20)); err != nil {
		t.Fatalf("write on the failing disk: %v (want it to land, and the sync to fail)", err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync on the failing disk: %v, want EIO", err)
	}
	f.Close()
	if err := d.Reset(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d.Dir, "before")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a reset disk still holds its files (%v)", err)
	}
	if err := writeSync(d.Dir, "after", 1<<20); err != nil {
		t.Fatalf("after Reset: %v", err)
	}
}

// TestFailingSyncDiskFills: a FailingSync disk can also just fill up.
func TestFailingSyncDiskFills(t *testing.T) {
	d := FailingSync(t, 16<<20, 8<<20)
	if err := d.Fill(); err != nil {
		t.Fatal(err)
	}
	if err := writeSync(d.Dir, "full", 64<<10); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("on the full filesystem: %v, want ENOSPC", err)
	}
	if err := d.Free(); err != nil {
		t.Fatal(err)
	}
	if err := writeSync(d.Dir, "after", 64<<10); err != nil {
		t.Fatalf("after Free: %v", err)
	}
}

// TestFailingSyncAfterFree: a FailingSync disk that was filled and freed
// can still fail its syncs. The blocks the filler took stayed allocated
// in the loop device's image, so writes reusing them landed however full
// the tmpfs under it was, and the nemesis's failing-fsync, after a full
// disk on the same node, did not bite (the node went on).
func TestFailingSyncAfterFree(t *testing.T) {
	d := FailingSync(t, 80<<20, 64<<20)
	if err := d.Fill(); err != nil {
		t.Fatal(err)
	}
	// A member's fsyncs commit ext4's journal, which writes the filler's
	// blocks out to the image first (data=ordered).
	syscall.Sync()
	if err := d.Free(); err != nil {
		t.Fatal(err)
	}
	syscall.Sync() // the member restarted on the freed disk, syncing
	if err := d.FailSyncs(); err != nil {
		t.Fatal(err)
	}
	// As a log appends: 4 MB in 64 KB writes, each synced.
	f, err := os.Create(filepath.Join(d.Dir, "log"))
	if err == nil {
		defer f.Close()
		for i := 0; i < 64 && err == nil; i++ {
			if _, err = f.Write(make([]byte, 64<<10)); err == nil {
				err = f.Sync()
			}
		}
	}
	if err == nil {
		t.Fatal("4 MB written and synced after Fill, Free and FailSyncs: want a failure")
	}
	t.Logf("failed: %v", err)
}
