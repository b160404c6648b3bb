package zkformat

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"os"
	"slices"
)

// Entry is one transaction read from a log.
type Entry struct {
	Offset int64 // where the entry starts in its file
	Header TxnHeader
	Txn    any        // one of the *...Txn records of this package
	Digest *TxnDigest // 3.6+, nil without one
}

// ErrIncomplete ends a log whose last entry is not whole: a write cut
// short (a crash or kill mid-write; ZooKeeper acknowledged none of it,
// since it answers only once the entry is on disk) or, following a live
// log, an entry still being written. The preceding entries stand.
var ErrIncomplete = errors.New("log ends inside an entry")

// logHeaderSize is FileHeader: magic, version, dbid.
const logHeaderSize = 16

// LogReader reads a transaction log entry by entry (FileTxnIterator),
// checking each entry's Adler-32.
type LogReader struct {
	r   *bufio.Reader
	c   io.Closer
	off int64
	// Live makes an incomplete entry ErrIncomplete at once, without
	// looking at what follows: the log is being written, and the rest
	// will come.
	Live bool
	buf  []byte
}

// OpenLog opens a log file and reads its header.
func OpenLog(path string) (*LogReader, error) { return OpenLogAt(path, 0) }

// OpenLogAt opens a log file, checks its header and goes on from offset
// off (an entry boundary from Offset, or 0 for the first entry).
func OpenLogAt(path string, off int64) (*LogReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	lr, err := NewLogReader(f)
	if err == nil && off > logHeaderSize {
		if _, err = f.Seek(off, io.SeekStart); err == nil {
			lr.r.Reset(f)
			lr.off = off
		}
	}
	if err != nil {
		f.Close()
		return nil, named(err, path)
	}
	lr.c = f
	return lr, nil
}

// NewLogReader reads a log's header from r.
func NewLogReader(r io.Reader) (*LogReader, error) {
	lr := &LogReader{r: bufio.NewReaderSize(r, 64<<10)}
	var hdr [logHeaderSize]byte
	n, err := io.ReadFull(lr.r, hdr[:])
	if err != nil {
		return nil, &Error{Offset: int64(n), Msg: "log header", Err: ErrTruncated}
	}
	if m := binary.BigEndian.Uint32(hdr[:4]); m != logMagic {
		return nil, &Error{Msg: fmt.Sprintf("not a ZooKeeper transaction log (magic %#x)", m)}
	}
	if v := int32(binary.BigEndian.Uint32(hdr[4:8])); v != fileVersion {
		return nil, &Error{Offset: 4, Msg: fmt.Sprintf("log version %d (only %d exists)", v, fileVersion)}
	}
	lr.off = logHeaderSize
	return lr, nil
}

// Offset is where the next entry starts.
func (lr *LogReader) Offset() int64 { return lr.off }

// Close closes the file OpenLog opened.
func (lr *LogReader) Close() error {
	if lr.c != nil {
		return lr.c.Close()
	}
	return nil
}

// Next returns the next entry. At the log's end it returns io.EOF: the file
// ends, or what follows is the zeros ZooKeeper preallocates. An entry that
// is not whole gives an *Error wrapping ErrIncomplete at its offset, and
// so does an empty one, as long as nothing but zeros follows it; if data
// follows, the log is corrupt. A checksum that does not match is
// ErrChecksum, a transaction type this package does not know
// ErrUnknownTxn. After an error Next should not be called again.
func (lr *LogReader) Next() (*Entry, error) {
	at := lr.off
	var head [12]byte
	n, err := io.ReadFull(lr.r, head[:])
	if err == io.EOF {
		return nil, io.EOF
	}
	if err != nil {
		return nil, lr.incomplete(at, at+int64(n))
	}
	sum := binary.BigEndian.Uint64(head[:8])
	size := int32(binary.BigEndian.Uint32(head[8:]))
	if size == 0 {
		if sum == 0 {
			// Preallocated zeros: the end, if they go on to the end.
			if lr.Live {
				return nil, io.EOF
			}
			if y, err := lr.nonZeroAfter(at + 12); err != nil || y < 0 {
				return nil, errOr(err, io.EOF)
			} else {
				return nil, &Error{Offset: at, Msg: fmt.Sprintf("log ends in zeros here, but data follows at offset %d", y)}
			}
		}
		return nil, lr.incomplete(at, at+12)
	}
	if size < 0 || size > maxRecordBytes {
		return nil, &Error{Offset: at + 8, Msg: fmt.Sprintf("entry length %d", size)}
	}
	var got int
	lr.buf, got, err = readChunked(lr.r, lr.buf[:0], int(size)+1)
	if err != nil {
		return nil, lr.incomplete(at, at+12+int64(got))
	}
	if lr.buf[size] != 'B' {
		return nil, lr.incomplete(at, at+12+int64(size)+1)
	}
	body := lr.buf[:size]
	if got := adler32.Checksum(body); uint64(got) != sum {
		return nil, &Error{Offset: at, Msg: fmt.Sprintf("entry checksum %#x, stored %#x", got, sum), Err: ErrChecksum}
	}
	lr.off = at + 12 + int64(size) + 1
	h, rec, dig, err := DecodeEntry(body)
	if err != nil {
		return nil, &Error{Offset: at, Msg: fmt.Sprintf("entry zxid %#x", h.Zxid), Err: err}
	}
	return &Entry{Offset: at, Header: h, Txn: rec, Digest: dig}, nil
}

// readChunked reads n bytes into buf, growing it a chunk at a time so that
// a corrupt length runs into the end of the file before it allocates much.
func readChunked(r io.Reader, buf []byte, n int) ([]byte, int, error) {
	const chunk = 64 << 10
	for len(buf) < n {
		k := min(n-len(buf), chunk)
		buf = slices.Grow(buf, k)
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+k])
		buf = buf[:len(buf)+m]
		if err != nil {
			return buf, len(buf), err
		}
	}
	return buf, n, nil
}

func errOr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// incomplete reports the entry at `at` as not whole, having read up to
// `end`; unless the log is live, only zeros may follow.
func (lr *LogReader) incomplete(at, end int64) error {
	if !lr.Live {
		y, err := lr.nonZeroAfter(end)
		if err != nil {
			return err
		}
		if y >= 0 {
			return &Error{Offset: at, Msg: fmt.Sprintf("entry is not whole, yet data follows at offset %d", y)}
		}
	}
	return &Error{Offset: at, Msg: "entry", Err: ErrIncomplete}
}

// nonZeroAfter reads the rest of the log, from offset from, and returns the
// offset of its first non-zero byte, or -1.
func (lr *LogReader) nonZeroAfter(from int64) (int64, error) {
	off := from
	buf := make([]byte, 64<<10)
	for {
		n, err := lr.r.Read(buf)
		for i, b := range buf[:n] {
			if b != 0 {
				return off + int64(i), nil
			}
		}
		off += int64(n)
		if err == io.EOF {
			return -1, nil
		}
		if err != nil {
			return 0, &Error{Offset: off, Err: err}
		}
	}
}
