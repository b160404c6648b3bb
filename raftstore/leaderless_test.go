package raftstore

import (
	"sync"
	"testing"
	"time"
)

// servingEvents records every Serving call a node makes, with its time.
type servingEvents struct {
	quietEvents
	mu    sync.Mutex // guards calls
	calls []servingCall
}

type servingCall struct {
	at time.Time
	ok bool
}

func (e *servingEvents) Serving(ok bool) {
	e.mu.Lock()
	e.calls = append(e.calls, servingCall{time.Now(), ok})
	e.mu.Unlock()
}

// first returns the time of the first Serving(ok) after t, or zero.
func (e *servingEvents) first(ok bool, t time.Time) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.calls {
		if c.ok == ok && c.at.After(t) {
			return c.at
		}
	}
	return time.Time{}
}

// startNodes starts a group of n Nodes on free ports: node 1 bootstraps
// and adds the others. mod, when set, adjusts each member's Config.
func startNodes(tb testing.TB, n int, mod func(*Config), events []Events) []*Node {
	tb.Helper()
	var nodes []*Node
	for i := range n {
		cfg := testConfig(uint64(i + 1))
		if mod != nil {
			mod(&cfg)
		}
		if i > 0 {
			cfg.Peers = map[uint64]string{1: nodes[0].Store().Addr()}
		}
		nd, err := OpenNode(cfg, newTestApp().db, events[i])
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { nd.Close() })
		nodes = append(nodes, nd)
		if i == 0 {
			waitFor(tb, 5*time.Second, "node 1 to lead", func() bool { return nd.Store().IsLeader() })
		} else if err := addVoter(nodes[0], uint64(i+1), nd.Store().Addr()); err != nil {
			tb.Fatal(err)
		}
	}
	return nodes
}

// TestLeaderlessCountsFromTheLoss: a member that loses its leader, and
// cannot elect another, stops serving clients LeaderlessLimit after its
// Raft stopped knowing a leader, not sooner, whether it followed or led.
// The limit is the time an ordinary election may take; the watch looks
// only when Raft's state changes and every changeFallback (2 s) besides,
// and counted from its last look that found a leader, which can be the
// whole fallback older than the loss. A follower then dropped its clients
// as soon as it noticed a dead leader (the default election timeout is
// 1 s, the limit 2 s), in the middle of an election, and go-zookeeper's
// client failed its queued requests. The others are stopped just after a
// look of the survivor's, so that its loss comes a heartbeat timeout (or
// a leader's lease, as long) after that look: the old count then ran out
// 300 ms or less into the 600 ms.
func TestLeaderlessCountsFromTheLoss(t *testing.T) {
	const tolerance = 150 * time.Millisecond
	for _, tc := range []struct {
		name     string
		survivor func(leader int) int // the member left alone, by index
	}{
		{"follower whose leader and peer stop", func(leader int) int { return (leader + 1) % 3 }},
		{"leader whose followers stop", func(leader int) int { return leader }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := []*servingEvents{{}, {}, {}}
			nodes := startNodes(t, 3, func(cfg *Config) {
				cfg.QuietAfter = -1                           // Raft's timing stays as configured
				cfg.LeaderLeaseTimeout = cfg.HeartbeatTimeout // as by default
			}, []Events{events[0], events[1], events[2]})
			leader := -1
			waitFor(t, 10*time.Second, "a leader every member knows", func() bool {
				leader = -1
				for i, n := range nodes {
					if n.Store().IsLeader() {
						leader = i
					}
				}
				if leader < 0 {
					return false
				}
				for _, n := range nodes {
					if id, _ := n.Store().Leader(); id != uint64(leader+1) {
						return false
					}
				}
				return true
			})
			s := tc.survivor(leader)
			survivor, ev := nodes[s], events[s]
			settled := time.Now()
			waitFor(t, changeFallback+10*time.Second, "the survivor to look and find its leader", func() bool {
				return !ev.first(true, settled).IsZero()
			})
			stopped := time.Now()
			// The leader first, so that a follower's loss is the leader's.
			for _, i := range []int{leader, (leader + 1) % 3, (leader + 2) % 3} {
				if i != s {
					nodes[i].Close()
				}
			}
			var lost time.Time
			waitFor(t, 10*time.Second, "the survivor to know no leader", func() bool {
				id, _ := survivor.Store().Leader()
				lost = time.Now()
				return id == 0
			})
			limit := survivor.LeaderlessLimit()
			var dropped time.Time
			waitFor(t, limit+10*time.Second, "the survivor to stop serving", func() bool {
				dropped = ev.first(false, stopped)
				return !dropped.IsZero()
			})
			took := dropped.Sub(lost)
			t.Logf("member %d knew no leader %v after the others stopped and stopped serving %v later (limit %v)",
				s+1, lost.Sub(stopped).Round(time.Millisecond), took.Round(time.Millisecond), limit)
			if took < limit-tolerance {
				t.Fatalf("member %d stopped serving %v after it knew no leader, within the %v an election may take",
					s+1, took.Round(time.Millisecond), limit)
			}
		})
	}
}
