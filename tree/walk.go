package tree

import "github.com/hutchzk/hutch/wire"

// NodeRecord is one node as Walk visits it: everything a snapshot, an
// export or a dump holds of it. Its slices belong to the tree and must not
// be changed.
type NodeRecord struct {
	Path        string
	Data        []byte
	ACL         []wire.ACL
	Stat        StoredStat
	NumChildren int
}

// Walk visits the node at from and every node below it, each parent before
// its children and children in name order, and stops at the first error fn
// returns, which it returns; ErrNoNode if from does not exist. The record
// is reused between calls. The tree must not change during the walk.
func (t *Tree) Walk(from string, fn func(*NodeRecord) error) error {
	n := t.lookup(from)
	if n == nil || from == "" {
		return ErrNoNode
	}
	var rec NodeRecord
	visit := func(path string, n *node) error {
		rec = NodeRecord{Path: path, Data: n.data, ACL: n.acl, Stat: n.st.stored(), NumChildren: len(n.children)}
		return fn(&rec)
	}
	if err := visit(from, n); err != nil {
		return err
	}
	type frame struct {
		path  string // "" for the root, so children join as "/name"
		names []string
	}
	base := from
	if base == "/" {
		base = ""
	}
	stack := []frame{{base, sortedChildren(n)}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if len(top.names) == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		path := top.path + "/" + top.names[0]
		top.names = top.names[1:]
		c := t.nodes[path]
		if err := visit(path, c); err != nil {
			return err
		}
		if len(c.children) > 0 {
			stack = append(stack, frame{path, sortedChildren(c)})
		}
	}
	return nil
}
