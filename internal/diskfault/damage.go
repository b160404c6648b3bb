package diskfault

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
)

// logFiles lists a hutch data directory's log files, newest segment
// last: seglog's segments, or a bolt or raft-wal store's files.
func logFiles(dataDir string) []string {
	var files []string
	for _, pattern := range []string{"log/*.seg", "raft.db", "wal/*.wal"} {
		m, _ := filepath.Glob(filepath.Join(dataDir, pattern))
		files = append(files, m...)
	}
	sort.Strings(files)
	return files
}

// written returns how far b holds data: up to its last non-zero byte (a
// store may zero-fill its files ahead of what it wrote).
func written(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0 {
			return i + 1
		}
	}
	return 0
}

// newestLog reads the newest log file of dataDir, and says how far it
// holds data; it must hold records past a segment's 64-byte header.
func newestLog(dataDir string) (path string, b []byte, end int, err error) {
	files := logFiles(dataDir)
	if len(files) == 0 {
		return "", nil, 0, errors.New("diskfault: no log files in " + dataDir)
	}
	path = files[len(files)-1]
	if b, err = os.ReadFile(path); err != nil {
		return "", nil, 0, err
	}
	if end = written(b); end <= 64 {
		return "", nil, 0, fmt.Errorf("diskfault: %s holds no records", path)
	}
	return path, b, end, nil
}

// FlipByte changes one byte inside the records of the newest log file of
// dataDir (past its first 64 bytes, a segment's header, and before the
// zeros a store allocates ahead), as bit rot does, and says where.
func FlipByte(dataDir string, rng *rand.Rand) (string, error) {
	path, b, end, err := newestLog(dataDir)
	if err != nil {
		return "", err
	}
	off := 64 + rng.IntN(end-64)
	b[off] ^= byte(1 + rng.IntN(255))
	if err := writeBack(path, b[off:off+1], int64(off)); err != nil {
		return "", err
	}
	return fmt.Sprintf("byte %d of %s (%d written)", off, path, end), nil
}

// TearTail zeroes the newest log file of dataDir from the last sector
// boundary before the end of what was written, as a crash leaves a write
// whose last sector never reached the disk (a disk persists whole 512-byte
// sectors), and says where. It takes a rng, unused, to share FlipByte's type.
func TearTail(dataDir string, _ *rand.Rand) (string, error) {
	path, _, end, err := newestLog(dataDir)
	if err != nil {
		return "", err
	}
	lost := max(64, (end-1)/sectorSize*sectorSize)
	if err := writeBack(path, make([]byte, end-lost), int64(lost)); err != nil {
		return "", err
	}
	return fmt.Sprintf("bytes %d to %d written to %s zeroed", lost, end, path), nil
}

// sectorSize is the unit a disk writes whole.
const sectorSize = 512

func writeBack(path string, b []byte, off int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, off); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
