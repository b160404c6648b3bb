package seglog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// A segment file is a header and then records, back to back:
//
//	header: "HUTCHSEG" | u64 first index | u32 version | u32 CRC-32C of the 20 bytes before it
//	record: u32 body length | u32 CRC-32C of the body | body
//	body:   u64 index | u64 term | u8 type | i64 appended-at (unix ns) | uvarint extensions length | extensions | data
//
// Integers are big-endian. Records hold consecutive indexes from the
// header's first index, and zeros follow them: a segment is zero-filled
// ahead of its records (preallocChunk at a time), so that an append does
// not change the file's size and its fdatasync flushes data alone.
// Nothing else is on disk but the stable store's file, so recovery is a
// scan: the records end where zeros begin. A record that fails its check
// is a torn write only if it has the shape a crash leaves (see tornRecord)
// and nothing but zeros follows it; anything else is corruption.
const (
	// sectorSize is the unit a disk persists whole: a crash loses the
	// sectors of a write not yet on disk (a killed process, whole pages,
	// which are whole sectors too), never part of one.
	sectorSize    = 512
	segMagic      = "HUTCHSEG"
	segVersion    = 1
	segHeaderSize = 24
	recHeaderSize = 8
	// bodyFixed is the body's fixed part before the extensions' length.
	bodyFixed = 8 + 8 + 1 + 8
	// maxRecord bounds a record's body, so that a corrupt length is not
	// read as a request to allocate gigabytes: far above a forwarded frame
	// (raftstore.DefaultMaxForwardFrame, 64 MiB).
	maxRecord = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is a record that fails its check where the log cannot have
// been torn by a crash: before other valid records, or read back after it
// was stored.
var ErrCorrupt = errors.New("seglog: corrupt record")

func appendSegHeader(b []byte, first uint64) []byte {
	start := len(b)
	b = append(b, segMagic...)
	b = binary.BigEndian.AppendUint64(b, first)
	b = binary.BigEndian.AppendUint32(b, segVersion)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// parseSegHeader returns the first index a segment header names.
func parseSegHeader(h []byte) (uint64, error) {
	if len(h) < segHeaderSize || string(h[:8]) != segMagic {
		return 0, errors.New("not a segment header")
	}
	if crc32.Checksum(h[:20], castagnoli) != binary.BigEndian.Uint32(h[20:]) {
		return 0, errors.New("segment header fails its checksum")
	}
	if v := binary.BigEndian.Uint32(h[16:]); v != segVersion {
		return 0, fmt.Errorf("segment version %d, this build reads %d", v, segVersion)
	}
	return binary.BigEndian.Uint64(h[8:]), nil
}

// appendRecord encodes l as one record onto b.
func appendRecord(b []byte, l *raft.Log) []byte {
	start := len(b)
	b = append(b, make([]byte, recHeaderSize)...)
	b = binary.BigEndian.AppendUint64(b, l.Index)
	b = binary.BigEndian.AppendUint64(b, l.Term)
	b = append(b, byte(l.Type))
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	b = binary.AppendUvarint(b, uint64(len(l.Extensions)))
	b = append(b, l.Extensions...)
	b = append(b, l.Data...)
	body := b[start+recHeaderSize:]
	binary.BigEndian.PutUint32(b[start:], uint32(len(body)))
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(body, castagnoli))
	return b
}

// recordSize is the encoded size of l.
func recordSize(l *raft.Log) int {
	return recHeaderSize + bodyFixed + binary.MaxVarintLen64 + len(l.Extensions) + len(l.Data)
}

// decodeBody fills l from a record body whose CRC has been checked. The
// data and extensions alias body, which must be the caller's to keep (a
// buffer read for this entry alone).
func decodeBody(body []byte, l *raft.Log) error {
	if len(body) < bodyFixed+1 {
		return errors.New("record body too short")
	}
	l.Index = binary.BigEndian.Uint64(body)
	l.Term = binary.BigEndian.Uint64(body[8:])
	l.Type = raft.LogType(body[16])
	if at := int64(binary.BigEndian.Uint64(body[17:])); at != 0 {
		l.AppendedAt = time.Unix(0, at)
	} else {
		l.AppendedAt = time.Time{}
	}
	rest := body[bodyFixed:]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)-k) {
		return errors.New("record extensions overrun the body")
	}
	rest = rest[k:]
	l.Extensions = nil
	if n > 0 {
		l.Extensions = rest[:n:n]
	}
	l.Data = rest[n:]
	return nil
}

// checkRecord verifies a whole record (header and body) and returns its
// body.
func checkRecord(rec []byte) ([]byte, error) {
	if len(rec) < recHeaderSize {
		return nil, io.ErrUnexpectedEOF
	}
	n := binary.BigEndian.Uint32(rec)
	if int(n) != len(rec)-recHeaderSize {
		return nil, fmt.Errorf("record length %d where %d bytes were expected", n, len(rec)-recHeaderSize)
	}
	body := rec[recHeaderSize:]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(rec[4:]) {
		return nil, errors.New("record fails its checksum")
	}
	return body, nil
}

// scanResult is what a scan of one segment found.
type scanResult struct {
	offsets []int64 // of each valid record, in index order
	end     int64   // where the valid records end
	// bad says why the scan stopped before the file's end; "" when it
	// read to the end.
	bad string
	// tornOnly is set when everything from end on is what a crash
	// mid-append leaves: a write never synced, so never acknowledged.
	tornOnly bool
}

// scanSegment reads a segment's records from its bytes (header
// included), expecting consecutive indexes from first.
func scanSegment(data []byte, first uint64) scanResult {
	var res scanResult
	off := int64(segHeaderSize)
	next := first
	for off < int64(len(data)) {
		rest := data[off:]
		if len(rest) < recHeaderSize {
			// The file ends inside a header: its size was cut short.
			res.bad, res.tornOnly = "short record header", true
			break
		}
		n := int64(binary.BigEndian.Uint32(rest))
		if n == 0 {
			if allZero(rest) {
				break // the preallocated end
			}
			res.bad = "zero record length before other bytes"
			break
		}
		if recHeaderSize+n > int64(len(rest)) {
			// The file ends inside the record: an append that grew the
			// file cut short, unless the length itself rotted.
			res.bad = "record runs past the end of the file"
			res.tornOnly = !lengthRotted(rest)
			break
		}
		if n > maxRecord {
			res.bad = fmt.Sprintf("record length %d is beyond any record written", n)
			break
		}
		rec := rest[:recHeaderSize+n]
		body, err := checkRecord(rec)
		if err == nil && (len(body) < bodyFixed+1 || binary.BigEndian.Uint64(body) != next) {
			// A record whose checksum holds was written whole: a crash
			// cannot have made it, so it is not torn.
			res.bad = fmt.Sprintf("record holds index %d where %d was expected", indexOf(body), next)
			break
		}
		if err != nil {
			res.bad = err.Error()
			res.tornOnly = allZero(rest[len(rec):]) && tornRecord(data, off, off+int64(len(rec))) && !lengthRotted(rest)
			break
		}
		res.offsets = append(res.offsets, off)
		off += int64(len(rec))
		next++
	}
	res.end = off
	return res
}

// tornRecord reports whether the record at data[start:end], which fails
// its checksum, has the shape a crash leaves: the sectors at its end never
// reached the disk, so it reads as zeros from a sector boundary within it
// to its end. A byte that rotted after the record was stored leaves no
// such shape (every record hutch writes ends in its entry's own CRC, not
// in a run of zeros), so the member refuses to start rather than cut a
// record it may have acknowledged. A crash that persisted a record's later
// sectors before an earlier one is refused too, as ZooKeeper refuses a log
// whose CRC fails.
func tornRecord(data []byte, start, end int64) bool {
	lastSet := end - 1
	for lastSet > start && data[lastSet] == 0 {
		lastSet--
	}
	lost := (lastSet + 1 + sectorSize - 1) / sectorSize * sectorSize // the first sector boundary in the zeros
	return lost > start && lost < end
}

// lengthRotted reports whether the record header at the start of rest
// holds a length that differs from the one written in a single byte: the
// stored checksum matches a body of a length that differs from the header's
// in one byte. A torn record keeps its true length, so this tells a rotted
// length (which would otherwise look like a record the file cut short)
// from a tear. The chance that a tear matches by accident is 1,020 in 2^32.
func lengthRotted(rest []byte) bool {
	n := binary.BigEndian.Uint32(rest)
	want := binary.BigEndian.Uint32(rest[4:])
	avail := len(rest) - recHeaderSize
	var lengths []int
	for shift := 0; shift < 32; shift += 8 {
		for v := uint32(1); v < 256; v++ {
			if m := int(n ^ v<<shift); m > bodyFixed && m <= avail {
				lengths = append(lengths, m)
			}
		}
	}
	slices.Sort(lengths)
	body := rest[recHeaderSize:]
	crc, done := uint32(0), 0
	for _, m := range lengths {
		crc = crc32.Update(crc, castagnoli, body[done:m])
		done = m
		if crc == want {
			return true
		}
	}
	return false
}

func indexOf(body []byte) uint64 {
	if len(body) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(body)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
