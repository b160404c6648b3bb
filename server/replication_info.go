package server

import (
	"strconv"
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

// raftNumber reads one of Raft's numeric statistics, 0 when absent.
func (r ReplicationInfo) raftNumber(key string) uint64 {
	n, _ := strconv.ParseUint(r.Raft[key], 10, 64)
	return n
}
