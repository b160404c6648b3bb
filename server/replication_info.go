package server

import (
	"context"
	"errors"
	"time"

	"github.com/hutchzk/hutch/tree"

	"github.com/hutchzk/hutch/raftstore"
)

// ReplicationInfo describes this node's place in its ensemble, for the
// four-letter words, the admin commands and the metrics. A standalone
// node has only Mode set.
type ReplicationInfo struct {
	Mode        string // standalone, leader or follower
	NodeID      uint64
	LeaderID    uint64 // 0 when no leader is known
	LeaderAddr  string
	Term        uint64
	Members     []raftstore.Member
	LastContact time.Time // the leader's last contact; zero on the leader
	// Raft holds hashicorp/raft's statistics (commit_index, applied_index,
	// last_log_index, last_snapshot_index, ...) as numbers where they are.
	Raft map[string]string
	// DataDir is where the Raft log and snapshots live; "" in memory.
	DataDir string
}

// Replication reports this node's place in its ensemble.
func (s *Server) Replication() ReplicationInfo {
	if s.repl == nil {
		return ReplicationInfo{Mode: raftstore.Standalone.String(), NodeID: s.nodeID}
	}
	in := s.repl.Info()
	return ReplicationInfo{Mode: in.Role.String(), NodeID: in.NodeID, LeaderID: in.LeaderID, LeaderAddr: in.LeaderAddr,
		Term: in.Term, Members: in.Members, LastContact: in.LastContact, Raft: in.Raft, DataDir: in.DataDir}
}

// catchUp brings this node's state up to every write committed before the
// call, for sync and re-attach.
func (s *Server) catchUp(ctx context.Context) error {
	err := s.repl.CatchUp(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return tree.ErrSystemError
	}
	return err
}

// ErrNotReplicated is returned by membership calls on a node without Raft.
var ErrNotReplicated = errors.New("server: not a replicated node")

// AddMember adds a voting member to the ensemble. Only the leader can.
func (s *Server) AddMember(id uint64, raftAddr string) error { return s.repl.AddMember(id, raftAddr) }

// RemoveMember removes a member from the ensemble. Only the leader can.
func (s *Server) RemoveMember(id uint64) error { return s.repl.RemoveMember(id) }
