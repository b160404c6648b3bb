package hutchtest

import (
	"time"

	"github.com/hutchzk/hutch/treejson"
)

// Snapshot is a tree's content, for fixtures: every node a test created
// that outlives its session (persistent, container and TTL nodes) with
// its data and ACL, parents before children. Ephemerals are left out,
// as are the root and ZooKeeper's own nodes; a node's Stat (zxids,
// times, versions) is not kept. It encodes as JSON a person can read and
// write (Marshal, WriteFile, ReadSnapshot): package treejson's form, which
// hutch cli's dump and load use too.
type Snapshot = treejson.Tree

// SnapshotNode is one node of a Snapshot.
type SnapshotNode = treejson.Node

// ReadSnapshot reads a Snapshot from a JSON file (a fixture).
func ReadSnapshot(path string) (Snapshot, error) { return treejson.ReadFile(path) }

// Snapshot captures the tree's content (see type Snapshot).
func (s *Server) Snapshot() Snapshot {
	s.tb.Helper()
	var snap Snapshot
	for _, n := range s.srv().ReadTree() {
		if builtIn(n.Path) || n.Stat.EphemeralOwner != 0 {
			continue
		}
		sn := SnapshotNode{Path: n.Path, Data: n.Data, ACL: treejson.FormatACLs(n.ACL), Container: n.Container, TTL: time.Duration(n.TTL) * time.Millisecond}
		snap.Nodes = append(snap.Nodes, sn)
	}
	return snap
}

// Load creates every node of snap, in order, as the super user (its ACLs
// bind clients, not the loading), each through the log like any client's
// write, so a loaded tree is replicated and kept like any other. It fails
// the test if a node cannot be created (it exists already, its parent is
// missing, an ACL does not parse).
func (s *Server) Load(snap Snapshot) {
	s.tb.Helper()
	srv := s.srv()
	for _, n := range snap.Nodes {
		acl, err := treejson.ParseACLs(n.ACL)
		if err != nil {
			s.tb.Fatalf("hutchtest: load %s: %v", n.Path, err)
		}
		if err := srv.CreateNode(n.Path, n.Data, acl, n.CreateFlags(), n.TTL); err != nil {
			s.tb.Fatalf("hutchtest: load: %v", err)
		}
	}
}
