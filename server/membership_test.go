package server

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/membership"
)

// withMembers gives every node the same server.N lines for the ensemble
// startClusterOn made: its Raft addresses, an election port each, a
// client address each, and member 3 as an observer when observer is set.
func withMembers(observer bool) func(id uint64, cfg *Config) {
	return func(_ uint64, cfg *Config) {
		cfg.Raft.Members = nil
		for mid := uint64(1); mid <= uint64(len(cfg.Raft.Peers)); mid++ {
			host, port, _ := net.SplitHostPort(cfg.Raft.Peers[mid])
			qp, _ := strconv.Atoi(port)
			m := membership.Member{ID: mid, Host: host, QuorumPort: qp, ElectionPort: 7100 + int(mid),
				ClientHost: "127.0.0.1", ClientPort: 2180 + int(mid)}
			if observer && mid == 3 {
				m.Role = membership.Observer
			}
			cfg.Raft.Members = append(cfg.Raft.Members, m)
		}
	}
}

// TestFirstMembership: the first leader writes the ensemble's membership
// (its server.N lines, roles and client addresses included) into the
// replicated state once; every member then holds the same configuration,
// shows it in /zookeeper/config with ZooKeeper's Stat (version -1, the
// configuration's version its mzxid), and reports its part from it: the
// member configured as an observer says so, and serves and forwards
// writes like a follower.
func TestFirstMembership(t *testing.T) {
	nodes := startClusterOn(t, nil, 3, 50*time.Millisecond, withMembers(true))
	var want membership.Config
	waitFor(t, 20*time.Second, "every member to hold the first membership", func() bool {
		for i, s := range nodes {
			got := s.Replication().Members
			if got.IsZero() || (i > 0 && !got.Equal(want)) {
				return false
			}
			want = got
		}
		return true
	})
	if len(want.Members) != 3 || want.Voters() != 2 || want.Members[2].Role != membership.Observer || want.Members[0].ClientAddr() != "127.0.0.1:2181" {
		t.Fatalf("membership %q", want.Text())
	}
	for i, s := range nodes {
		c, _ := dial(t, s.Addr().String(), 10*time.Second)
		data, st, err := c.Get("/zookeeper/config")
		if err != nil {
			t.Fatalf("member %d: %v", i+1, err)
		}
		if string(data) != want.Text() || st.Version != -1 || st.Mzxid != want.Version || st.Czxid != 0 || st.Aversion != -1 {
			t.Errorf("member %d: /zookeeper/config %q %+v, want %q at mzxid %d", i+1, data, st, want.Text(), want.Version)
		}
		if i == 2 {
			if _, err := c.Create("/through-observer", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Errorf("write through the observer: %v", err)
			}
		}
		c.Close()
	}
	if got := nodes[2].State(); got != membership.Observing {
		t.Errorf("member 3 is %v, want observer", got)
	}
	for _, s := range nodes[:2] {
		if st := s.State(); st != membership.Leading && st != membership.Following {
			t.Errorf("a participant is %v", st)
		}
	}
}
