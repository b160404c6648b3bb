package tree

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hutchzk/hutch/wire"
)

// Reads follow FinalRequestProcessor: no path validation (an unknown or
// malformed path is simply NoNode, and "" is the root, as DataTree's node
// table aliases it), node lookup before the ACL check. Returned slices must
// not be modified; data slices stay valid after later writes because the
// tree replaces rather than mutates them.

// GetData returns a node's data and Stat; READ permission is required.
func (t *Tree) GetData(path string, auth []wire.ID) ([]byte, wire.Stat, error) {
	n := t.lookup(path)
	if n == nil {
		return nil, wire.Stat{}, ErrNoNode
	}
	if err := checkACL(n.acl, wire.PermRead, auth); err != nil {
		return nil, wire.Stat{}, err
	}
	return n.data, n.stat(), nil
}

// Exists returns a node's Stat without any ACL check, as ZooKeeper up to
// 3.8.3 does; a path containing NUL is BadArguments. See ExistsACL for 3.8.4+.
func (t *Tree) Exists(path string) (wire.Stat, error) {
	if strings.IndexByte(path, 0) >= 0 {
		return wire.Stat{}, ErrBadArguments
	}
	n := t.lookup(path)
	if n == nil {
		return wire.Stat{}, ErrNoNode
	}
	return n.stat(), nil
}

// ExistsACL is exists as ZooKeeper 3.8.4 and later answer it
// (ZOOKEEPER-2590): like Exists, but an existing node also requires READ
// permission (NoAuth otherwise). A missing node is NoNode whatever the auth.
func (t *Tree) ExistsACL(path string, auth []wire.ID) (wire.Stat, error) {
	if strings.IndexByte(path, 0) >= 0 {
		return wire.Stat{}, ErrBadArguments
	}
	n := t.lookup(path)
	if n == nil {
		return wire.Stat{}, ErrNoNode
	}
	if err := checkACL(n.acl, wire.PermRead, auth); err != nil {
		return wire.Stat{}, err
	}
	return n.stat(), nil
}

// GetChildren returns a node's child names, sorted (ZooKeeper's order is a
// HashSet's, i.e. unspecified), and its Stat; READ permission is required.
func (t *Tree) GetChildren(path string, auth []wire.ID) ([]string, wire.Stat, error) {
	names, st, err := t.ChildNames(path, auth)
	slices.Sort(names)
	return names, st, err
}

// ChildrenPage returns, in name order, at most limit of a node's child
// names that sort after after ("" from the first), and its Stat; READ
// permission is required. It picks them in one pass over the children,
// keeping only the smallest few, instead of sorting every name: a page of
// a node with 100,000 children costs one walk of its child set and a sort
// of about a page.
func (t *Tree) ChildrenPage(path, after string, limit int, auth []wire.ID) ([]string, wire.Stat, error) {
	n := t.lookup(path)
	if n == nil {
		return nil, wire.Stat{}, ErrNoNode
	}
	if err := checkACL(n.acl, wire.PermRead, auth); err != nil {
		return nil, wire.Stat{}, err
	}
	if limit <= 0 {
		return []string{}, n.stat(), nil
	}
	// Gather candidates; whenever there are twice a page of them, keep
	// the smallest page: O(children × log limit) and a page of memory.
	// Past the first cut, a name at or above the page's largest cannot
	// make the page.
	keep := make([]string, 0, 2*limit)
	var bound string
	bounded := false
	for name := range n.children {
		if name <= after || bounded && name >= bound {
			continue
		}
		if len(keep) == cap(keep) {
			slices.Sort(keep)
			keep = keep[:limit]
			bound, bounded = keep[limit-1], true
			if name >= bound {
				continue
			}
		}
		keep = append(keep, name)
	}
	slices.Sort(keep)
	return slices.Clone(keep[:min(limit, len(keep))]), n.stat(), nil
}

// ChildNames returns a copy of a node's child names in no particular
// order, and its Stat; READ permission is required. A caller that sorts
// them does so after releasing its lock.
func (t *Tree) ChildNames(path string, auth []wire.ID) ([]string, wire.Stat, error) {
	n := t.lookup(path)
	if n == nil {
		return nil, wire.Stat{}, ErrNoNode
	}
	if err := checkACL(n.acl, wire.PermRead, auth); err != nil {
		return nil, wire.Stat{}, err
	}
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	return names, n.stat(), nil
}

// GetACL returns a copy of a node's ACL and its Stat. As in ZooKeeper 3.8 the
// caller needs READ or ADMIN; without ADMIN every digest id is redacted to
// "user:x" so password hashes do not leak.
func (t *Tree) GetACL(path string, auth []wire.ID) ([]wire.ACL, wire.Stat, error) {
	n := t.lookup(path)
	if n == nil {
		return nil, wire.Stat{}, ErrNoNode
	}
	if err := checkACL(n.acl, wire.PermRead|wire.PermAdmin, auth); err != nil {
		return nil, wire.Stat{}, err
	}
	acl := slices.Clone(n.acl)
	if checkACL(n.acl, wire.PermAdmin, auth) != nil {
		for i := range acl {
			if acl[i].ID.Scheme == schemeDigest {
				acl[i].ID.ID = redactDigest(acl[i].ID.ID)
			}
		}
	}
	return acl, n.stat(), nil
}

// GetEphemerals lists the ephemerals of a session, sorted. As in
// FinalRequestProcessor the prefix is not validated: an empty, blank or "/"
// prefix (after Java's trim) means all, anything else is a plain string-prefix
// filter on the untrimmed prefix. The error is always nil today.
func (t *Tree) GetEphemerals(session int64, prefix string) ([]string, error) {
	all := javaTrim(prefix) == "" || javaTrim(prefix) == "/"
	// Java compares decoded strings: a prefix with invalid UTF-8 contains
	// U+FFFD, which no node path can, so it matches nothing (while a raw byte
	// prefix could match the start of a multi-byte rune).
	if !all && !utf8.ValidString(prefix) {
		return []string{}, nil
	}
	out := []string{}
	for p := range t.ephemerals[session] {
		if all || strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// AllChildrenNumber counts every node below path (not the node itself);
// READ permission on the node is required. For "" ZooKeeper's prefix scan
// also counts the root, so the result is one more than for "/".
func (t *Tree) AllChildrenNumber(path string, auth []wire.ID) (int32, error) {
	n := t.lookup(path)
	if n == nil {
		return 0, ErrNoNode
	}
	if err := checkACL(n.acl, wire.PermRead, auth); err != nil {
		return 0, err
	}
	switch path {
	case "/":
		return int32(len(t.nodes) - 1), nil
	case "":
		return int32(len(t.nodes)), nil
	}
	return int32(t.countBelow(path, n)), nil
}

// countBelow walks the subtree iteratively: paths may be deep enough that
// recursion would be a liability.
func (t *Tree) countBelow(path string, n *node) int {
	type item struct {
		path string
		n    *node
	}
	count := 0
	stack := []item{{path, n}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for name := range it.n.children {
			p := it.path + "/" + name
			count++
			if c := t.nodes[p]; c != nil && len(c.children) > 0 {
				stack = append(stack, item{p, c})
			}
		}
	}
	return count
}

// Stat returns a node's Stat with no checks at all (for setWatches).
func (t *Tree) Stat(path string) (wire.Stat, bool) {
	n := t.lookup(path)
	if n == nil {
		return wire.Stat{}, false
	}
	return n.stat(), true
}

// Session returns a registered session's timeout and password.
func (t *Tree) Session(id int64) (timeout int32, passwd []byte, ok bool) {
	s, ok := t.sessions[id]
	return s.timeout, s.passwd, ok
}

// Sessions lists registered session ids in ascending order.
func (t *Tree) Sessions() []int64 {
	ids := make([]int64, 0, len(t.sessions))
	for id := range t.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ExpiryCandidates returns, sorted, the nodes ContainerManager would ask to
// delete at nowMs: childless containers that have ever had a child (stored
// cversion > 0) and childless TTL nodes whose mtime is more than their TTL
// before nowMs. Issue an OpDeleteContainer txn for each.
func (t *Tree) ExpiryCandidates(nowMs int64) []string {
	out := []string{}
	for p := range t.containers {
		if n := t.nodes[p]; n != nil && len(n.children) == 0 && n.st.cversion > 0 {
			out = append(out, p)
		}
	}
	for p := range t.ttls {
		n := t.nodes[p]
		if n == nil || len(n.children) > 0 {
			continue
		}
		if ttlExpired(n, nowMs) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// ttlExpired reports whether TTL node n has gone unmodified for longer
// than its TTL at nowMs, ContainerManager's test.
func ttlExpired(n *node, nowMs int64) bool {
	ttl := n.st.owner & extendedValMask
	return ttl != 0 && nowMs-n.st.mtime > ttl
}

// Mode tells a container from a TTL node (with its TTL in ms) from any
// other, which Stat cannot: ZooKeeper shows both with ephemeralOwner 0.
func (t *Tree) Mode(path string) (container bool, ttl int64, ok bool) {
	n := t.lookup(path)
	if n == nil {
		return false, 0, false
	}
	switch kindOf(n.st.owner) {
	case kindContainer:
		return true, 0, true
	case kindTTL:
		return false, n.st.owner & extendedValMask, true
	}
	return false, 0, true
}
