package raftstore

import "github.com/hashicorp/raft"

// A follower may count as committed only entries it knows to be the
// leader's: those up to the request's last entry, whose predecessor the
// request just matched (the Raft paper: commitIndex = min(leaderCommit,
// index of last new entry)). hashicorp/raft v1.7.3 takes min(leaderCommit,
// its own last index) instead, so a follower holding entries of an older
// term past the request's (a deposed leader's unreplicated tail) applies
// them when a request carries no entries but a commit index beyond its
// previous entry; a leader sends one whenever its commit index moves
// between reading its last index and building the request. The server then
// answers those entries' writers, and the next append overwrites them:
// writes acknowledged and lost, replicas apart (the nemesis found it).
// Clamping each request's commit index to its own last entry restores the
// paper's rule; commits past it arrive with the next request, or earlier
// by a commit notice, which checks the term itself.
//
// Re-checked against hashicorp/raft v1.8.0 (2026-11-27): appendEntries
// still takes min(LeaderCommitIndex, getLastIndex()), and the unclamped
// half of TestFollowerCommitsOnlyWhatTheLeaderSent still commits the stale
// entry, so the clamp stays. hutch stays on v1.7.3: v1.8.0 requires
// hashicorp/go-metrics v0.7.0, which dropped the go-metrics/compat package
// that raft-boltdb v2.3.1 (its newest release) imports, so the module
// builds only with a replace directive, which Go programs importing hutch
// (hutchtest, an embedded ensemble) do not inherit: their builds would
// fail. v1.8.0's gain, a persisted commit index (RestoreCommittedLogs),
// would save replaying the log on a restart that hutch already does faster
// than ZooKeeper (docs/performance.md).

// clampCommit lowers a's commit index to the last entry it vouches for.
func clampCommit(a *raft.AppendEntriesRequest) {
	if last := a.PrevLogEntry + uint64(len(a.Entries)); a.LeaderCommitIndex > last {
		a.LeaderCommitIndex = last
	}
}

// clampCommits passes RPCs from in to the returned channel in order,
// append requests clamped, until stop is closed.
func clampCommits(in <-chan raft.RPC, stop <-chan struct{}) <-chan raft.RPC {
	out := make(chan raft.RPC)
	go func() {
		for {
			select {
			case rpc := <-in:
				if a, ok := rpc.Command.(*raft.AppendEntriesRequest); ok {
					clampCommit(a)
				}
				select {
				case out <- rpc:
				case <-stop:
					return
				}
			case <-stop:
				return
			}
		}
	}()
	return out
}

// clampedTransport is the network transport with its append requests'
// commit indexes clamped on the way to Raft. Embedding the transport
// keeps what Raft looks for beside the Transport interface (pre-vote,
// Close, the heartbeat fast path, which carries no commit index).
//
// On a leader whose own appends are synced beside replication
// (parallel.go), durable is its log's durable index, and the commit index
// it sends is lowered to that too.
type clampedTransport struct {
	*raft.NetworkTransport
	rpcs    <-chan raft.RPC
	durable func() uint64 // nil: every append is durable when stored
}

func newClampedTransport(t *raft.NetworkTransport, stop <-chan struct{}) *clampedTransport {
	return &clampedTransport{NetworkTransport: t, rpcs: clampCommits(t.Consumer(), stop)}
}

// Consumer is what Raft reads its incoming RPCs from.
func (t *clampedTransport) Consumer() <-chan raft.RPC { return t.rpcs }

// AppendEntries sends an append, its commit index within what this
// leader holds durably.
func (t *clampedTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	t.clampToDurable(args)
	return t.NetworkTransport.AppendEntries(id, target, args, resp)
}

// clampToDurable lowers a's commit index to this leader's durable index.
func (t *clampedTransport) clampToDurable(a *raft.AppendEntriesRequest) {
	if t.durable == nil {
		return
	}
	if d := t.durable(); a.LeaderCommitIndex > d {
		a.LeaderCommitIndex = d
	}
}
