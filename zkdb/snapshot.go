package zkdb

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"slices"
	"time"

	"github.com/hutchzk/hutch/internal/record"
	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/watch"
)

// Layout of a snapshot:
//
//	magic uvarint(applied) varint(lastTime)
//	uvarint(n) (varint(session) varint(conn) uvarint(next) varint(timeout) uvarint(node))*
//	uvarint(len) membership (membership.AppendConfig)
//	uvarint(n) (uvarint(id) str(addr) byte(voter))*      the replicas
//	u64le(crc64 of the bytes after magic up to here)
//	tree snapshot (tree.WriteSnapshot, which checks itself)
//
// Version 3 added the membership and the replicas; version 2 each owner's
// node. Restore still reads both older versions: a version-2 snapshot has
// no membership (the next leader writes the first one), a version-1
// snapshot's owners come back with node 0 (unknown) until their sessions
// next attach. An older binary cannot read a newer version: in a rolling
// upgrade a leader already upgraded may send a snapshot only an upgraded
// follower reads.
const (
	snapMagic   = "hutch-zkdb-3\n"
	snapMagicV2 = "hutch-zkdb-2\n"
	snapMagicV1 = "hutch-zkdb-1\n"
)

var crcTable = crc64.MakeTable(crc64.ECMA)

// Snapshot encodes the replicated state, as of the last batch applied,
// into memory. It holds the read lock while encoding, so reads go on and
// writes wait only for an in-memory copy, never for a disk.
func (d *DB) Snapshot() ([]byte, error) {
	var buf bytes.Buffer
	if err := d.WriteSnapshot(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteSnapshot streams the snapshot Snapshot encodes to w, holding the
// read lock throughout: for a writer that does not wait on a disk, or for
// a DB nobody else is using (an import writing its output).
func (d *DB) WriteSnapshot(w io.Writer) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	hdr := []byte(snapMagic)
	hdr = binary.AppendUvarint(hdr, d.applied)
	hdr = binary.AppendVarint(hdr, d.lastTime)
	ids := make([]int64, 0, len(d.owners))
	for id := range d.owners {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	hdr = binary.AppendUvarint(hdr, uint64(len(ids)))
	for _, id := range ids {
		o := d.owners[id]
		hdr = binary.AppendVarint(hdr, id)
		hdr = binary.AppendVarint(hdr, o.conn)
		hdr = binary.AppendUvarint(hdr, o.next)
		hdr = binary.AppendVarint(hdr, int64(o.timeout))
		hdr = binary.AppendUvarint(hdr, o.node)
	}
	members := membership.AppendConfig(nil, d.members)
	hdr = binary.AppendUvarint(hdr, uint64(len(members)))
	hdr = append(hdr, members...)
	hdr = binary.AppendUvarint(hdr, uint64(len(d.replicas)))
	for _, r := range d.replicas {
		hdr = binary.AppendUvarint(hdr, r.ID)
		hdr = binary.AppendUvarint(hdr, uint64(len(r.Addr)))
		hdr = append(hdr, r.Addr...)
		voter := byte(0)
		if r.Voter {
			voter = 1
		}
		hdr = append(hdr, voter)
	}
	hdr = binary.LittleEndian.AppendUint64(hdr, crc64.Checksum(hdr[len(snapMagic):], crcTable))
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	if err := d.tree.WriteSnapshot(w); err != nil {
		return err
	}
	d.lastSnapshot.Store(&SnapshotInfo{Zxid: d.tree.LastZxid(), Time: d.clock.Now()})
	return nil
}

// Load replaces the state with a tree loaded from elsewhere (a ZooKeeper
// import): its sessions have no owning connection until their clients
// attach, applied is the log index the state stands for, and lastTime the
// transaction clock (ms). Nobody may be connected.
func (d *DB) Load(t *tree.Tree, applied uint64, lastTime int64) {
	if d.sasl {
		t.EnableSASL()
	}
	now := d.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tree, d.owners, d.applied, d.lastTime = t, make(map[int64]*owner), applied, lastTime
	d.members, d.replicas = membership.Config{}, nil
	d.digests = nil
	d.stateDigests, d.stateDigestNext = nil, 0
	d.timersMu.Lock()
	d.resetTimersLocked(now)
	d.timersMu.Unlock()
}

// SnapshotInfo says which state the last snapshot holds and when it was
// taken.
type SnapshotInfo struct {
	Zxid int64
	Time time.Time
}

// LastSnapshot reports the last snapshot this DB encoded, or nil.
func (d *DB) LastSnapshot() *SnapshotInfo { return d.lastSnapshot.Load() }

// errBadHeader is a snapshot header value out of its bounds.
var errBadHeader = errors.New("zkdb: snapshot: bad header")

// readMembership reads the membership and the replicas.
func readMembership(s *record.Stream) (membership.Config, []Replica) {
	c, rest, err := membership.DecodeConfig(s.Bytes(maxMembershipBytes))
	if s.Err() == nil && (err != nil || len(rest) != 0) {
		s.Fail(errors.New("zkdb: snapshot: bad membership"))
	}
	n := s.Uvarint()
	if n > maxMembershipBytes {
		s.Fail(errors.New("zkdb: snapshot: bad replicas"))
	}
	var replicas []Replica
	for i := uint64(0); i < n && s.Err() == nil; i++ {
		r := Replica{ID: s.Uvarint(), Addr: string(s.Bytes(maxMembershipBytes))}
		v, err := s.ReadByte()
		if err != nil || v > 1 {
			s.Fail(errors.New("zkdb: snapshot: bad replica"))
		}
		r.Voter = v == 1
		replicas = append(replicas, r)
	}
	return c, replicas
}

// maxMembershipBytes bounds what a snapshot's membership may claim.
const maxMembershipBytes = 1 << 20

// Restore replaces the state with a snapshot. At start-up (reset false)
// nobody is connected yet; while serving (reset true) every watch is
// dropped and the Sink told to re-synchronise its clients, since the
// changes between the old state and the new one fired no watch.
func (d *DB) Restore(r io.Reader, reset bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	magic := make([]byte, len(snapMagic))
	if _, err := io.ReadFull(br, magic); err != nil || (string(magic) != snapMagic && string(magic) != snapMagicV2 && string(magic) != snapMagicV1) {
		return errors.New("zkdb: not a hutch snapshot")
	}
	withNode := string(magic) != snapMagicV1
	withMembers := string(magic) == snapMagic
	s := record.NewStream(br, errBadHeader)
	applied := s.Uvarint()
	lastTime := s.Varint()
	n := s.Uvarint()
	owners := make(map[int64]*owner)
	for i := uint64(0); i < n && s.Err() == nil; i++ {
		id := s.Varint()
		o := &owner{conn: s.Varint(), next: s.Uvarint()}
		timeout := s.Varint()
		if timeout < 0 || timeout >= 1<<31 {
			return errors.New("zkdb: snapshot: bad session timeout")
		}
		o.timeout = int32(timeout)
		if withNode {
			o.node = s.Uvarint()
		}
		owners[id] = o
	}
	var members membership.Config
	var replicas []Replica
	if withMembers && s.Err() == nil {
		members, replicas = readMembership(s)
	}
	var sum [8]byte
	if _, err := io.ReadFull(br, sum[:]); s.Err() != nil || err != nil {
		return fmt.Errorf("zkdb: snapshot header: %w", errors.Join(s.Err(), err))
	}
	if binary.LittleEndian.Uint64(sum[:]) != s.Sum() {
		return errors.New("zkdb: snapshot header checksum mismatch")
	}
	t, err := tree.Restore(br)
	if err != nil {
		return err
	}
	if d.sasl {
		t.EnableSASL()
	}
	if d.enforceQuota {
		t.EnforceQuota()
	}
	for id := range owners {
		if _, _, ok := t.Session(id); !ok {
			return fmt.Errorf("zkdb: snapshot: owner of unknown session %#x", id)
		}
	}
	now := d.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tree, d.owners, d.applied, d.lastTime = t, owners, applied, lastTime
	d.members, d.replicas = members, replicas
	d.digests = nil
	d.stateDigests, d.stateDigestNext = nil, 0
	d.watchMu.Lock()
	d.watches = watch.NewManager()
	d.watchMu.Unlock()
	d.timersMu.Lock()
	d.resetTimersLocked(now)
	d.timersMu.Unlock()
	if reset {
		d.sink.Reset()
	}
	return nil
}
