// Package diskfault gives a test real disk faults, made by the kernel
// rather than imitated: a filesystem that fills up (a tmpfs of a set size)
// and one whose fsync fails while its writes still land (ext4 on a loop
// device over a small tmpfs: once the tmpfs is full the loop device's
// writes fail, and with them writeback and fsync, as on a failing or
// thin-provisioned disk; ext4 then aborts its journal and refuses every
// write, as it would on real hardware). Both need root; where they
// cannot be made the test is skipped, or fails under CI=true.
package diskfault

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Disk is a filesystem mounted for one test at Dir.
type Disk struct {
	// Dir is where the filesystem is mounted: put a member's data
	// directory in it.
	Dir string
	// back is the tmpfs whose filling makes the fault: Dir itself for a
	// full disk, the loop device's backing store for a failing one.
	back string
	loop string // the loop device, "" for a plain tmpfs
	img  string // the loop device's image, in back

	mu      sync.Mutex // guards fillers
	fillers []string   // files Fill and FailSyncs wrote
}

// unavailable skips the test, or fails it under CI=true, where a disk
// cannot be made.
func unavailable(tb testing.TB, what string, err error) {
	tb.Helper()
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		tb.Fatalf("diskfault: cannot make %s (root and mount are needed; CI runs as root): %v", what, err)
	}
	tb.Skipf("diskfault: cannot make %s (root and mount are needed): %v", what, err)
}

// mountTmpfs mounts a tmpfs of size bytes on a new directory.
func mountTmpfs(tb testing.TB, size int64) (string, error) {
	dir, err := os.MkdirTemp("", "hutch-disk-")
	if err != nil {
		return "", err
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		os.Remove(dir)
		return "", err
	}
	tb.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			tb.Errorf("diskfault: unmounting %s: %v", dir, err)
		}
		os.Remove(dir)
	})
	return dir, nil
}

// Full mounts a tmpfs of size bytes: Fill makes it full, and every write
// to it then fails with ENOSPC until Free.
func Full(tb testing.TB, size int64) *Disk {
	tb.Helper()
	dir, err := mountTmpfs(tb, size)
	if err != nil {
		unavailable(tb, "a small tmpfs", err)
	}
	return &Disk{Dir: dir, back: dir}
}

// FailingSync mounts an ext4 filesystem of fsSize bytes whose loop
// device is backed by a tmpfs of backSize (backSize must hold what the
// test writes before Fill, and ext4's own metadata, a few MB). Before
// Fill it is an ordinary disk; after it, writes still return at once (the
// page cache takes them) but the next fsync fails with EIO, and ext4
// refuses writes from then on. Free does not heal it: Reset does, with
// an empty filesystem, as replacing the disk would.
func FailingSync(tb testing.TB, backSize, fsSize int64) *Disk {
	tb.Helper()
	back, err := mountTmpfs(tb, backSize)
	if err != nil {
		unavailable(tb, "a small tmpfs", err)
	}
	d := &Disk{back: back, img: filepath.Join(back, "disk.img")}
	d.Dir, err = os.MkdirTemp("", "hutch-ext4-")
	if err != nil {
		tb.Fatal(err)
	}
	if err := d.format(fsSize); err != nil {
		unavailable(tb, "ext4 on a loop device", err)
	}
	tb.Cleanup(func() {
		if err := d.unmount(); err != nil {
			tb.Errorf("diskfault: %v", err)
		}
		os.Remove(d.Dir)
	})
	return d
}

// format makes a fresh ext4 image, attaches it and mounts it at Dir.
func (d *Disk) format(size int64) error {
	f, err := os.Create(d.img)
	if err != nil {
		return err
	}
	err = f.Truncate(size) // sparse: the tmpfs holds only what is written
	f.Close()
	if err != nil {
		return err
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", d.img).CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4: %v: %s", err, out)
	}
	out, err := exec.Command("losetup", "--find", "--show", d.img).Output()
	if err != nil {
		return fmt.Errorf("losetup: %v", err)
	}
	d.loop = strings.TrimSpace(string(out))
	if err := syscall.Mount(d.loop, d.Dir, "ext4", 0, "errors=remount-ro"); err != nil {
		exec.Command("losetup", "--detach", d.loop).Run()
		d.loop = ""
		return fmt.Errorf("mount %s: %v", d.loop, err)
	}
	return nil
}

// unmount detaches the ext4 filesystem and its loop device.
func (d *Disk) unmount() error {
	if d.loop == "" {
		return nil
	}
	var errs []error
	if err := syscall.Unmount(d.Dir, syscall.MNT_DETACH); err != nil {
		errs = append(errs, fmt.Errorf("unmounting %s: %w", d.Dir, err))
	}
	if out, err := exec.Command("losetup", "--detach", d.loop).CombinedOutput(); err != nil {
		errs = append(errs, fmt.Errorf("detaching %s: %v: %s", d.loop, err, out))
	}
	d.loop = ""
	return errors.Join(errs...)
}

// Fill fills the filesystem at Dir: every write that needs a new block
// fails with ENOSPC from now on, until Free.
func (d *Disk) Fill() error { return d.fill(filepath.Join(d.Dir, ".diskfault-filler")) }

// FailSyncs fills the tmpfs behind a FailingSync disk: writes still land
// in the page cache, and the next fsync fails (EIO, or ENOSPC where ext4
// knows why), after which ext4 refuses every write. Free does not heal
// it; Reset does.
func (d *Disk) FailSyncs() error {
	if d.loop == "" {
		return errors.New("diskfault: only a FailingSync disk can fail its syncs")
	}
	return d.fill(filepath.Join(d.back, "filler"))
}

// fill writes path until its filesystem is full.
func (d *Disk) fill(path string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fillers = append(d.fillers, path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return nil
		}
		return err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			return err
		}
	}
	// Smaller writes take the last partial blocks.
	for _, n := range []int{4096, 512, 1} {
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				break
			}
		}
	}
	return nil
}

// Free removes what Fill and FailSyncs wrote, so a full disk takes
// writes again.
func (d *Disk) Free() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, p := range d.fillers {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	d.fillers = nil
	return errors.Join(errs...)
}

// Reset frees the disk and, for a failing one, replaces its filesystem
// with an empty one (everything in Dir is gone), as an operator replaces
// a disk that failed.
func (d *Disk) Reset() error {
	if err := d.Free(); err != nil {
		return err
	}
	if d.loop == "" {
		return nil
	}
	fi, err := os.Stat(d.img)
	if err != nil {
		return err
	}
	size := fi.Size()
	if err := d.unmount(); err != nil {
		return err
	}
	if err := os.Remove(d.img); err != nil {
		return err
	}
	return d.format(size)
}

var (
	canMountOnce sync.Once
	canMountErr  error
)

// CanMount reports whether this process can make the disks (root, mount,
// a loop device, mkfs.ext4), trying once. Where it cannot, a test under
// CI=true fails: the disk faults must not be skipped there.
func CanMount(tb testing.TB) bool {
	tb.Helper()
	canMountOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hutch-canmount-")
		if err != nil {
			canMountErr = err
			return
		}
		defer os.Remove(dir)
		if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1048576"); err != nil {
			canMountErr = err
			return
		}
		defer syscall.Unmount(dir, syscall.MNT_DETACH)
		for _, tool := range []string{"losetup", "mkfs.ext4"} {
			if _, err := exec.LookPath(tool); err != nil {
				canMountErr = err
				return
			}
		}
		if _, err := os.Stat("/dev/loop-control"); err != nil {
			canMountErr = err
		}
	})
	if canMountErr == nil {
		return true
	}
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		tb.Fatalf("diskfault: cannot make disks for the disk faults (root, mount and loop devices are needed; CI runs as root): %v", canMountErr)
	}
	tb.Logf("diskfault: no disk faults: %v", canMountErr)
	return false
}
