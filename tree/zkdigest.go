package tree

import (
	"encoding/binary"
	"hash/crc32"
	"strings"
)

// ZooKeeper's tree digest (DigestCalculator, digest version 2), kept beside
// hutch's own so that an imported tree can be checked against the digests
// ZooKeeper 3.6+ writes into its snapshots and transaction logs, and an
// exported one carries the digest ZooKeeper checks when it loads it.
//
// A node's term is the CRC-32 of its path ("" for the root), its data and
// its stored Stat (czxid, mzxid, pzxid, ctime, mtime as 8 bytes, version,
// cversion, aversion as 4, ephemeralOwner as 8, big-endian); nodes below
// "/zookeeper/" count 0 ("/zookeeper" itself counts); the tree's digest is
// the sum of the terms as a Java long. ACLs are not part of it.

// ZKDigestVersion is the digest version ZooKeeper 3.6 to 3.9 write beside
// their digests; a digest of another version cannot be compared.
const ZKDigestVersion = 2

// zkExcluded is ZooDefs.ZOOKEEPER_NODE_SUBTREE: nodes under it are not
// digested.
const zkExcluded = "/zookeeper/"

// zkContentCRC is the CRC-32 of a node's path and data, which its Stat
// then continues (zkNodeDigest): a Stat change alone, such as a parent's
// cversion on every child create, does not re-read the data.
func (t *Tree) zkContentCRC(path string, data []byte) uint32 {
	if path == "/" {
		path = ""
	}
	t.zbuf = append(t.zbuf[:0], path...) // crc32 keeps no slice, but escape analysis cannot tell
	return crc32.Update(crc32.Update(0, crc32.IEEETable, t.zbuf), crc32.IEEETable, data)
}

// zkNodeDigest is a node's term in ZooKeeper's digest, from its content
// CRC and stored Stat.
func (t *Tree) zkNodeDigest(path string, content uint32, st *pstat) uint32 {
	if strings.HasPrefix(path, zkExcluded) {
		return 0
	}
	t.zbuf = append(t.zbuf[:0], make([]byte, 60)...)
	b := t.zbuf
	binary.BigEndian.PutUint64(b[0:], uint64(st.czxid))
	binary.BigEndian.PutUint64(b[8:], uint64(st.mzxid))
	binary.BigEndian.PutUint64(b[16:], uint64(st.pzxid))
	binary.BigEndian.PutUint64(b[24:], uint64(st.ctime))
	binary.BigEndian.PutUint64(b[32:], uint64(st.mtime))
	binary.BigEndian.PutUint32(b[40:], uint32(st.version))
	binary.BigEndian.PutUint32(b[44:], uint32(st.cversion))
	binary.BigEndian.PutUint32(b[48:], uint32(st.aversion))
	binary.BigEndian.PutUint64(b[52:], uint64(st.owner))
	return crc32.Update(content, crc32.IEEETable, b[:])
}

// ZKDigest returns ZooKeeper's digest of the tree (DataTree.getTreeDigest,
// version ZKDigestVersion): equal to the digest ZooKeeper reports for a
// tree with the same nodes, data and stored Stats.
func (t *Tree) ZKDigest() int64 { return t.zkDigest }
