package zkformat

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/snappy"
)

// VersionDir is the subdirectory of dataDir and dataLogDir that holds
// ZooKeeper's files (FileTxnSnapLog.version + VERSION).
const VersionDir = "version-2"

// File is one snapshot or log in a directory.
type File struct {
	Path string
	Zxid int64 // from the name: the snapshot's last zxid, the log's first
}

// zxidFromName is Util.getZxidFromName: prefix "." hex zxid, any suffix.
func zxidFromName(name, prefix string) (int64, bool) {
	parts := strings.Split(name, ".")
	if len(parts) < 2 || parts[0] != prefix {
		return 0, false
	}
	z, err := strconv.ParseUint(parts[1], 16, 64)
	if err != nil {
		return 0, false
	}
	return int64(z), true
}

// List returns the files of dir named prefix.<hex zxid>[.ext] ("snapshot"
// or "log"), by zxid ascending.
func List(dir, prefix string) ([]File, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []File
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		if z, ok := zxidFromName(e.Name(), prefix); ok {
			out = append(out, File{Path: filepath.Join(dir, e.Name()), Zxid: z})
		}
	}
	slices.SortFunc(out, func(a, b File) int {
		if a.Zxid != b.Zxid {
			return cmp.Compare(a.Zxid, b.Zxid)
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out, nil
}

// SnapshotName is the name ZooKeeper gives a snapshot whose last zxid is
// zxid (Util.makeSnapshotName, uncompressed).
func SnapshotName(zxid int64) string { return "snapshot." + strconv.FormatInt(zxid, 16) }

// LogName is the name of a log whose first entry has zxid.
func LogName(zxid int64) string { return "log." + strconv.FormatInt(zxid, 16) }

// OpenSnapshot opens a snapshot file, decompressing it by its name as
// ZooKeeper does (SnapStream.getStreamMode): ".gz" gzip, ".snappy"
// snappy-java's stream, anything else plain.
func OpenSnapshot(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := Decompress(f, filepath.Base(path))
	if err != nil {
		f.Close()
		return nil, &Error{File: path, Msg: "compressed stream", Err: err}
	}
	return struct {
		io.Reader
		io.Closer
	}{r, f}, nil
}

// Decompress wraps r in the decompressor a snapshot named name needs.
func Decompress(r io.Reader, name string) (io.Reader, error) {
	ext := ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 && strings.Count(name, ".") >= 2 {
		ext = strings.ToLower(name[i+1:])
	}
	switch ext {
	case "gz":
		return gzip.NewReader(bufio.NewReader(r))
	case "snappy":
		return newSnappyReader(r)
	}
	return r, nil
}

// snappy-java's stream (SnappyOutputStream): an 8-byte magic and two
// versions, then blocks, each a big-endian length and one raw snappy block.
var snappyMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

type snappyReader struct {
	r   *bufio.Reader
	buf []byte // decoded, not yet read
	raw []byte
	dec []byte
}

func newSnappyReader(r io.Reader) (*snappyReader, error) {
	s := &snappyReader{r: bufio.NewReader(r)}
	var hdr [16]byte
	if _, err := io.ReadFull(s.r, hdr[:]); err != nil {
		return nil, fmt.Errorf("snappy header: %w", err)
	}
	if !bytes.Equal(hdr[:8], snappyMagic) {
		return nil, errors.New("not a snappy-java stream")
	}
	return s, nil
}

func (s *snappyReader) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		var n [4]byte
		if _, err := io.ReadFull(s.r, n[:]); err != nil {
			if err == io.ErrUnexpectedEOF {
				return 0, ErrTruncated
			}
			return 0, err // io.EOF: the stream's end
		}
		// A second stream's header may follow the first (snappy-java
		// reads concatenated streams).
		if bytes.Equal(n[:], snappyMagic[:4]) {
			var rest [12]byte
			if _, err := io.ReadFull(s.r, rest[:]); err != nil || !bytes.Equal(rest[:4], snappyMagic[4:]) {
				return 0, errors.New("snappy: bad block header")
			}
			continue
		}
		size := binary.BigEndian.Uint32(n[:])
		if size > maxRecordBytes {
			return 0, errors.New("snappy: bad block length")
		}
		s.raw = slices.Grow(s.raw[:0], int(size))[:size]
		if _, err := io.ReadFull(s.r, s.raw); err != nil {
			return 0, ErrTruncated
		}
		var err error
		if s.dec, err = snappy.Decode(s.dec[:cap(s.dec)], s.raw); err != nil {
			return 0, fmt.Errorf("snappy: %w", err)
		}
		s.buf = s.dec
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}
