package tree

import (
	"hash/crc64"
	"math"
	"slices"

	"github.com/hutchzk/hutch/wire"
)

// Paths of the nodes every ZooKeeper server starts with.
const (
	procPath   = "/zookeeper"
	quotaPath  = "/zookeeper/quota"
	configPath = "/zookeeper/config"
)

// MaxTTL is the largest TTL in milliseconds a TTL node may have
// (EphemeralType.TTL.maxValue, about 34 years); TTLs must also be positive.
const MaxTTL = int64(0x000000ffffffffff)

// Encodings of ephemeralOwner for non-session owners, as EphemeralType with
// extended types enabled.
const (
	containerOwner  = math.MinInt64                  // EphemeralType.CONTAINER_EPHEMERAL_OWNER
	extendedMask    = -0x0100000000000000            // 0xff00000000000000: top byte all ones
	reservedMask    = 0x00ffff0000000000             // extended-feature bits; 0 means TTL
	extendedValMask = ^(extendedMask | reservedMask) // the TTL bits, == MaxTTL
)

type ownerKind uint8

const (
	kindPersistent ownerKind = iota // VOID in ZooKeeper
	kindEphemeral                   // NORMAL: owned by a session
	kindContainer
	kindTTL
)

// kindOf is EphemeralType.get with extended types enabled and no 3.5.3
// emulation. Owners with the extended top byte but unknown feature bits make
// ZooKeeper throw; they cannot arise here because CreateSession refuses such
// session ids, so they are classed as session-owned.
func kindOf(owner int64) ownerKind {
	switch {
	case owner == 0:
		return kindPersistent
	case owner == containerOwner:
		return kindContainer
	case owner&extendedMask == extendedMask && owner&reservedMask == 0:
		return kindTTL
	}
	return kindEphemeral
}

// ttlOwner is EphemeralType.TTL.toEphemeralOwner for a validated ttl.
func ttlOwner(ttl int64) int64 { return extendedMask | ttl }

// pstat is ZooKeeper's StatPersisted: what is stored per node. Note cversion
// here counts child creations only; the client sees cversion*2-numChildren
// (DataNode.copyStat), i.e. one step per create and per delete, while
// sequential suffixes use the stored count.
type pstat struct {
	czxid, mzxid, pzxid         int64
	ctime, mtime                int64
	version, cversion, aversion int32
	owner                       int64
}

type node struct {
	data     []byte // never mutated in place; replaced on setData
	acl      []wire.ACL
	st       pstat
	children map[string]struct{} // nil until the first child
	chash    uint64              // hash of path, data and ACL
	dig      uint64              // this node's term in Tree.digest
	zpre     uint32              // ZooKeeper's CRC-32 of path and data, continued by the Stat into zdig
	zdig     uint32              // this node's term in Tree.zkDigest
}

// stat is DataNode.copyStat: derived cversion, numChildren, dataLength, and an
// ephemeralOwner of 0 for containers and TTL nodes.
func (n *node) stat() wire.Stat {
	nc := int32(len(n.children))
	owner := n.st.owner
	if kindOf(owner) != kindEphemeral {
		owner = 0
	}
	return wire.Stat{
		Czxid:          n.st.czxid,
		Mzxid:          n.st.mzxid,
		Ctime:          n.st.ctime,
		Mtime:          n.st.mtime,
		Version:        n.st.version,
		Cversion:       n.st.cversion*2 - nc,
		Aversion:       n.st.aversion,
		EphemeralOwner: owner,
		DataLength:     int32(len(n.data)),
		NumChildren:    nc,
		Pzxid:          n.st.pzxid,
	}
}

type session struct {
	timeout int32
	passwd  []byte
}

// Tree is the znode tree plus the session table. The zero value is not usable;
// call New or Restore.
type Tree struct {
	nodes      map[string]*node // by full path; the root is "/" (lookup maps "" to it)
	root       *node
	ephemerals map[int64]map[string]struct{} // session -> paths it owns
	containers map[string]struct{}
	ttls       map[string]struct{}
	sessions   map[int64]session
	lastZxid   int64
	digest     uint64 // sum of every node's dig, kept incrementally
	// zkDigest is ZooKeeper's tree digest (ZKDigest), the sum of every
	// node's zdig, kept incrementally beside digest.
	zkDigest int64
	// dataSize is the sum of every node's path and data lengths
	// (DataTree.approximateDataSize); ephemeralCount the number of
	// ephemeral nodes. Both are kept as nodes come and go, so mntr reads
	// them without walking the tree.
	dataSize       int64
	ephemeralCount int
	undo           *[]undoRec
	sasl           bool   // the sasl auth provider is registered: sasl ACL entries are valid
	zbuf           []byte // scratch for ZooKeeper's digest of a changed node (zkdigest.go)
	// quotas indexes the zookeeper_limits nodes by the path they put a
	// quota on (see quota.go), counting the nodes behind each key.
	quotas       map[string]int
	enforceQuota bool // zookeeper.enforceQuota: hard limits refuse writes
}

// EnableSASL registers the sasl scheme, as ZooKeeper's
// authProvider=…SASLAuthenticationProvider does: ACL entries "sasl:<id>"
// become valid and "auth" expands to the connection's sasl identities.
// Every replica must agree on it, as on any other part of the
// configuration that decides what a transaction does.
func (t *Tree) EnableSASL() { t.sasl = true }

func newEmpty() *Tree {
	return &Tree{
		nodes:      make(map[string]*node),
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
		sessions:   make(map[int64]session),
		quotas:     make(map[string]int),
	}
}

// New returns the tree of a freshly started ZooKeeper 3.8 standalone server:
// "/", "/zookeeper", "/zookeeper/quota" and "/zookeeper/config", all with zero
// zxids and times and empty (non-nil) data. They were linked without
// creates, so "/" shows cversion -1 and "/zookeeper" cversion -2, and
// "/zookeeper/config" carries world:anyone:r with aversion -1 (DataTree sets
// its ACL with version -1).
func New() *Tree {
	t := newEmpty()
	t.root = &node{data: []byte{}, acl: openACL}
	t.setRoot(t.root)
	for _, b := range []struct {
		path string
		acl  []wire.ACL
		av   int32
	}{{procPath, openACL, 0}, {quotaPath, openACL, 0}, {configPath, readACL, -1}} {
		parentPath, name, _ := splitParent(b.path)
		n := &node{data: []byte{}, acl: b.acl, st: pstat{aversion: b.av}}
		t.addNode(b.path, t.lookup(parentPath), name, n)
	}
	return t
}

func (t *Tree) setRoot(n *node) {
	t.root = n
	t.nodes["/"] = n
	t.dataSize += int64(1 + len(n.data))
	n.chash = contentHash("/", n.data, n.acl)
	n.dig = nodeDigest(n.chash, &n.st)
	n.zpre = t.zkContentCRC("/", n.data)
	n.zdig = t.zkNodeDigest("/", n.zpre, &n.st)
	t.digest += n.dig
	t.zkDigest += int64(n.zdig)
}

// lookup is DataTree's nodes.get: "" is an alias of the root.
func (t *Tree) lookup(path string) *node {
	if path == "" {
		return t.root
	}
	return t.nodes[path]
}

// LastZxid returns the largest zxid applied so far (DataTree.lastProcessedZxid).
func (t *Tree) LastZxid() int64 { return t.lastZxid }

// ConsumeZxid records zxid as used by a transaction refused before it
// reached the tree (ZooKeeper logs such a refusal as an error txn, which
// takes its zxid like any other).
func (t *Tree) ConsumeZxid(zxid int64) {
	if zxid > t.lastZxid {
		t.lastZxid = zxid
	}
}

// NodeCount returns ZooKeeper's znode count (mntr's zk_znode_count), which
// counts the root twice because DataTree stores it under both "" and "/": a
// fresh tree reports 5.
func (t *Tree) NodeCount() int { return len(t.nodes) + 1 }

// ApproximateDataSize is the sum of every node's path and data lengths, as
// mntr's zk_approximate_data_size.
func (t *Tree) ApproximateDataSize() int64 { return t.dataSize }

// EphemeralCount is the number of ephemeral nodes (zk_ephemerals_count).
func (t *Tree) EphemeralCount() int { return t.ephemeralCount }

// EphemeralsBySession lists each session's ephemeral paths, sorted, for
// the dump command.
func (t *Tree) EphemeralsBySession() map[int64][]string {
	out := make(map[int64][]string, len(t.ephemerals))
	for id, paths := range t.ephemerals {
		list := make([]string, 0, len(paths))
		for p := range paths {
			list = append(list, p)
		}
		slices.Sort(list)
		out[id] = list
	}
	return out
}

// Digest returns an order-independent hash of every node's path, data, ACL and
// persisted Stat; equal trees give equal digests whatever their history.
func (t *Tree) Digest() uint64 { return t.digest }

// addNode links a new node under parent and indexes it by owner kind.
func (t *Tree) addNode(path string, parent *node, name string, n *node) {
	n.chash = contentHash(path, n.data, n.acl)
	n.dig = nodeDigest(n.chash, &n.st)
	n.zpre = t.zkContentCRC(path, n.data)
	n.zdig = t.zkNodeDigest(path, n.zpre, &n.st)
	t.link(path, parent, name, n)
	t.log(undoRec{kind: undoAdd, path: path, name: name, n: n, parent: parent})
}

func (t *Tree) link(path string, parent *node, name string, n *node) {
	t.nodes[path] = n
	if parent.children == nil {
		parent.children = make(map[string]struct{})
	}
	parent.children[name] = struct{}{}
	switch kindOf(n.st.owner) {
	case kindEphemeral:
		s := t.ephemerals[n.st.owner]
		if s == nil {
			s = make(map[string]struct{})
			t.ephemerals[n.st.owner] = s
		}
		s[path] = struct{}{}
		t.ephemeralCount++
	case kindContainer:
		t.containers[path] = struct{}{}
	case kindTTL:
		t.ttls[path] = struct{}{}
	}
	t.digest += n.dig
	t.zkDigest += int64(n.zdig)
	t.dataSize += int64(len(path) + len(n.data))
	t.indexQuota(path, name, 1)
}

// removeNode unlinks a childless node.
func (t *Tree) removeNode(path string, parent *node, name string, n *node) {
	t.unlink(path, parent, name, n)
	t.log(undoRec{kind: undoRemove, path: path, name: name, n: n, parent: parent})
}

func (t *Tree) unlink(path string, parent *node, name string, n *node) {
	delete(t.nodes, path)
	delete(parent.children, name)
	switch kindOf(n.st.owner) {
	case kindEphemeral:
		if s := t.ephemerals[n.st.owner]; s != nil {
			delete(s, path)
			t.ephemeralCount--
			if len(s) == 0 {
				delete(t.ephemerals, n.st.owner)
			}
		}
	case kindContainer:
		delete(t.containers, path)
	case kindTTL:
		delete(t.ttls, path)
	}
	t.digest -= n.dig
	t.zkDigest -= int64(n.zdig)
	t.dataSize -= int64(len(path) + len(n.data))
	t.indexQuota(path, name, -1)
}

// save records n's current fields before an in-place change, when a multi
// is being applied, so the change can be undone.
func (t *Tree) save(n *node) {
	if t.undo != nil {
		t.log(undoRec{kind: undoSet, n: n, vals: nodeVals{n.data, n.acl, n.st, n.chash, n.dig, n.zpre, n.zdig}})
	}
}

// rehash refreshes n's digest terms after a change; content says whether
// data or ACL changed (and so the content hashes must be recomputed under
// path).
func (t *Tree) rehash(path string, n *node, content bool) {
	if content {
		n.chash = contentHash(path, n.data, n.acl)
		n.zpre = t.zkContentCRC(path, n.data)
	}
	d := nodeDigest(n.chash, &n.st)
	t.digest += d - n.dig
	n.dig = d
	z := t.zkNodeDigest(path, n.zpre, &n.st)
	t.zkDigest += int64(z) - int64(n.zdig)
	n.zdig = z
}

type undoKind uint8

const (
	undoAdd undoKind = iota
	undoRemove
	undoSet
)

type nodeVals struct {
	data       []byte
	acl        []wire.ACL
	st         pstat
	chash, dig uint64
	zpre, zdig uint32
}

// undoRec is one entry of the multi undo log: the inverse of a primitive
// change. Only touched nodes are recorded, never the tree.
type undoRec struct {
	kind      undoKind
	path      string
	name      string
	n, parent *node
	vals      nodeVals
}

func (t *Tree) log(r undoRec) {
	if t.undo != nil {
		*t.undo = append(*t.undo, r)
	}
}

// rollback undoes the log newest first, restoring nodes, indexes and digest.
func (t *Tree) rollback(log []undoRec) {
	for i := len(log) - 1; i >= 0; i-- {
		r := &log[i]
		switch r.kind {
		case undoAdd:
			t.unlink(r.path, r.parent, r.name, r.n)
			if len(r.parent.children) == 0 {
				r.parent.children = nil
			}
		case undoRemove:
			t.link(r.path, r.parent, r.name, r.n)
		case undoSet:
			n := r.n
			t.digest += r.vals.dig - n.dig
			t.zkDigest += int64(r.vals.zdig) - int64(n.zdig)
			t.dataSize += int64(len(r.vals.data) - len(n.data))
			n.data, n.acl, n.st, n.chash, n.dig, n.zpre, n.zdig = r.vals.data, r.vals.acl, r.vals.st, r.vals.chash, r.vals.dig, r.vals.zpre, r.vals.zdig
		}
	}
}

var crcTable = crc64.MakeTable(crc64.ECMA)

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	h = fnvUint(h, uint64(len(s)))
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func fnvUint(h, v uint64) uint64 {
	for i := 0; i < 8; i++ {
		h ^= v & 0xff
		h *= fnvPrime
		v >>= 8
	}
	return h
}

// mix is the splitmix64 finaliser; node terms are summed, so each must be
// well spread for the sum to be a useful digest.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func contentHash(path string, data []byte, acl []wire.ACL) uint64 {
	h := fnvString(fnvOffset, path)
	if data == nil {
		h = fnvUint(h, math.MaxUint64) // nil and empty data are different on the wire
	} else {
		h = fnvUint(h, uint64(len(data)))
		h = fnvUint(h, crc64.Update(0, crcTable, data))
	}
	h = fnvUint(h, uint64(len(acl)))
	for _, a := range acl {
		h = fnvUint(h, uint64(uint32(a.Perms)))
		h = fnvString(h, a.ID.Scheme)
		h = fnvString(h, a.ID.ID)
	}
	return h
}

func nodeDigest(chash uint64, s *pstat) uint64 {
	h := mix(chash)
	for _, v := range [...]int64{s.czxid, s.mzxid, s.pzxid, s.ctime, s.mtime,
		int64(s.version), int64(s.cversion), int64(s.aversion), s.owner} {
		h = mix(h ^ uint64(v))
	}
	return h
}
