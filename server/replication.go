package server

import (
	"context"
	"errors"
	"time"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/zkdb"
)

// ReplicationInfo describes this node's place in its ensemble, for the
// four-letter words, the admin commands and the metrics. A standalone
// node has only State set.
type ReplicationInfo struct {
	State      membership.State
	NodeID     uint64
	LeaderID   uint64 // 0 when no leader is known
	LeaderAddr string
	Term       uint64
	// Members is the membership as the replicated state holds it (what
	// /zookeeper/config says), Replicas Raft's committed configuration
	// (who is sent the log, who votes), both read from the DB.
	Members     membership.Config
	Replicas    []zkdb.Replica
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
		return ReplicationInfo{State: membership.Standalone, NodeID: s.nodeID}
	}
	in := s.repl.Info()
	state := in.State
	if s.isReadOnly() {
		state = membership.ReadOnly
	}
	return ReplicationInfo{State: state, NodeID: in.NodeID, LeaderID: in.LeaderID, LeaderAddr: in.LeaderAddr,
		Term: in.Term, Members: in.Members, Replicas: in.Replicas, LastContact: in.LastContact, Raft: in.Raft, DataDir: in.DataDir}
}

// leaderSilent reports whether this member of an ensemble has heard no
// leader for longer than d (it knows none, or its last contact is older),
// as while its leader is dead and an election runs. The leader itself,
// and a standalone server, are never silent.
func (s *Server) leaderSilent(d time.Duration) bool {
	if s.repl == nil {
		return false
	}
	in := s.repl.Info()
	if in.State.Leads() {
		return false
	}
	return in.LeaderID == 0 || in.LastContact.IsZero() || time.Since(in.LastContact) > d
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

// replicationEvents is how a raftstore.Node reaches the server.
type replicationEvents struct{ s *Server }

func (e replicationEvents) Failed(seqs []uint64) {
	for _, seq := range seqs {
		e.s.pending.fail(seq)
	}
}

func (e replicationEvents) Stranded(upTo uint64) {
	stranded := e.s.pending.selectSeqs(func(seq uint64, _ *proposal) bool { return seq <= upTo })
	if len(stranded) > 0 {
		e.s.log.Info("dropping writes lost with the old leader", "writes", len(stranded))
	}
	for _, seq := range stranded {
		e.s.pending.fail(seq)
	}
}

func (e replicationEvents) Serving(ok bool) { e.s.setServing(ok) }

func (e replicationEvents) Halted(err error) { e.s.halt(err) }

func (e replicationEvents) ReadOnly() { e.s.enterReadOnly() }

func (e replicationEvents) Vouch(reached time.Time, limit time.Duration) {
	e.s.dropUnvouched(time.Now(), reached, limit)
}

// proposalTimeout bounds how long a write may wait for its commit before its
// connection is dropped, as a ZooKeeper client sees connection loss when a
// leader dies with its request in flight.
const proposalTimeout = 10 * time.Second

// sweep gives up on proposals that have waited proposalTimeout, looking
// every quarter of it.
func (s *Server) sweep() {
	s.repeat(s.ctx, proposalTimeout/4, func() {
		cutoff := s.clock.Now().Add(-proposalTimeout)
		for _, seq := range s.pending.selectSeqs(func(_ uint64, p *proposal) bool { return p.since.Before(cutoff) }) {
			s.pending.fail(seq)
		}
	})
}

// openReplication starts the single node's ordering of writes, or joins
// the Raft group.
func (s *Server) openReplication() (replication, error) {
	if s.cfg.Raft == nil {
		return startLocalReplication(s.db, s.clock, s.nodeID, s.cfg.ReconfigEnabled), nil
	}
	rc := *s.cfg.Raft
	if rc.Logger == nil {
		rc.Logger = s.log
	}
	if rc.Clock == nil {
		rc.Clock = s.clock
	}
	rc.ReconfigEnabled = rc.ReconfigEnabled || s.cfg.ReconfigEnabled
	if rc.MaxMemberID == 0 {
		rc.MaxMemberID = MaxServerID
	}
	// A forwarded batch holds whole requests, each up to MaxFrameSize.
	if need := 2 * int64(s.cfg.MaxFrameSize); rc.MaxForwardFrame < need {
		rc.MaxForwardFrame = max(need, raftstore.DefaultMaxForwardFrame)
	}
	// Reports of client activity: twice a tick, and often enough that a
	// few fit in a third of the shortest session timeout.
	if rc.ReportInterval == 0 {
		rc.ReportInterval = max(min(s.cfg.TickTime/2, s.cfg.MinSessionTimeout/9), 10*time.Millisecond)
	}
	// Other members' live views ask this one what only it knows.
	rc.Answer = func(_ context.Context, question []byte) ([]byte, error) { return s.monitor.AnswerMember(question) }
	if s.cfg.ReadOnlyMode {
		rc.ReadOnlyAfter = ReadOnlyGrace(s.cfg.TickTime)
	}
	n, err := raftstore.OpenNode(rc, s.db, replicationEvents{s})
	if err != nil {
		return nil, err
	}
	return n, nil
}

// forwarded counts the writes this node handed to the Raft leader.
func (s *Server) forwarded() int64 {
	if n, ok := s.repl.(*raftstore.Node); ok {
		return n.Forwarded()
	}
	return 0
}

// AskMember puts a live view's question to the member at raftAddr over
// the members' authenticated channel (monitor.Peers).
func (s *Server) AskMember(ctx context.Context, raftAddr string, question []byte) ([]byte, error) {
	n, ok := s.repl.(*raftstore.Node)
	if !ok {
		return nil, errors.New("server: not a member of an ensemble")
	}
	return n.Store().Ask(ctx, raftAddr, question, 0)
}
