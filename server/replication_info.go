package server

import (
	"errors"
	"time"

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
func (s *Server) Replication() ReplicationInfo { return s.commit.info() }

func (c *localCommitter) info() ReplicationInfo {
	return ReplicationInfo{Mode: "standalone", NodeID: uint64(c.s.cfg.ServerID)}
}

func (c *raftCommitter) info() ReplicationInfo {
	st := c.store
	id, addr := st.Leader()
	r := ReplicationInfo{
		Mode:       c.mode(),
		NodeID:     c.cfg.NodeID,
		LeaderID:   id,
		LeaderAddr: addr,
		Term:       st.Term(),
		Raft:       st.Stats(),
		DataDir:    c.cfg.DataDir,
	}
	if r.Mode != "leader" {
		r.LastContact = st.LastContact()
	}
	r.Members, _ = st.Members()
	return r
}

// ErrNotReplicated is returned by membership calls on a node without Raft.
var ErrNotReplicated = errors.New("server: not a replicated node")

// AddMember adds a voting member to the ensemble. Only the leader can.
func (s *Server) AddMember(id uint64, raftAddr string) error { return s.commit.addMember(id, raftAddr) }

// RemoveMember removes a member from the ensemble. Only the leader can.
func (s *Server) RemoveMember(id uint64) error { return s.commit.removeMember(id) }
