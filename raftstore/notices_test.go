package raftstore

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/hutchzk/hutch/zkdb"
)

// TestFollowerHearsCommitsByNotice: with Raft's own commit timeout an
// hour long, a follower learns that entries committed only from an
// append that carries the next ones; its state must still include a
// write forwarded through it, and every other node's, within moments,
// by the leader's commit notices alone. Without them it waited forever
// (there is no next append).
func TestFollowerHearsCommitsByNotice(t *testing.T) {
	nodes := startCluster(t, 3, func(c *Config) { c.CommitTimeout = time.Hour })
	leader := waitLeader(t, 5*time.Second, nodes...)
	fs := followers(nodes, leader)
	for i, f := range fs {
		forward(t, f, createCommand(f.cfg.NodeID, fmt.Sprintf("/by-notice-%d", i)))
	}
	propose(t, leader, createCommand(leader.cfg.NodeID, "/by-notice-leader"))
	for _, f := range fs {
		waitFor(t, 5*time.Second, fmt.Sprintf("node %d to apply every write", f.cfg.NodeID), func() bool {
			return f.app.exists("/by-notice-0") && f.app.exists("/by-notice-1") && f.app.exists("/by-notice-leader")
		})
	}
	// Every node holds the same state, Raft's own apply (when it comes)
	// skipping what the notices applied.
	waitAllApplied(t, nodes...)
}

// TestApplyCommittedChecksTheTerm: a notice applies entries only when this
// node's entry at its index has its term, so an entry of an old term that
// the leader will overwrite is never applied; and command and
// configuration entries are applied, in order, each once (a configuration
// entry as the DB's record of the replicas).
func TestApplyCommittedChecksTheTerm(t *testing.T) {
	app := newTestApp()
	f := &fsm{db: app.db, log: testLogger()}
	logs := raft.NewInmemStore()
	entry := func(index, term uint64, typ raft.LogType, path string) *raft.Log {
		l := &raft.Log{Index: index, Term: term, Type: typ}
		switch typ {
		case raft.LogCommand:
			l.Data = zkdb.AppendEntry(nil, 1, encode(t, []zkdb.Command{createCommand(1, path)}))
		case raft.LogConfiguration:
			l.Data = raft.EncodeConfiguration(raft.Configuration{Servers: []raft.Server{
				{Suffrage: raft.Voter, ID: "1", Address: "127.0.0.1:7001"},
				{Suffrage: raft.Nonvoter, ID: "2", Address: "127.0.0.1:7002"}}})
		}
		return l
	}
	if err := logs.StoreLogs([]*raft.Log{
		entry(1, 1, raft.LogConfiguration, ""),
		entry(2, 1, raft.LogCommand, "/a"),
		entry(3, 2, raft.LogNoop, ""),
		entry(4, 2, raft.LogCommand, "/b"),
		entry(5, 2, raft.LogCommand, "/c"),
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		index, term  uint64
		ok           bool
		wantApplied  uint64
		there, later []string
	}{
		{"a notice of another term applies nothing", 4, 3, false, 0, nil, []string{"/a", "/b"}},
		{"an entry not here yet applies nothing", 9, 2, false, 0, nil, []string{"/a"}},
		{"a matching notice applies every command and configuration entry up to it", 4, 2, true, 4, []string{"/a", "/b"}, []string{"/c"}},
		{"an older notice is a no-op", 2, 1, true, 4, []string{"/a", "/b"}, []string{"/c"}},
		{"the next notice applies the rest", 5, 2, true, 5, []string{"/c"}, nil},
	}
	for _, tc := range tests {
		if got := f.applyCommitted(logs, tc.index, tc.term); got != tc.ok {
			t.Fatalf("%s: applyCommitted(%d, %d) = %v, want %v", tc.name, tc.index, tc.term, got, tc.ok)
		}
		if got := app.db.Applied(); got != tc.wantApplied {
			t.Fatalf("%s: applied index %d, want %d", tc.name, got, tc.wantApplied)
		}
		for _, p := range tc.there {
			if !app.exists(p) {
				t.Fatalf("%s: %s not applied", tc.name, p)
			}
		}
		for _, p := range tc.later {
			if app.exists(p) {
				t.Fatalf("%s: %s applied too soon", tc.name, p)
			}
		}
	}
	if r := app.db.Replicas(); len(r) != 2 || !r[0].Voter || r[1].Voter || r[1].Addr != "127.0.0.1:7002" {
		t.Fatalf("replicas %+v", r)
	}
	// Raft's own apply of the same entries later is skipped.
	before := len(app.applied)
	var l raft.Log
	for i := uint64(2); i <= 5; i++ {
		if err := logs.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
		if l.Type == raft.LogCommand {
			f.Apply(&l)
		}
	}
	if len(app.applied) != before {
		t.Fatalf("Raft's apply after the notices applied %d commands again", len(app.applied)-before)
	}
	if idx, term, _ := f.last(); idx != 5 || term != 2 {
		t.Fatalf("last applied (%d, %d), want (5, 2)", idx, term)
	}
}

// TestApplyCommittedLeavesTheLogCacheAlone: a notice after a restart
// reads the newest entries from Raft's log cache and older ones from the
// store beneath it. Decoding a stored entry into the raft.Log that had
// just held a cached one wrote the stored bytes over the cached entry's
// own buffer: the node then applied one entry twice and skipped another
// as "undecodable", and its state parted from the others' (the nemesis
// caught it after a kill and restart). Every store kind is checked as
// the server opens it.
func TestApplyCommittedLeavesTheLogCacheAlone(t *testing.T) {
	for _, kind := range LogStores {
		t.Run(kind, func(t *testing.T) {
			store, err := openLogStore(t.TempDir(), kind, testLogger())
			if err != nil {
				t.Fatal(err)
			}
			defer store.close()
			const n = 1100 // more than the cache holds, so the first are read from disk
			var entries []*raft.Log
			for i := uint64(1); i <= n; i++ {
				cmd := createCommand(1, fmt.Sprintf("/n%05d", i)) // one length: a stored entry fits a cached one's buffer
				entries = append(entries, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand,
					Data: zkdb.AppendEntry(nil, 1, encode(t, []zkdb.Command{cmd}))})
			}
			if err := store.logs.StoreLogs(entries); err != nil {
				t.Fatal(err)
			}
			app := newTestApp()
			f := &fsm{db: app.db, log: testLogger()}
			if !f.applyCommitted(store.logs, n, 1) {
				t.Fatal("applyCommitted refused a committed entry")
			}
			for i := 1; i <= n; i++ {
				if p := fmt.Sprintf("/n%05d", i); !app.exists(p) {
					t.Fatalf("%s was not applied (%d commands applied)", p, len(app.applied))
				}
			}
			var l raft.Log
			if err := store.logs.GetLog(n, &l); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(l.Data, entries[n-1].Data) {
				t.Fatalf("entry %d in the log now reads %q, want %q", n, l.Data, entries[n-1].Data)
			}
		})
	}
}

// TestOneStandingQuestionServesEveryCommit: a follower keeps one notice
// question standing with its leader, answered at every commit, so writes
// forwarded one after another, each awaited through the notices alone
// (Raft's commit timeout an hour long), cost the leader a question or
// two in all. A leader that does not know the standing question (as one
// from before it) fails it, and is then asked once per answer: the
// follower still hears every commit, at a question each.
func TestOneStandingQuestionServesEveryCommit(t *testing.T) {
	const writes = 30
	for _, tc := range []struct {
		name       string
		streamless bool
	}{
		{"a leader that streams", false},
		{"a leader that does not", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := startCluster(t, 3, func(c *Config) {
				c.CommitTimeout = time.Hour
				c.streamlessNotices = tc.streamless
			})
			leader := waitLeader(t, 5*time.Second, nodes...)
			f := followers(nodes, leader)[0]
			asked := func() (n int64) {
				for _, nd := range nodes {
					n += nd.noticeQuestions.Load()
				}
				return n
			}
			before := asked()
			for i := range writes {
				path := fmt.Sprintf("/standing-%d", i)
				forward(t, f, createCommand(f.cfg.NodeID, path))
				waitFor(t, 5*time.Second, "node "+fmt.Sprint(f.cfg.NodeID)+" to apply "+path, func() bool {
					return f.app.exists(path)
				})
			}
			questions := asked() - before
			t.Logf("%d writes heard by notice cost %d questions", writes, questions)
			if tc.streamless {
				if questions < writes {
					t.Fatalf("%d questions for %d commits heard by notice: the follower did not ask again after each answer", questions, writes)
				}
				return
			}
			// Each election (a loaded machine may have one) costs each
			// follower one more question; a third of the writes leaves room
			// for several, and the question asked once per answer costs at
			// least one per write.
			if questions > writes/3 {
				t.Fatalf("%d questions for %d commits: the question does not stand", questions, writes)
			}

			// The leader gone, the follower left stands its question with
			// the new one: a write through it is still heard by notice.
			if err := leader.Close(); err != nil {
				t.Fatalf("close leader: %v", err)
			}
			rest := followers(nodes, leader)
			next := waitLeader(t, 20*time.Second, rest...)
			f = followers(rest, next)[0]
			forward(t, f, createCommand(f.cfg.NodeID, "/after-the-leader"))
			waitFor(t, 5*time.Second, "the follower to hear of a write under the new leader", func() bool {
				return f.app.exists("/after-the-leader")
			})
		})
	}
}
