package raftstore

import (
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// recordingFSM remembers the data of every entry applied to it.
type recordingFSM struct {
	mu      sync.Mutex
	applied []string
}

func (f *recordingFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, string(l.Data))
	return nil
}

func (f *recordingFSM) entries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.applied...)
}

func (f *recordingFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, io.EOF }
func (f *recordingFSM) Restore(io.ReadCloser) error         { return nil }

// inmemClamped is an in-memory transport whose consumer is clamped as the
// store's network transport is.
type inmemClamped struct {
	*raft.InmemTransport
	rpcs <-chan raft.RPC
}

func (t *inmemClamped) Consumer() <-chan raft.RPC { return t.rpcs }

// TestFollowerCommitsOnlyWhatTheLeaderSent: a deposed leader rejoins as a
// follower with two entries of its old term that nobody else has. The new
// leader's request matches the entry before them, carries no entries and
// a commit index one past it (its own entry there is committed). The
// follower may commit nothing past the matched entry: its own entry there
// is not the leader's. hashicorp/raft alone commits and applies it
// (commit index min(leader's, own last index)); with the store's clamp it
// does not. Both halves run, so the test shows the hole it guards.
func TestFollowerCommitsOnlyWhatTheLeaderSent(t *testing.T) {
	for _, clamped := range []bool{false, true} {
		t.Run("clamped="+strconv.FormatBool(clamped), func(t *testing.T) {
			fsm := &recordingFSM{}
			logs := raft.NewInmemStore()
			servers := raft.Configuration{Servers: []raft.Server{
				{ID: "old", Address: "old"}, {ID: "new", Address: "new"}, {ID: "third", Address: "third"},
			}}
			if err := logs.StoreLogs([]*raft.Log{
				{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(servers)},
				{Index: 2, Term: 1, Type: raft.LogCommand, Data: []byte("committed")},
				{Index: 3, Term: 1, Type: raft.LogCommand, Data: []byte("stale-1")}, // never left the old leader
				{Index: 4, Term: 1, Type: raft.LogCommand, Data: []byte("stale-2")},
			}); err != nil {
				t.Fatal(err)
			}
			if err := logs.SetUint64([]byte("CurrentTerm"), 1); err != nil {
				t.Fatal(err)
			}
			addr, inner := raft.NewInmemTransport("old")
			var trans raft.Transport = inner
			stop := make(chan struct{})
			defer close(stop)
			if clamped {
				trans = &inmemClamped{InmemTransport: inner, rpcs: clampCommits(inner.Consumer(), stop)}
			}
			cfg := raft.DefaultConfig()
			cfg.LocalID = "old"
			cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = time.Hour, time.Hour, time.Hour
			cfg.Logger = newHCLogger(testLogger(), "raft")
			r, err := raft.NewRaft(cfg, fsm, logs, logs, raft.NewInmemSnapshotStore(), trans)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Shutdown()

			_, leader := raft.NewInmemTransport("new")
			leader.Connect(addr, inner)
			req := &raft.AppendEntriesRequest{
				RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("new"), Addr: []byte("new")},
				Term:      2, PrevLogEntry: 2, PrevLogTerm: 1, LeaderCommitIndex: 3,
			}
			var resp raft.AppendEntriesResponse
			if err := leader.AppendEntries("old", addr, req, &resp); err != nil || !resp.Success {
				t.Fatalf("append: %v, success %v", err, resp.Success)
			}
			waitFor(t, 5*time.Second, "the committed entry to apply", func() bool { return len(fsm.entries()) > 0 })
			commit := r.Stats()["commit_index"]
			got := fsm.entries()
			if clamped {
				if commit != "2" || len(got) != 1 {
					t.Fatalf("clamped: commit index %s, applied %q; want 2 and only the committed entry", commit, got)
				}
				return
			}
			// Raft alone: the hole this guards. If a later hashicorp/raft
			// closes it, this half fails and the clamp can go.
			waitFor(t, 5*time.Second, "hashicorp/raft to apply the stale entry", func() bool { return len(fsm.entries()) == 2 })
			if commit != "3" || fsm.entries()[1] != "stale-1" {
				t.Fatalf("unclamped: commit index %s, applied %q", commit, fsm.entries())
			}
		})
	}
}

// TestClampedNetworkTransport: the store's own wrapper over a network
// transport clamps an append request that arrives over TCP, passes other
// RPCs unchanged, and keeps what Raft looks for beside the Transport
// interface (without RequestPreVote Raft silently turns pre-vote off).
func TestClampedNetworkTransport(t *testing.T) {
	follower, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	leader, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	stop := make(chan struct{})
	defer close(stop)
	ct := newClampedTransport(follower, stop)
	var trans raft.Transport = ct
	if _, ok := trans.(raft.WithPreVote); !ok {
		t.Error("the clamped transport lost RequestPreVote")
	}
	if _, ok := trans.(raft.WithClose); !ok {
		t.Error("the clamped transport lost Close")
	}
	// Answer whatever arrives, recording it.
	got := make(chan raft.RPC, 2)
	go func() {
		for {
			select {
			case rpc := <-ct.Consumer():
				got <- rpc
				switch rpc.Command.(type) {
				case *raft.AppendEntriesRequest:
					rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
				case *raft.RequestVoteRequest:
					rpc.Respond(&raft.RequestVoteResponse{}, nil)
				}
			case <-stop:
				return
			}
		}
	}()
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("l"), Addr: []byte(leader.LocalAddr())}
	tests := []struct {
		prev, entries, commit, want uint64
	}{
		{prev: 2, entries: 0, commit: 3, want: 2}, // nothing sent past the matched entry
		{prev: 2, entries: 3, commit: 9, want: 5}, // up to the last entry sent
		{prev: 2, entries: 3, commit: 4, want: 4}, // already within what was sent
		{prev: 0, entries: 2, commit: 0, want: 0}, // nothing committed yet
	}
	for _, tc := range tests {
		req := &raft.AppendEntriesRequest{RPCHeader: hdr, Term: 2, PrevLogEntry: tc.prev, PrevLogTerm: 1, LeaderCommitIndex: tc.commit}
		for i := range tc.entries {
			req.Entries = append(req.Entries, &raft.Log{Index: tc.prev + i + 1, Term: 2, Type: raft.LogCommand})
		}
		var resp raft.AppendEntriesResponse
		if err := leader.AppendEntries("f", follower.LocalAddr(), req, &resp); err != nil {
			t.Fatal(err)
		}
		rpc := <-got
		if a := rpc.Command.(*raft.AppendEntriesRequest); a.LeaderCommitIndex != tc.want {
			t.Errorf("prev %d, %d entries, commit %d: Raft sees commit %d, want %d", tc.prev, tc.entries, tc.commit, a.LeaderCommitIndex, tc.want)
		}
	}
	var vote raft.RequestVoteResponse
	if err := leader.RequestVote("f", follower.LocalAddr(), &raft.RequestVoteRequest{RPCHeader: hdr, Term: 3, LastLogIndex: 7}, &vote); err != nil {
		t.Fatal(err)
	}
	if v := (<-got).Command.(*raft.RequestVoteRequest); v.LastLogIndex != 7 || v.Term != 3 {
		t.Errorf("a vote request changed on the way: %+v", v)
	}
}
