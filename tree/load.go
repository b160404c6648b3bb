package tree

import (
	"errors"
	"fmt"

	"github.com/hutchzk/hutch/wire"
)

// StoredStat is a node's Stat as ZooKeeper stores it (StatPersisted), the
// form snapshots carry: Cversion counts child creations only (clients see
// Cversion*2-numChildren), and EphemeralOwner also marks containers
// (math.MinInt64) and TTL nodes (top byte 0xff, the TTL below).
type StoredStat struct {
	Czxid, Mzxid, Pzxid         int64
	Ctime, Mtime                int64
	Version, Cversion, Aversion int32
	EphemeralOwner              int64
}

func (s *StoredStat) pstat() pstat {
	return pstat{czxid: s.Czxid, mzxid: s.Mzxid, pzxid: s.Pzxid, ctime: s.Ctime, mtime: s.Mtime,
		version: s.Version, cversion: s.Cversion, aversion: s.Aversion, owner: s.EphemeralOwner}
}

func (p *pstat) stored() StoredStat {
	return StoredStat{Czxid: p.czxid, Mzxid: p.mzxid, Pzxid: p.pzxid, Ctime: p.ctime, Mtime: p.mtime,
		Version: p.version, Cversion: p.cversion, Aversion: p.aversion, EphemeralOwner: p.owner}
}

// LoadError is a loaded tree that does not hold together: what is wrong,
// and the path or session it is about.
type LoadError struct {
	Path string // "" when the error is not about one node
	Msg  string
}

func (e *LoadError) Error() string {
	if e.Path == "" {
		return "tree: load: " + e.Msg
	}
	return fmt.Sprintf("tree: load: %s: %s", e.Path, e.Msg)
}

func loadErr(path, format string, args ...any) error {
	return &LoadError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// A Loader builds a tree from saved records, each node with the Stat it was
// stored with: the one way a tree is loaded, for hutch's own snapshots
// (Restore) and for ZooKeeper's snapshots and logs (package zkimport), so
// that a loaded tree is checked in one place (Finish).
//
// Nodes come parent first, the root ("/") before anything else. The
// Loader also replays ZooKeeper's logged transactions with ZooKeeper's own
// rules (replay.go), which a snapshot taken while writes went on needs.
type Loader struct {
	t *Tree
	// last is the node added last and its path: in a depth-first stream
	// it is usually the next node's parent, or shares its parent.
	lastPath, lastParentPath string
	last, lastParent         *node
	// orphans are nodes a replayed delete left without a parent, and
	// orphanDigest their terms in ZooKeeper's digest (replay.go).
	orphans      map[string]*node
	orphanDigest int64
}

// NewLoader starts an empty tree: not even a root.
func NewLoader() *Loader { return &Loader{t: newEmpty()} }

// Session registers a session with its timeout (ms) and password. Ids
// ZooKeeper could never issue are refused, as createSession refuses them.
func (l *Loader) Session(id int64, timeout int32, passwd []byte) error {
	if kindOf(id) != kindEphemeral || id&extendedMask == extendedMask {
		return loadErr("", "session %#x: not a session id", id)
	}
	if _, dup := l.t.sessions[id]; dup {
		return loadErr("", "session %#x listed twice", id)
	}
	if timeout < 0 {
		return loadErr("", "session %#x: negative timeout %d", id, timeout)
	}
	l.t.sessions[id] = session{timeout: timeout, passwd: cloneData(passwd)}
	return nil
}

// Node adds a node with its data (kept, not copied: the caller must not
// change it), ACL (likewise; nodes may share one list) and stored Stat. Its
// parent must already be loaded, and be no ephemeral.
func (l *Loader) Node(path string, data []byte, acl []wire.ACL, st StoredStat) error {
	t := l.t
	if path == "/" {
		if t.root != nil {
			return loadErr(path, "listed twice")
		}
		t.setRoot(&node{data: data, acl: acl, st: st.pstat()})
		l.last, l.lastPath = t.root, "/"
		return nil
	}
	if t.root == nil {
		return loadErr(path, "comes before the root")
	}
	parentPath, name, ok := splitParent(path)
	if !ok || !validPath(path) {
		return loadErr(path, "not a valid path")
	}
	if parentPath == "" {
		parentPath = "/"
	}
	var parent *node
	switch parentPath {
	case l.lastPath:
		parent = l.last
	case l.lastParentPath:
		parent = l.lastParent
	default:
		parent = t.lookup(parentPath)
	}
	if parent == nil {
		return loadErr(path, "its parent is missing")
	}
	if kindOf(parent.st.owner) == kindEphemeral {
		return loadErr(path, "its parent is an ephemeral node")
	}
	if t.nodes[path] != nil {
		return loadErr(path, "listed twice")
	}
	n := &node{data: data, acl: acl, st: st.pstat()}
	t.addNode(path, parent, name, n)
	l.last, l.lastPath, l.lastParent, l.lastParentPath = n, path, parent, parentPath
	return nil
}

// Lookup returns a loaded node's data, ACL and stored Stat.
func (l *Loader) Lookup(path string) (data []byte, acl []wire.ACL, st StoredStat, ok bool) {
	n := l.t.lookup(path)
	if n == nil {
		return nil, nil, StoredStat{}, false
	}
	return n.data, n.acl, n.st.stored(), true
}

// Finish checks the tree and returns it with lastZxid as its last zxid:
// there is a root; every ephemeral's session is registered; no node has a
// zxid beyond lastZxid (a node from a transaction that is missing). The
// Loader may go on replaying afterwards (following a live log) and Finish
// again; the tree returned is the same one, so the caller must not read it
// while replaying.
func (l *Loader) Finish(lastZxid int64) (*Tree, error) {
	t := l.t
	if t.root == nil {
		return nil, loadErr("", "no root node")
	}
	for p := range l.orphans {
		return nil, loadErr(p, "left without its parent by a replayed delete, and never created again")
	}
	var errs []error
	for id, paths := range t.ephemerals {
		if _, ok := t.sessions[id]; !ok {
			for p := range paths {
				errs = append(errs, loadErr(p, "ephemeral of session %#x, which is not open", id))
				break
			}
		}
		if len(errs) >= 10 {
			break
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for p, n := range t.nodes {
		if z := max(n.st.czxid, n.st.mzxid, n.st.pzxid); z > lastZxid {
			return nil, loadErr(p, "changed by zxid %#x, after the last transaction %#x", z, lastZxid)
		}
	}
	t.lastZxid = lastZxid
	return t, nil
}
