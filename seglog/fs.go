package seglog

import (
	"os"
	"path/filepath"
)

// File is what the log needs of an open segment file.
type File interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	// Sync makes what was written durable (fdatasync where there is one).
	Sync() error
	Truncate(size int64) error
	Close() error
}

// FS opens segment files. The operating system's is the default; tests
// wrap it to make writes and syncs fail as a full or failing disk does.
type FS interface {
	OpenFile(path string) (File, error)   // an existing segment, to read and append
	CreateFile(path string) (File, error) // a new segment; it must not exist
}

type osFS struct{}

func (osFS) OpenFile(path string) (File, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) CreateFile(path string) (File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// osFile is an *os.File whose Sync is a data sync.
type osFile struct{ *os.File }

func (f osFile) Sync() error { return datasync(f.File) }

// SyncDir makes a directory's entries (a file created, removed or
// renamed) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteFileAtomic replaces path with b: written to path.tmp, synced,
// renamed over path, and the directory synced, so that a crash leaves
// the old content or the new, whole, and at worst a stray path.tmp.
func WriteFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}
