package raftstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// quietEvents is a server that hears nothing of interest.
type quietEvents struct{}

func (quietEvents) Failed([]uint64)                {}
func (quietEvents) Stranded(uint64)                {}
func (quietEvents) Serving(bool)                   {}
func (quietEvents) ReadOnly()                      {}
func (quietEvents) Vouch(time.Time, time.Duration) {}
func (quietEvents) Halted(error)                   {}

// TestQuietTiming: an ensemble with no session stretches Raft's heartbeat
// and election timeouts on every member, and the first session brings
// them back, round after round, without a single election: the term
// never moves.
func TestQuietTiming(t *testing.T) {
	const hb = 100 * time.Millisecond
	var nodes []*Node
	var apps []*testApp
	for i := range 3 {
		cfg := testConfig(uint64(i + 1))
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = hb, 2*hb, hb
		cfg.QuietAfter = 300 * time.Millisecond
		if i > 0 {
			cfg.Peers = map[uint64]string{1: nodes[0].Store().Addr()}
		}
		app := newTestApp()
		n, err := OpenNode(cfg, app.db, quietEvents{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		nodes, apps = append(nodes, n), append(apps, app)
		if i == 0 {
			waitFor(t, 5*time.Second, "node 1 to lead", func() bool { return n.State().Leads() })
		} else if err := addVoter(nodes[0], uint64(i+1), n.Store().Addr()); err != nil {
			t.Fatal(err)
		}
	}
	term := nodes[0].Store().Term()
	heartbeats := func() []time.Duration {
		var out []time.Duration
		for _, n := range nodes {
			out = append(out, n.Store().raft.ReloadableConfig().HeartbeatTimeout)
		}
		return out
	}
	all := func(d time.Duration) func() bool {
		return func() bool {
			for _, h := range heartbeats() {
				if h != d {
					return false
				}
			}
			return true
		}
	}
	for round := range 2 {
		waitFor(t, 10*time.Second, fmt.Sprintf("round %d: every member quiet", round), all(quietFactor*hb))
		id := int64(round+1)<<56 | 1
		nodes[round%3].Propose(zkdb.Command{Origin: uint64(round%3 + 1), Seq: uint64(round + 1), Conn: 7, Kind: zkdb.KindTxn,
			Txn: tree.Txn{Session: id, Op: wire.OpCreateSession, Req: &tree.CreateSession{ID: id, Timeout: 4000, Passwd: make([]byte, 16)}}}, 0)
		waitFor(t, 10*time.Second, fmt.Sprintf("round %d: every member at its usual pace", round), all(hb))
		nodes[0].Propose(zkdb.Command{Origin: 1, Seq: uint64(100 + round), Kind: zkdb.KindTxn,
			Txn: tree.Txn{Session: id, Op: wire.OpCloseSession}}, 0)
		waitFor(t, 10*time.Second, "the session closed everywhere", func() bool {
			for _, a := range apps {
				if a.db.SessionCount() != 0 {
					return false
				}
			}
			return true
		})
	}
	for _, n := range nodes {
		if got := n.Store().Term(); got != term {
			t.Fatalf("term moved from %d to %d: a member held an election while the timing changed", term, got)
		}
	}
}
