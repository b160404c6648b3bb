//go:build !unix

package seglog

import (
	"os"
	"path/filepath"
)

// lockDir opens dir's lock file; without flock it locks nothing.
func lockDir(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
}
