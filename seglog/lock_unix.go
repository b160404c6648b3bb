//go:build unix

package seglog

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive lock on dir's lock file, so that a second
// process (a second hutch on the same data directory, or a conversion
// while the member runs) is refused instead of writing the same segments.
// The lock goes when the returned file is closed, or the process dies.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("seglog: %s is in use by another process (%w)", dir, err)
	}
	return f, nil
}
