package raftstore

import (
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// TestDigestJudge: who stops when a follower's digest differs from the
// leader's, in a three-member ensemble.
func TestDigestJudge(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type step struct {
		node          uint64
		index         uint64
		match         bool
		after         time.Duration
		want          uint64
		wantLeaderOdd bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"matches", []step{{2, 10, true, 0, digestMatch, false}}},
		{"the other follower agrees with the leader later", []step{
			{3, 12, true, 0, digestMatch, false},
			{2, 10, false, time.Second, digestDiffers, false},
		}},
		{"an older agreement proves nothing: wait", []step{
			{3, 8, true, 0, digestMatch, false},
			{2, 10, false, time.Second, digestUnknown, false},
			{3, 11, true, 2 * time.Second, digestMatch, false},
			{2, 12, false, 3 * time.Second, digestDiffers, false},
		}},
		{"both followers differ: the leader is the odd one", []step{
			{2, 10, false, 0, digestUnknown, false},
			{3, 9, false, time.Second, digestUnknown, true},
		}},
		{"no second opinion: the leader stands after the patience", []step{
			{2, 10, false, 0, digestUnknown, false},
			{2, 11, false, digestPatience + time.Second, digestDiffers, false},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var j digestJudge
			for i, s := range tc.steps {
				v, odd := j.compare(1, s.node, s.index, s.match, 3, t0.Add(s.after))
				if v != s.want || odd != s.wantLeaderOdd {
					t.Fatalf("step %d: verdict %d leader odd %v, want %d %v", i, v, odd, s.want, s.wantLeaderOdd)
				}
			}
		})
	}
}

// haltEvents records the member's halt.
type haltEvents struct {
	quietEvents
	halted chan error
}

func (e *haltEvents) Halted(err error) {
	select {
	case e.halted <- err:
	default:
	}
}

// TestDivergedMemberStops: a member whose state came to differ from the
// others' (an entry applied differently, as a bug or a byte changed in
// memory would make it) stops, whether it follows or leads, and the
// others carry on. Nothing compared members' states while they ran.
func TestDivergedMemberStops(t *testing.T) {
	for _, which := range []string{"follower", "leader"} {
		t.Run(which, func(t *testing.T) {
			var nodes []*Node
			var events []*haltEvents
			for i := range 3 {
				cfg := testConfig(uint64(i + 1))
				cfg.ReportInterval = 50 * time.Millisecond
				if i > 0 {
					cfg.Peers = map[uint64]string{1: nodes[0].Store().Addr()}
				}
				ev := &haltEvents{halted: make(chan error, 1)}
				n, err := OpenNode(cfg, newTestApp().db, ev)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { n.Close() })
				nodes, events = append(nodes, n), append(events, ev)
				if i == 0 {
					waitFor(t, 5*time.Second, "node 1 to lead", func() bool { return n.Store().IsLeader() })
				} else if err := addVoter(nodes[0], uint64(i+1), n.Store().Addr()); err != nil {
					t.Fatal(err)
				}
			}
			create := func(seq uint64, path string) zkdb.Command {
				return zkdb.Command{Origin: 1, Seq: seq, Kind: zkdb.KindTxn, Txn: tree.Txn{Op: wire.OpCreate,
					Req: &wire.CreateRequest{Path: path, ACL: openACL}}}
			}
			nodes[0].Propose(create(1, "/a"), 0)
			waitFor(t, 10*time.Second, "every member to apply /a", func() bool {
				for _, n := range nodes {
					if n.db.LastZxid() < 1 {
						return false
					}
				}
				return true
			})
			odd := 2
			if which == "leader" {
				odd = 0
			}
			// The odd member applies, at the next index, something the
			// log does not hold; the log's own entry there is then
			// skipped on it (its index is applied).
			rogue, err := zkdb.DecodeEntry(zkdb.AppendEntry(nil, time.Now().UnixMilli(), encode(t, []zkdb.Command{create(0, "/rogue")})))
			if err != nil {
				t.Fatal(err)
			}
			nodes[odd].db.Apply(rogue, nodes[odd].db.Applied()+1)
			for i := range 3 {
				nodes[0].Propose(create(uint64(10+i), "/b"+string(rune('0'+i))), 0)
			}
			select {
			case err := <-events[odd].halted:
				if !strings.Contains(err.Error(), "differs") {
					t.Fatalf("halted for %v", err)
				}
				t.Logf("member %d stopped: %v", odd+1, err)
			case <-time.After(20 * time.Second):
				t.Fatalf("the diverged %s (member %d) did not stop within 20s", which, odd+1)
			}
			for i, ev := range events {
				select {
				case err := <-ev.halted:
					if i != odd {
						t.Fatalf("member %d, whose state is right, stopped too: %v", i+1, err)
					}
				default:
				}
			}
		})
	}
}
