package server

import (
	"slices"

	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// Whole-tree reads for tests' assertions and fixtures (package
// hutchtest): what Node and Children (monitor.Source) show an anonymous
// operator, read here as the super user, with the modes Stat cannot show.
// Sessions and watches come from Snapshot.

// superAuth reads every node whatever its ACL.
var superAuth = []wire.ID{{Scheme: "super"}}

// NodeInfo is one znode, whatever its ACL.
type NodeInfo struct {
	Path     string
	Data     []byte
	Stat     wire.Stat
	ACL      []wire.ACL
	Children []string // names, sorted
	// Container and TTL (in ms, 0 if none) tell the modes Stat cannot.
	Container bool
	TTL       int64
}

// ReadNode returns one node, whatever its ACL; false if there is none.
func (s *Server) ReadNode(path string) (NodeInfo, bool) {
	var n NodeInfo
	var ok bool
	s.db.Read(func(v *zkdb.View) { n, ok = readNode(v, path) })
	return n, ok
}

// ReadTree returns every node of the tree, read at one instant, parents
// before children (each level sorted), the root and /zookeeper's
// included.
func (s *Server) ReadTree() []NodeInfo {
	var out []NodeInfo
	s.db.Read(func(v *zkdb.View) {
		queue := []string{"/"}
		for len(queue) > 0 {
			path := queue[0]
			queue = queue[1:]
			n, ok := readNode(v, path)
			if !ok {
				continue
			}
			out = append(out, n)
			for _, child := range n.Children {
				queue = append(queue, childPath(path, child))
			}
		}
	})
	return out
}

// readNode reads path under v.
func readNode(v *zkdb.View, path string) (NodeInfo, bool) {
	data, st, err := v.Tree.GetData(path, superAuth)
	if err != nil {
		return NodeInfo{}, false
	}
	n := NodeInfo{Path: path, Data: slices.Clone(data), Stat: st}
	n.ACL, _, _ = v.Tree.GetACL(path, superAuth)
	children, _, _ := v.Tree.GetChildren(path, superAuth)
	n.Children = slices.Clone(children)
	n.Container, n.TTL, _ = v.Tree.Mode(path)
	return n, true
}

func childPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}
