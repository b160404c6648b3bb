package tree

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"slices"
	"strings"

	"github.com/hutchzk/hutch/internal/record"
	"github.com/hutchzk/hutch/wire"
)

// Snapshot format (all integers varint/uvarint unless noted):
//
//	magic "HUTCHSN1"
//	lastZxid
//	session count, then per session (ascending id): id, timeout, passwd
//	node records, depth first, parent before children, children by name:
//	  name (root: ""), data, acl, czxid mzxid pzxid ctime mtime version
//	  cversion aversion owner, child count
//	node count, digest (8 bytes little endian)
//	CRC-64/ECMA of everything before it (8 bytes little endian)
//
// Byte strings are length+1 with 0 for nil (nil and empty data differ on the
// wire). An acl is a uvarint k: 0 introduces a new list (count, then perms,
// scheme, id per entry) that later records refer to as k = its index+1, so
// the usual handful of distinct ACLs is written once.
const snapMagic = "HUTCHSN1"

// maxSnapBytes bounds any one byte string read back; reads are chunked, so a
// corrupt length fails at EOF rather than by allocating it.
const maxSnapBytes = 1 << 30

type snapWriter struct {
	w    *bufio.Writer
	buf  []byte
	acls map[string]uint64
	key  []byte
	crc  uint64
}

func (s *snapWriter) uvarint(v uint64) { s.buf = binary.AppendUvarint(s.buf, v) }
func (s *snapWriter) varint(v int64)   { s.buf = binary.AppendVarint(s.buf, v) }
func (s *snapWriter) str(v string) {
	s.uvarint(uint64(len(v)))
	s.buf = append(s.buf, v...)
}

func (s *snapWriter) bytes(v []byte) {
	if v == nil {
		s.uvarint(0)
		return
	}
	s.uvarint(uint64(len(v)) + 1)
	s.buf = append(s.buf, v...)
}

// flush hands the record buffer to the bufio.Writer; called per record so the
// buffer stays one record long.
func (s *snapWriter) flush() error {
	s.crc = crc64.Update(s.crc, crcTable, s.buf)
	_, err := s.w.Write(s.buf)
	s.buf = s.buf[:0]
	return err
}

func (s *snapWriter) node(name string, n *node) {
	s.str(name)
	s.bytes(n.data)
	s.key = wire.AppendACLKey(s.key[:0], n.acl)
	if k, ok := s.acls[string(s.key)]; ok {
		s.uvarint(k)
	} else {
		s.acls[string(s.key)] = uint64(len(s.acls) + 1)
		s.uvarint(0)
		s.uvarint(uint64(len(n.acl)))
		for _, a := range n.acl {
			s.varint(int64(a.Perms))
			s.str(a.ID.Scheme)
			s.str(a.ID.ID)
		}
	}
	st := &n.st
	for _, v := range [...]int64{st.czxid, st.mzxid, st.pzxid, st.ctime, st.mtime,
		int64(st.version), int64(st.cversion), int64(st.aversion), st.owner} {
		s.varint(v)
	}
	s.uvarint(uint64(len(n.children)))
}

func sortedChildren(n *node) []string {
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// WriteSnapshot streams the whole tree, sessions and last zxid to w. Nodes
// are written one at a time in a fixed order (no second copy of the tree is
// built), so equal trees produce identical bytes.
func (t *Tree) WriteSnapshot(w io.Writer) error {
	s := &snapWriter{w: bufio.NewWriterSize(w, 64<<10), acls: make(map[string]uint64)}
	s.buf = append(s.buf, snapMagic...)
	s.varint(t.lastZxid)
	ids := t.Sessions()
	s.uvarint(uint64(len(ids)))
	for _, id := range ids {
		ss := t.sessions[id]
		s.varint(id)
		s.varint(int64(ss.timeout))
		s.bytes(ss.passwd)
	}
	s.node("", t.root)
	if err := s.flush(); err != nil {
		return err
	}
	type frame struct {
		path  string // "" for the root
		names []string
	}
	stack := []frame{{"", sortedChildren(t.root)}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if len(top.names) == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		name := top.names[0]
		top.names = top.names[1:]
		path := top.path + "/" + name
		n := t.nodes[path]
		s.node(name, n)
		if err := s.flush(); err != nil {
			return err
		}
		if len(n.children) > 0 {
			stack = append(stack, frame{path, sortedChildren(n)})
		}
	}
	s.uvarint(uint64(len(t.nodes)))
	s.buf = binary.LittleEndian.AppendUint64(s.buf, t.digest)
	if err := s.flush(); err != nil {
		return err
	}
	s.buf = binary.LittleEndian.AppendUint64(s.buf, s.crc)
	if err := s.flush(); err != nil {
		return err
	}
	return s.w.Flush()
}

// snapReader reads a snapshot's records (internal/record) and keeps the
// ACL lists read so far, which later records refer to by index.
type snapReader struct {
	*record.Stream
	acls [][]wire.ACL
}

var errCorrupt = errors.New("tree: corrupt snapshot")

func (s *snapReader) bytes() []byte { return s.NullableBytes(maxSnapBytes) }
func (s *snapReader) str() string   { return s.String(maxSnapBytes) }

func (s *snapReader) acl() []wire.ACL {
	k := s.Uvarint()
	if s.Err() != nil {
		return nil
	}
	if k > 0 {
		if k > uint64(len(s.acls)) {
			s.Fail(errCorrupt)
			return nil
		}
		return s.acls[k-1]
	}
	count := s.Uvarint()
	var acl []wire.ACL
	for i := uint64(0); i < count && s.Err() == nil; i++ {
		perms := s.Int32()
		scheme := s.str()
		id := s.str()
		acl = append(acl, wire.ACL{Perms: perms, ID: wire.ID{Scheme: scheme, ID: id}})
	}
	s.acls = append(s.acls, acl)
	return acl
}

func (s *snapReader) node() (name string, data []byte, acl []wire.ACL, st StoredStat, kids uint64) {
	name = s.str()
	data, acl = s.bytes(), s.acl()
	st.Czxid, st.Mzxid, st.Pzxid = s.Varint(), s.Varint(), s.Varint()
	st.Ctime, st.Mtime = s.Varint(), s.Varint()
	st.Version, st.Cversion, st.Aversion = s.Int32(), s.Int32(), s.Int32()
	st.EphemeralOwner = s.Varint()
	return name, data, acl, st, s.Uvarint()
}

// Restore reads a snapshot written by WriteSnapshot into a Loader, which
// checks the tree; it also checks the node count, that the rebuilt tree's
// Digest equals the one recorded, and the checksum.
func Restore(r io.Reader) (*Tree, error) {
	s := &snapReader{Stream: record.NewStream(r, errCorrupt)}
	magic := s.Raw(uint64(len(snapMagic)), maxSnapBytes)
	if s.Err() == nil && string(magic) != snapMagic {
		return nil, errCorrupt
	}
	l := NewLoader()
	lastZxid := s.Varint()
	nsess := s.Uvarint()
	for i := uint64(0); i < nsess && s.Err() == nil; i++ {
		id := s.Varint()
		timeout := s.Int32()
		passwd := s.bytes()
		if s.Err() == nil {
			if err := l.Session(id, timeout, passwd); err != nil {
				return nil, fmt.Errorf("%w: %w", errCorrupt, err)
			}
		}
	}
	name, data, acl, st, rootKids := s.node()
	if s.Err() != nil {
		return nil, s.Err()
	}
	if name != "" {
		return nil, errCorrupt
	}
	if err := l.Node("/", data, acl, st); err != nil {
		return nil, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	type frame struct {
		path string
		left uint64
	}
	stack := []frame{{"", rootKids}}
	for s.Err() == nil {
		for len(stack) > 0 && stack[len(stack)-1].left == 0 {
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			break
		}
		top := &stack[len(stack)-1]
		top.left--
		name, data, acl, st, kids := s.node()
		if s.Err() != nil {
			break
		}
		if strings.IndexByte(name, '/') >= 0 {
			return nil, errCorrupt
		}
		path := top.path + "/" + name
		if err := l.Node(path, data, acl, st); err != nil {
			return nil, fmt.Errorf("%w: %w", errCorrupt, err)
		}
		if kids > 0 {
			stack = append(stack, frame{path, kids})
		}
	}
	count := s.Uvarint()
	digest := s.Raw(8, 8)
	crc := s.Sum()
	sum := s.Raw(8, 8)
	if s.Err() != nil {
		return nil, s.Err()
	}
	if binary.LittleEndian.Uint64(sum) != crc {
		return nil, errCorrupt
	}
	t, err := l.Finish(lastZxid)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	if count != uint64(len(t.nodes)) || binary.LittleEndian.Uint64(digest) != t.digest {
		return nil, errCorrupt
	}
	return t, nil
}
