package zkdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/hutchzk/hutch/internal/record"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// Layout of a log entry, integers varint-encoded:
//
//	entry    = 0x00                        an empty entry (it only carries
//	                                       the commit index to followers)
//	         | 0x53 varint(time) commands u32le(crc)
//	         | 0x02 varint(time) commands  (before checksums: still read)
//	commands = 0x00 0x03 uvarint(count) command*   (layout 3)
//	         | uvarint(count) command*             (layout 2: still read)
//	command  = uvarint(origin) uvarint(seq) varint(conn) uvarint(order)
//	           byte(kind) uvarint(term) varint(session) varint(timeout)
//	           uvarint(nauth) (str(scheme) str(id))* grants varint(op) body
//	grants   = 0x00 (none: the checks use the identities)  (layout 3 only)
//	         | 0x01 uvarint(n) (digest[16] varint(perms))*
//	         | 0x02 (super)
//	body     = uvarint(0) for no request | uvarint(len+1) jute(request)
//	           (for kind 3, KindReconfig, the request is an Outcome)
//	str      = uvarint(len) bytes
//
// crc is the CRC-32C of every byte of the entry before it, tag included:
// the leader computes it as it orders the entry, and every member checks
// it wherever it reads the entry back (before applying it, and in the
// log store's guard in package raftstore), so a byte changed on one
// member's disk is caught there, whatever the log store checks itself.
// The checked tag is three bits away from the unchecked ones, so that no
// single flipped bit turns a checked entry into one read unchecked.
//
// A count is never 0 in a batch, so a commands part beginning with 0x00
// says which layout follows; layout 3 added each command's ACL grants
// (tree.Grants), which replace the identities on most writes.
//
// The commands part is what a follower forwards to the leader; the leader
// puts the entry's header, with its own clock's time, in front. Bodies are
// length-prefixed so the decoder checks that each request uses exactly its
// bytes; the request type comes from the op (tree.NewRequest).
const (
	entryEmpty   byte = 0
	entryV2      byte = 2
	entryChecked byte = 0x53
)

// EmptyEntry is a log entry with no commands.
var EmptyEntry = []byte{entryEmpty}

// ErrChecksum means an entry's bytes are not those its leader wrote; it
// is an ErrCorrupt.
var ErrChecksum = fmt.Errorf("%w: the log entry fails its checksum", ErrCorrupt)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt means bytes do not decode as an entry or as commands.
var ErrCorrupt = errors.New("zkdb: corrupt command encoding")

// minCommandSize is the fewest bytes a command takes (one per field); it
// bounds the count a batch may claim.
const minCommandSize = 11

var encoderPool = sync.Pool{New: func() any { return new(wire.Encoder) }}

// The commands layouts (see the layout above).
const (
	layoutMarker byte = 0
	layoutGrants byte = 3
)

// Grants' tags in layout 3.
const (
	grantsNone  byte = 0
	grantsList  byte = 1
	grantsSuper byte = 2
)

// AppendCommands appends the encoding of cmds to dst, in layout 3.
func AppendCommands(dst []byte, cmds []Command) ([]byte, error) {
	e := encoderPool.Get().(*wire.Encoder)
	defer encoderPool.Put(e)
	dst = append(dst, layoutMarker, layoutGrants)
	dst = binary.AppendUvarint(dst, uint64(len(cmds)))
	for i := range cmds {
		c := &cmds[i]
		dst = binary.AppendUvarint(dst, c.Origin)
		dst = binary.AppendUvarint(dst, c.Seq)
		dst = binary.AppendVarint(dst, c.Conn)
		dst = binary.AppendUvarint(dst, c.Order)
		dst = append(dst, byte(c.Kind))
		dst = binary.AppendUvarint(dst, c.Term)
		dst = binary.AppendVarint(dst, c.Txn.Session)
		dst = binary.AppendVarint(dst, int64(c.Timeout))
		dst = binary.AppendUvarint(dst, uint64(len(c.Txn.Auth)))
		for _, id := range c.Txn.Auth {
			dst = appendStr(dst, id.Scheme)
			dst = appendStr(dst, id.ID)
		}
		dst = appendGrants(dst, c.Txn.Grants)
		dst = binary.AppendVarint(dst, int64(c.Txn.Op))
		if c.Txn.Req == nil {
			dst = binary.AppendUvarint(dst, 0)
			continue
		}
		r, ok := c.Txn.Req.(tree.Request)
		if !ok {
			return nil, fmt.Errorf("zkdb: command %d (op %d): request %T does not encode", i, c.Txn.Op, c.Txn.Req)
		}
		e.Reset()
		r.Encode(e)
		dst = binary.AppendUvarint(dst, uint64(e.Len())+1)
		dst = append(dst, e.Bytes()...)
	}
	return dst, nil
}

// AppendEntry appends a log entry stamped with time (ms since the epoch)
// whose commands, already encoded by AppendCommands, are commands.
func AppendEntry(dst []byte, time int64, commands []byte) []byte {
	start := len(dst)
	dst = append(dst, entryChecked)
	dst = binary.AppendVarint(dst, time)
	dst = append(dst, commands...)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// CheckEntry reports whether b's checksum holds, without decoding it: nil
// for a checked entry whose bytes are those written, ErrChecksum for one
// whose are not, and nil for an empty entry or one written before entries
// carried checksums (DecodeEntry still checks how those decode).
func CheckEntry(b []byte) error {
	if len(b) == 0 || b[0] != entryChecked {
		return nil
	}
	_, err := checkedBody(b)
	return err
}

// checkedBody returns a checked entry's bytes between its tag and its
// checksum, once the checksum holds.
func checkedBody(b []byte) ([]byte, error) {
	if len(b) < 1+4 {
		return nil, fmt.Errorf("%w: %d bytes", ErrChecksum, len(b))
	}
	n := len(b) - 4
	if want, got := binary.LittleEndian.Uint32(b[n:]), crc32.Checksum(b[:n], castagnoli); want != got {
		return nil, fmt.Errorf("%w: CRC-32C %08x, recorded %08x", ErrChecksum, got, want)
	}
	return b[1:n], nil
}

func appendGrants(dst []byte, g *tree.Grants) []byte {
	switch {
	case g == nil:
		return append(dst, grantsNone)
	case g.Super:
		return append(dst, grantsSuper)
	}
	dst = append(dst, grantsList)
	dst = binary.AppendUvarint(dst, uint64(len(g.Entries)))
	for _, e := range g.Entries {
		dst = append(dst, e.ACL[:]...)
		dst = binary.AppendVarint(dst, int64(e.Perms))
	}
	return dst
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// DecodeEntry decodes a log entry. It never panics and allocates no more
// than the input's size justifies; malformed input gives ErrCorrupt, a
// checked entry whose checksum fails ErrChecksum. Decoded requests do not
// alias b.
func DecodeEntry(b []byte) (Batch, error) {
	if len(b) == 0 {
		return Batch{}, ErrCorrupt
	}
	body := b[1:]
	switch b[0] {
	case entryEmpty:
		if len(b) != 1 {
			return Batch{}, ErrCorrupt
		}
		return Batch{}, nil
	case entryChecked:
		var err error
		if body, err = checkedBody(b); err != nil {
			return Batch{}, err
		}
	case entryV2:
	default:
		return Batch{}, fmt.Errorf("%w: entry version %d", ErrCorrupt, b[0])
	}
	r := record.NewSlice(body)
	t := r.Varint()
	if r.Bad() {
		return Batch{}, ErrCorrupt
	}
	cmds, err := decodeCommands(r, true)
	return Batch{Time: t, Commands: cmds}, err
}

// CheckCommands reports whether b decodes as AppendCommands output that a
// follower may forward; a leader checks what a follower forwards before it
// enters the log. Only a leader decides a reconfig's outcome, so a
// forwarded KindReconfig command is refused.
func CheckCommands(b []byte) error {
	_, err := decodeCommands(record.NewSlice(b), false)
	return err
}

// decodeCommands decodes a batch; KindReconfig commands only when
// withReconfig is set.
func decodeCommands(r *record.Slice, withReconfig bool) ([]Command, error) {
	grants := false
	if rest := r.Rest(); len(rest) > 0 && rest[0] == layoutMarker {
		r.Byte()
		if r.Byte() != layoutGrants {
			return nil, fmt.Errorf("%w: unknown commands layout", ErrCorrupt)
		}
		grants = true
	}
	n := r.Count(minCommandSize)
	if r.Bad() {
		return nil, ErrCorrupt
	}
	cmds := make([]Command, n)
	for i := range cmds {
		c := &cmds[i]
		c.Origin = r.Uvarint()
		c.Seq = r.Uvarint()
		c.Conn = r.Varint()
		c.Order = r.Uvarint()
		c.Kind = Kind(r.Byte())
		c.Term = r.Uvarint()
		c.Txn.Session = r.Varint()
		timeout := r.Varint()
		if timeout < -1<<31 || timeout >= 1<<31 {
			r.Fail()
		}
		c.Timeout = int32(timeout)
		if na := r.Count(2); na > 0 {
			c.Txn.Auth = make([]wire.ID, na)
			for j := range c.Txn.Auth {
				c.Txn.Auth[j] = wire.ID{Scheme: r.String(), ID: r.String()}
			}
		}
		if grants {
			c.Txn.Grants = readGrants(r)
		}
		c.Txn.Op, c.Txn.Req = readRequest(r, c.Kind)
		if r.Bad() || (c.Kind != KindTxn && c.Kind != KindAttach && (c.Kind != KindReconfig || !withReconfig)) {
			return nil, ErrCorrupt
		}
	}
	if len(r.Rest()) != 0 {
		return nil, ErrCorrupt
	}
	return cmds, nil
}

// grants reads a command's grants (layout 3).
func readGrants(r *record.Slice) *tree.Grants {
	switch r.Byte() {
	case grantsNone:
		return nil
	case grantsSuper:
		return &tree.Grants{Super: true}
	case grantsList:
	default:
		r.Fail()
		return nil
	}
	n := r.Count(uint64(len(tree.ACLDigest{})) + 1)
	g := &tree.Grants{Entries: make([]tree.Grant, n)}
	for i := range g.Entries {
		copy(g.Entries[i].ACL[:], r.Take(uint64(len(tree.ACLDigest{}))))
		perms := r.Varint()
		if perms < -1<<31 || perms >= 1<<31 {
			r.Fail()
		}
		g.Entries[i].Perms = int32(perms)
	}
	return g
}

// request reads varint(op) and its body, decoded as the op's request
// type, or as an *Outcome for a KindReconfig command.
func readRequest(r *record.Slice, kind Kind) (wire.OpCode, any) {
	v := r.Varint()
	if v < -1<<31 || v >= 1<<31 {
		r.Fail()
	}
	op := wire.OpCode(v)
	blen := r.Uvarint()
	if r.Bad() || blen == 0 {
		return op, nil
	}
	body := r.Take(blen - 1)
	req, known := tree.NewRequest(op)
	if kind == KindReconfig {
		req, known = new(Outcome), op == wire.OpReconfig
	}
	if r.Bad() || !known || req == nil {
		r.Fail()
		return op, nil
	}
	d := wire.NewDecoder(body)
	req.Decode(d)
	if d.Err() != nil || d.Remaining() != 0 {
		r.Fail()
		return op, nil
	}
	return op, req
}
