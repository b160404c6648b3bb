package server

import (
	"cmp"
	"slices"
	"time"

	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// Read-only views of the server's state for tests' assertions (package
// hutchtest). Each call copies what it shows into plain values; none
// changes anything, and none waits for more than the DB's read lock.

// superAuth reads every node whatever its ACL.
var superAuth = []wire.ID{{Scheme: "super"}}

// SessionInfo is one live session as this node sees it.
type SessionInfo struct {
	ID      int64
	Timeout time.Duration // as negotiated at creation or the last attach
	// Expires is when this node would expire it if no client touched it
	// before; zero on a node that does not expire sessions (a follower).
	Expires time.Time
	// Connected is set when a connection to this node carries it.
	Connected bool
	// Ephemerals are its ephemeral nodes, sorted.
	Ephemerals []string
	// Watches are the watches its connection to this node holds.
	Watches []WatchInfo
}

// WatchInfo is what one session watches on one path.
type WatchInfo struct {
	Path    string
	Session int64 // the session of the connection that set it (0 if it has none)
	// Data is a one-shot data watch (getData, exists), Child a one-shot
	// child watch (getChildren); Persistent and Recursive are addWatch's
	// modes.
	Data, Child, Persistent, Recursive bool
}

// NodeInfo is one znode.
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

// Sessions lists the live sessions, by id.
func (s *Server) Sessions() []SessionInfo {
	var ids []int64
	s.db.Read(func(v *zkdb.View) { ids = v.Tree.Sessions() })
	eph := s.db.Ephemerals()
	expires := make(map[int64]time.Time)
	for _, b := range s.db.ExpiryBuckets() {
		for _, id := range b.Sessions {
			expires[id] = b.Expires
		}
	}
	connected := make(map[int64]bool)
	for _, c := range s.openConns() {
		if id := c.sessionID.Load(); id != 0 {
			connected[id] = true
		}
	}
	watches := make(map[int64][]WatchInfo)
	for _, w := range s.Watches() {
		watches[w.Session] = append(watches[w.Session], w)
	}
	out := make([]SessionInfo, 0, len(ids))
	for _, id := range ids {
		timeout, _, ok := s.db.Session(id)
		if !ok {
			continue // closed since
		}
		e := slices.Clone(eph[id])
		slices.Sort(e)
		out = append(out, SessionInfo{ID: id, Timeout: timeout, Expires: expires[id],
			Connected: connected[id], Ephemerals: e, Watches: watches[id]})
	}
	return out
}

// Watches lists every watch set through this node, by path and then
// session.
func (s *Server) Watches() []WatchInfo {
	sessionOf := make(map[int64]int64)
	for _, c := range s.openConns() {
		sessionOf[c.id] = c.sessionID.Load()
	}
	entries := s.db.Watches()
	out := make([]WatchInfo, 0, len(entries))
	for _, e := range entries {
		out = append(out, WatchInfo{Path: e.Path, Session: sessionOf[e.Watcher],
			Data: e.Data, Child: e.Child, Persistent: e.Persistent, Recursive: e.Recursive})
	}
	slices.SortFunc(out, func(a, b WatchInfo) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Session, b.Session))
	})
	return out
}

// Node returns one node, whatever its ACL; false if there is none.
func (s *Server) Node(path string) (NodeInfo, bool) {
	var n NodeInfo
	var ok bool
	s.db.Read(func(v *zkdb.View) { n, ok = readNode(v, path) })
	return n, ok
}

// Nodes returns every node of the tree, parents before children (each
// level sorted), the root and /zookeeper's included.
func (s *Server) Nodes() []NodeInfo {
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
