package zkformat

import (
	"bufio"
	"errors"
	"fmt"
	"hash"
	"hash/adler32"
	"io"
	"strconv"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// File magics (FileSnap.SNAP_MAGIC, FileTxnLog.TXNLOG_MAGIC) and the one
// version either has ever had.
const (
	snapMagic   = 0x5a4b534e // "ZKSN"
	logMagic    = 0x5a4b4c47 // "ZKLG"
	fileVersion = 2
)

// openACLIndex is the ACL index ZooKeeper reads as world:anyone:cdrwa
// without a table entry (ReferenceCountedACLCache.OPEN_UNSAFE_ACL_ID).
const openACLIndex = -1

// OpenACL is world:anyone with every permission (Ids.OPEN_ACL_UNSAFE).
var OpenACL = []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}

// SnapshotHandler receives a snapshot's contents as they stream: every
// session, then every node, parent before child, the root as "/". Node's
// data is the handler's to keep; ACL lists are shared between nodes and
// must not be changed.
type SnapshotHandler interface {
	Session(id int64, timeout int32) error
	Node(path string, data []byte, acl []wire.ACL, st tree.StoredStat) error
}

// ZxidDigest is the tree digest ZooKeeper 3.6+ records with a snapshot (and
// a transaction log entry): ZooKeeper's digest of the tree right after
// transaction Zxid.
type ZxidDigest struct {
	Zxid    int64
	Version int32
	Digest  int64
}

// SnapshotTrailer is what a snapshot holds after its nodes.
type SnapshotTrailer struct {
	// Digest is the tree digest (3.6+), nil without one or when its zxid is
	// 0 (ZooKeeper had processed nothing yet).
	Digest *ZxidDigest
	// LastZxid is the last zxid processed when the snapshot was taken
	// (3.9, zookeeper.serializeLastProcessedZxid.enabled); HasLastZxid
	// says whether the snapshot holds one.
	LastZxid    int64
	HasLastZxid bool
}

// ReadSnapshot reads a snapshot (already decompressed; see OpenSnapshot),
// handing its sessions and nodes to h as they come, and checks its seals.
// The first error, of the file or of h, ends it; an error of the file is
// an *Error with the offset.
func ReadSnapshot(r io.Reader, h SnapshotHandler) (SnapshotTrailer, error) {
	var tr SnapshotTrailer
	s := newStreamReader(r)
	magic, version, _ := s.int32(), s.int32(), s.int64()
	if s.err != nil {
		return tr, s.err
	}
	if magic != snapMagic {
		return tr, &Error{Offset: 0, Msg: fmt.Sprintf("not a ZooKeeper snapshot (magic %#x)", uint32(magic))}
	}
	if version != fileVersion {
		return tr, &Error{Offset: 4, Msg: fmt.Sprintf("snapshot version %d (only %d exists)", version, fileVersion)}
	}
	count := s.int32()
	if s.err == nil && count < 0 {
		return tr, &Error{Offset: s.off - 4, Msg: "negative session count"}
	}
	for i := int32(0); i < count && s.err == nil; i++ {
		id, timeout := s.int64(), s.int32()
		if s.err == nil {
			if err := h.Session(id, timeout); err != nil {
				return tr, err
			}
		}
	}
	acls, err := readACLTable(s)
	if err != nil {
		return tr, err
	}
	for s.err == nil {
		at := s.off
		path := s.str()
		if s.err != nil || path == "/" {
			break
		}
		data := s.buffer()
		idx := s.int64()
		st := readStoredStat(s)
		if s.err != nil {
			break
		}
		acl, ok := acls[idx]
		if !ok {
			return tr, &Error{Offset: at, Msg: fmt.Sprintf("node %q refers to ACL list %d, which the ACL table lacks", path, idx)}
		}
		if path == "" {
			path = "/"
		}
		if err := h.Node(path, data, acl, st); err != nil {
			return tr, &Error{Offset: at, Msg: "node", Err: err}
		}
	}
	s.seal()
	if s.err != nil || s.atEOF() {
		return tr, s.err
	}
	// 3.6+: the digest, and a second seal.
	d := ZxidDigest{Zxid: s.int64(), Version: s.int32()}
	if d.Version < 2 {
		hex := s.str()
		v, err := strconv.ParseUint(hex, 16, 64)
		if s.err == nil && err != nil {
			return tr, &Error{Offset: s.off, Msg: fmt.Sprintf("digest %q is not hexadecimal", hex)}
		}
		d.Digest = int64(v)
	} else {
		d.Digest = s.int64()
	}
	s.seal()
	if s.err != nil {
		return tr, s.err
	}
	if d.Zxid > 0 {
		tr.Digest = &d
	}
	if s.atEOF() {
		return tr, nil
	}
	// 3.9: the last zxid processed, and a third seal.
	tr.LastZxid, tr.HasLastZxid = s.int64(), true
	s.seal()
	if s.err == nil && !s.atEOF() {
		return tr, &Error{Offset: s.off, Msg: "data after the last seal"}
	}
	return tr, s.err
}

// readACLTable reads the ACL cache (ReferenceCountedACLCache.serialize).
func readACLTable(s *streamReader) (map[int64][]wire.ACL, error) {
	acls := map[int64][]wire.ACL{openACLIndex: OpenACL}
	n := s.int32()
	if s.err == nil && n < 0 {
		return nil, &Error{Offset: s.off - 4, Msg: "negative ACL table size"}
	}
	for i := int32(0); i < n && s.err == nil; i++ {
		at := s.off
		idx := s.int64()
		k := s.int32()
		if s.err == nil && k < -1 {
			return nil, &Error{Offset: s.off - 4, Msg: "negative ACL list length"}
		}
		var list []wire.ACL
		for j := int32(0); j < k && s.err == nil; j++ {
			perms := s.int32()
			scheme := s.str()
			id := s.str()
			list = append(list, wire.ACL{Perms: perms, ID: wire.ID{Scheme: scheme, ID: id}})
		}
		if _, dup := acls[idx]; dup && s.err == nil {
			return nil, &Error{Offset: at, Msg: fmt.Sprintf("ACL list %d listed twice", idx)}
		}
		acls[idx] = list
	}
	return acls, s.err
}

func readStoredStat(s *streamReader) tree.StoredStat {
	var st tree.StoredStat
	st.Czxid, st.Mzxid, st.Ctime, st.Mtime = s.int64(), s.int64(), s.int64(), s.int64()
	st.Version, st.Cversion, st.Aversion = s.int32(), s.int32(), s.int32()
	st.EphemeralOwner, st.Pzxid = s.int64(), s.int64()
	return st
}

// SnapshotWriter writes a snapshot in ZooKeeper 3.8's layout: header,
// sessions, the ACL table, the nodes (parent before child), the "/"
// terminator and seal, then the digest and a second seal (and, asked for,
// 3.9's last zxid and a third). The ACL table comes before the nodes, so
// every ACL list is declared up front (Begin); nodes then stream.
type SnapshotWriter struct {
	w    *bufio.Writer
	sum  hash.Hash32
	e    wire.Encoder
	acls map[string]int64
	key  []byte
	err  error
}

// Session is a session as a snapshot lists it.
type Session struct {
	ID      int64
	Timeout int32
}

// NewSnapshotWriter writes to w.
func NewSnapshotWriter(w io.Writer) *SnapshotWriter {
	return &SnapshotWriter{w: bufio.NewWriterSize(w, 64<<10), sum: adler32.New(), acls: make(map[string]int64)}
}

// flush writes the encoded bytes through the checksum.
func (sw *SnapshotWriter) flush() error {
	if sw.err == nil {
		b := sw.e.Bytes()
		sw.sum.Write(b)
		_, sw.err = sw.w.Write(b)
	}
	sw.e.Reset()
	return sw.err
}

// Begin writes the header, the sessions and the ACL table: every distinct
// ACL list the nodes will use.
func (sw *SnapshotWriter) Begin(sessions []Session, acls [][]wire.ACL) error {
	e := &sw.e
	e.Int32(snapMagic)
	e.Int32(fileVersion)
	e.Int64(-1) // dbid, always -1
	e.Int32(int32(len(sessions)))
	for _, s := range sessions {
		e.Int64(s.ID)
		e.Int32(s.Timeout)
	}
	var table []int
	for i, acl := range acls {
		sw.key = wire.AppendACLKey(sw.key[:0], acl)
		if _, ok := sw.acls[string(sw.key)]; !ok {
			sw.acls[string(sw.key)] = int64(len(table) + 1)
			table = append(table, i)
		}
	}
	e.Int32(int32(len(table)))
	for k, i := range table {
		e.Int64(int64(k + 1))
		e.Int32(int32(len(acls[i])))
		for _, a := range acls[i] {
			a.Encode(e)
		}
	}
	return sw.flush()
}

// Node writes one node; its ACL must have been declared to Begin.
func (sw *SnapshotWriter) Node(path string, data []byte, acl []wire.ACL, st tree.StoredStat) error {
	sw.key = wire.AppendACLKey(sw.key[:0], acl)
	idx, ok := sw.acls[string(sw.key)]
	if !ok {
		return fmt.Errorf("zkformat: node %s: ACL not declared to Begin", path)
	}
	if path == "/" {
		path = ""
	}
	e := &sw.e
	e.String(path)
	e.Buffer(data)
	e.Int64(idx)
	e.Int64(st.Czxid)
	e.Int64(st.Mzxid)
	e.Int64(st.Ctime)
	e.Int64(st.Mtime)
	e.Int32(st.Version)
	e.Int32(st.Cversion)
	e.Int32(st.Aversion)
	e.Int64(st.EphemeralOwner)
	e.Int64(st.Pzxid)
	return sw.flush()
}

func (sw *SnapshotWriter) seal() error {
	if err := sw.flush(); err != nil {
		return err
	}
	sw.e.Int64(int64(sw.sum.Sum32()))
	sw.e.String("/")
	return sw.flush()
}

// End writes the terminator and seal, the digest (if any) with its seal,
// and lastZxid (if not nil) with its seal, and flushes.
func (sw *SnapshotWriter) End(digest *ZxidDigest, lastZxid *int64) error {
	sw.e.String("/")
	if err := sw.seal(); err != nil {
		return err
	}
	if digest != nil {
		sw.e.Int64(digest.Zxid)
		sw.e.Int32(digest.Version)
		sw.e.Int64(digest.Digest)
		if err := sw.seal(); err != nil {
			return err
		}
	}
	if lastZxid != nil {
		if digest == nil {
			return errors.New("zkformat: a snapshot's last zxid needs its digest before it")
		}
		sw.e.Int64(*lastZxid)
		if err := sw.seal(); err != nil {
			return err
		}
	}
	return sw.w.Flush()
}
