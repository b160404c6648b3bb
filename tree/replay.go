package tree

import (
	"slices"

	"github.com/hutchzk/hutch/wire"
)

// Replay: ZooKeeper's logged transactions applied as ZooKeeper applies them
// when it loads its logs (DataTree.processTxn). A log entry was decided
// already, so there is no validation beyond what DataTree does: versions
// are set, not checked; a node that is missing or already there is
// ErrNoNode or ErrNodeExists, which replay ignores (ZooKeeper's snapshots
// are fuzzy: taken while writes went on, they may already hold a change
// the log replays).
//
// ZooKeeper leaves one trace of such a replay that the tree has no place
// for: a delete of a node that has children (a snapshot holding a
// recreated node and its new children when an older delete of the node is
// replayed) leaves the children in DataTree's node table, without a
// parent, until their own creates are replayed and replace them. The
// Loader keeps them aside as orphans, counted in ZooKeeper's digest as
// DataTree counts them, and Finish refuses a tree that still has any.

// CreateNode is DataTree.createNode: the node gets zxid and time as its
// creation and modification, owner as its ephemeralOwner (a session, or a
// container's or TTL node's marker). The parent's stored cversion becomes
// parentCVersion (-1: one more than now), with pzxid zxid, only if that
// raises it.
func (l *Loader) CreateNode(path string, data []byte, acl []wire.ACL, owner int64, parentCVersion int32, zxid, time int64) error {
	t := l.t
	parentPath, name, ok := splitParent(path)
	if !ok || !validPath(path) || path == "/" {
		return loadErr(path, "not a path a node can be created at")
	}
	parent := t.lookup(parentPath)
	if parent == nil {
		return ErrNoNode
	}
	if _, exists := parent.children[name]; exists {
		return ErrNodeExists
	}
	if parentCVersion == -1 {
		parentCVersion = parent.st.cversion + 1
	}
	if parentCVersion > parent.st.cversion {
		parent.st.cversion = parentCVersion
		parent.st.pzxid = zxid
		t.rehash(parentPath, parent, false)
	}
	l.dropOrphan(path)
	n := &node{data: data, acl: acl, st: pstat{czxid: zxid, mzxid: zxid, pzxid: zxid, ctime: time, mtime: time, owner: owner}}
	t.addNode(path, parent, name, n)
	return nil
}

// DeleteNode is DataTree.deleteNode: the parent's pzxid rises to zxid
// (even when the node turns out to be missing), and the node goes.
func (l *Loader) DeleteNode(path string, zxid int64) error {
	t := l.t
	parentPath, name, ok := splitParent(path)
	if !ok || !validPath(path) || path == "/" {
		return loadErr(path, "not a path a node can be deleted at")
	}
	parent := t.lookup(parentPath)
	if parent == nil {
		return ErrNoNode
	}
	if zxid > parent.st.pzxid {
		parent.st.pzxid = zxid
		t.rehash(parentPath, parent, false)
	}
	n := t.nodes[path]
	if n == nil {
		if l.dropOrphan(path) {
			return nil
		}
		return ErrNoNode
	}
	if len(n.children) > 0 {
		l.orphanChildren(path, n)
	}
	t.removeNode(path, parent, name, n)
	return nil
}

// orphanChildren moves the descendants of n out of the tree, into the
// orphans.
func (l *Loader) orphanChildren(path string, n *node) {
	t := l.t
	for _, name := range sortedChildren(n) {
		p := path + "/" + name
		c := t.nodes[p]
		if len(c.children) > 0 {
			l.orphanChildren(p, c)
		}
		t.removeNode(p, n, name, c)
		if l.orphans == nil {
			l.orphans = make(map[string]*node)
		}
		l.orphans[p] = c
		l.orphanDigest += int64(c.zdig)
	}
}

// dropOrphan forgets an orphan at path, as DataTree's node table loses it
// when a node is put there or deleted; false if there is none.
func (l *Loader) dropOrphan(path string) bool {
	n, ok := l.orphans[path]
	if ok {
		delete(l.orphans, path)
		l.orphanDigest -= int64(n.zdig)
	}
	return ok
}

// SetData is DataTree.setData: data, version (as logged), mzxid and mtime.
func (l *Loader) SetData(path string, data []byte, version int32, zxid, time int64) error {
	if !validPath(path) {
		return loadErr(path, "not a valid path")
	}
	n := l.t.lookup(path)
	if n == nil {
		return ErrNoNode
	}
	l.t.dataSize += int64(len(data) - len(n.data))
	n.data = data
	n.st.version, n.st.mzxid, n.st.mtime = version, zxid, time
	l.t.rehash(path, n, true)
	return nil
}

// SetACL is DataTree.setACL: the ACL and aversion (as logged).
func (l *Loader) SetACL(path string, acl []wire.ACL, version int32) error {
	if !validPath(path) {
		return loadErr(path, "not a valid path")
	}
	n := l.t.lookup(path)
	if n == nil {
		return ErrNoNode
	}
	n.acl = acl
	n.st.aversion = version
	l.t.rehash(path, n, true)
	return nil
}

// SetCversionPzxid is DataTree.setCversionPzxid, which replay applies to
// the parent of a create that finds its node already there: the stored
// cversion becomes cversion (-1: one more than now), with pzxid zxid, only
// if that raises it.
func (l *Loader) SetCversionPzxid(path string, cversion int32, zxid int64) error {
	if len(path) > 1 && path[len(path)-1] == '/' {
		path = path[:len(path)-1]
	}
	if path == "" {
		path = "/" // the parent of a top-level node
	}
	if !validPath(path) {
		return loadErr(path, "not a valid path")
	}
	n := l.t.lookup(path)
	if n == nil {
		return ErrNoNode
	}
	if cversion == -1 {
		cversion = n.st.cversion + 1
	}
	if cversion > n.st.cversion {
		n.st.cversion, n.st.pzxid = cversion, zxid
		l.t.rehash(path, n, false)
	}
	return nil
}

// OpenSession is a logged createSession: the session is registered with
// its timeout and password (replacing one with the same id, as ZooKeeper's
// session table does).
func (l *Loader) OpenSession(id int64, timeout int32, passwd []byte) error {
	delete(l.t.sessions, id)
	return l.Session(id, timeout, passwd)
}

// CloseSession is a logged closeSession (DataTree.killSession): the
// session is forgotten and its ephemerals deleted, first the paths the
// transaction lists (ZooKeeper 3.6+; nil for older logs), then any other
// the tree still has for it. A listed path is deleted whoever owns it now,
// as ZooKeeper does.
func (l *Loader) CloseSession(id, zxid int64, listed []string) {
	t := l.t
	local := t.ephemerals[id]
	skip := make(map[string]struct{}, len(listed))
	for _, p := range listed {
		skip[p] = struct{}{}
	}
	rest := make([]string, 0, len(local))
	for p := range local {
		if _, ok := skip[p]; !ok {
			rest = append(rest, p)
		}
	}
	slices.Sort(rest)
	for _, p := range listed {
		_ = l.DeleteNode(p, zxid)
	}
	for _, p := range rest {
		_ = l.DeleteNode(p, zxid)
	}
	delete(t.sessions, id)
}

// ZKDigest is ZooKeeper's digest of what has been loaded and replayed so
// far, orphans included, to compare with the digests ZooKeeper logged.
func (l *Loader) ZKDigest() int64 { return l.t.zkDigest + l.orphanDigest }
