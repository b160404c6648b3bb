package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/tree"
)

// superDigest is go-zookeeper's and kazoo's test super user: super:test.
const superDigest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="

func reconfigCluster(t *testing.T, enabled bool) []*Server {
	t.Helper()
	return startClusterOn(t, nil, 3, 50*time.Millisecond, withMembers(false), func(_ uint64, cfg *Config) {
		cfg.ReconfigEnabled = enabled
		cfg.SuperDigest = superDigest
	})
}

// waitMembership waits until every running node holds a membership other
// than not.
func waitMembership(t *testing.T, nodes []*Server) membership.Config {
	t.Helper()
	var got membership.Config
	waitFor(t, 20*time.Second, "the membership on every node", func() bool {
		for i, s := range nodes {
			if s.closed.Load() {
				continue
			}
			m := s.Replication().Members
			if m.IsZero() || (i > 0 && !got.IsZero() && !m.Equal(got)) {
				return false
			}
			got = m
		}
		return true
	})
	return got
}

// TestReconfigChecks walks ZooKeeper's order of checks, with what Debian's
// ZooKeeper 3.8 answered to the same requests (TestReconfigSideBySide
// compares them live): NOAUTH only after the arguments parse; a leaving
// id that is not a member is no error; every outcome takes a zxid.
func TestReconfigChecks(t *testing.T) {
	nodes := reconfigCluster(t, true)
	cfg := waitMembership(t, nodes)
	c, _ := dial(t, followerOf(nodes, leaderOf(nodes)).Addr().String(), 10*time.Second)
	try := func(name string, want error, f func() (*zk.Stat, error)) *zk.Stat {
		t.Helper()
		st, err := f()
		if !errors.Is(err, want) && !(want != nil && err != nil && strings.Contains(err.Error(), want.Error())) {
			t.Fatalf("%s: %v, want %v", name, err, want)
		}
		return st
	}
	inc := func(joining, leaving []string, from int64) func() (*zk.Stat, error) {
		return func() (*zk.Stat, error) { return c.IncrementalReconfig(joining, leaving, from) }
	}
	try("no super, adding", zk.ErrNoAuth, inc([]string{"server.99=0.0.0.0:1234:2345:observer;3456"}, nil, -1))
	try("no super, bad input", zk.ErrBadArguments, inc([]string{"some thing"}, nil, -1))
	try("no super, stale version", zk.ErrBadVersion, inc(nil, []string{"3"}, 5))
	c.AddAuth("digest", []byte("super:test"))
	try("leaving id not a number", errors.New("-5"), inc(nil, []string{"abc"}, -1))
	try("joining id not a number", errors.New("-5"), inc([]string{"server.x=127.0.0.1:1:2;3"}, nil, -1))
	try("joiner without a client port", zk.ErrBadArguments, inc([]string{"server.7=127.0.0.1:1:2"}, nil, -1))
	try("one participant left", zk.ErrBadArguments, inc(nil, []string{"2", "3"}, -1))
	try("joiner the new quorum needs, not running", errors.New("-13"), inc([]string{
		"server.7=127.0.0.1:1:2;3", "server.8=127.0.0.1:4:5;6", "server.9=127.0.0.1:7:8;9"}, nil, -1))
	before := nodes[0].db.LastZxid()
	st := try("leaving id not a member", nil, inc(nil, []string{"9"}, -1))
	if st.Mzxid <= before || st.Version != -1 {
		t.Fatalf("stat %+v after zxid %d", st, before)
	}
	obs := "server.99=0.0.0.0:1234:2345:observer;0.0.0.0:3456"
	st = try("add an observer nobody runs", nil, inc([]string{obs}, nil, st.Mzxid))
	data, got, err := c.Get("/zookeeper/config")
	if err != nil || !strings.Contains(string(data), obs) || *got != *st {
		t.Fatalf("after adding: %q %+v (reply stat %+v), %v", data, got, st, err)
	}
	want := cfg.Text()[:strings.LastIndex(cfg.Text(), "version=")] + obs + "\n"
	if !strings.HasPrefix(string(data), want) {
		t.Fatalf("config %q, want it to start %q", data, want)
	}
	try("wrong version", zk.ErrBadVersion, inc(nil, []string{"99"}, st.Mzxid+1))
	try("remove it", nil, inc(nil, []string{"99"}, st.Mzxid))
}

// TestReconfigRemovedMemberStops: a member a reconfig removes learns it
// (the leader lets it apply the new membership before Raft drops it),
// closes its clients' connections once their answers are written, turns
// new ones away and says so in srvr; added back, it serves again. The
// leader itself may be the one removed: it hands the leadership on.
func TestReconfigRemovedMemberStops(t *testing.T) {
	nodes := reconfigCluster(t, true)
	waitMembership(t, nodes)
	for _, victim := range []int{2, 0} { // a follower or the leader (if it is 1), then the first
		leader := leaderOf(nodes)
		var via *Server
		for i, s := range nodes {
			if i != victim && !s.closed.Load() {
				via = s
			}
		}
		c, _ := dial(t, nodes[victim].Addr().String(), 10*time.Second)
		if err := c.AddAuth("digest", []byte("super:test")); err != nil {
			t.Fatal(err)
		}
		id := strconv.Itoa(victim + 1)
		st, err := c.IncrementalReconfig(nil, []string{id}, -1)
		if err != nil {
			t.Fatalf("remove %s through itself: %v", id, err)
		}
		waitFor(t, 10*time.Second, "the removed member to stop serving", func() bool { return nodes[victim].removed.Load() })
		if srvr := nodes[victim].monitor.Answer("srvr"); !strings.Contains(srvr, "not currently serving") {
			t.Errorf("srvr of the removed member: %q", srvr)
		}
		waitFor(t, 10*time.Second, "a leader among the others", func() bool {
			l := leaderOf(nodes)
			return l != nil && l != nodes[victim]
		})
		t.Logf("removed member %s (the leader was %d) at version %x", id, leader.nodeID, st.Mzxid)
		back, _ := dial(t, via.Addr().String(), 10*time.Second)
		back.AddAuth("digest", []byte("super:test"))
		spec := withMembersSpec(t, nodes, victim)
		if _, err := back.IncrementalReconfig([]string{spec}, nil, -1); err != nil {
			t.Fatalf("add %s back: %v", id, err)
		}
		waitFor(t, 10*time.Second, "the member added back to serve", func() bool { return !nodes[victim].removed.Load() })
	}
}

// withMembersSpec is member i's server.N line as withMembers made it.
func withMembersSpec(t *testing.T, nodes []*Server, i int) string {
	t.Helper()
	m, ok := nodes[(i+1)%len(nodes)].Replication().Members.Member(uint64(i + 1))
	if !ok {
		cfg := nodes[i].cfg.Raft
		for _, mm := range cfg.Members {
			if mm.ID == uint64(i+1) {
				m = mm
			}
		}
	}
	return "server." + strconv.Itoa(i+1) + "=" + m.String()
}

// TestReconfigBackToBack: a second reconfig, sent through another member
// as soon as the first is answered, is decided, not refused as in progress, though Raft's
// configuration is still following the first (here the leader looks for a
// participant nobody runs before giving up on promoting it), as ZooKeeper
// answers a reconfig only once it is committed.
func TestReconfigBackToBack(t *testing.T) {
	nodes := reconfigCluster(t, true)
	waitMembership(t, nodes)
	// A client on two members: one member sends its clients' reconfigs
	// one after another anyway, so the second comes through another.
	var clients []*zk.Conn
	for _, s := range nodes[:2] {
		c, _ := dial(t, s.Addr().String(), 10*time.Second)
		if err := c.AddAuth("digest", []byte("super:test")); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	// Server 4's quorum port takes connections and never answers, so the
	// leader waits out each question it asks there.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan []net.Conn, 1)
	held <- nil
	t.Cleanup(func() {
		silent.Close()
		for _, c := range <-held {
			c.Close()
		}
		held <- nil
	})
	go func() {
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			held <- append(<-held, conn)
		}
	}()
	joiner := fmt.Sprintf("server.4=%s:2:participant;127.0.0.1:3", silent.Addr())
	if _, err := clients[0].IncrementalReconfig([]string{joiner}, nil, -1); err != nil {
		t.Fatalf("add a participant nobody runs: %v", err)
	}
	if _, err := clients[1].IncrementalReconfig(nil, []string{"4"}, -1); err != nil {
		t.Fatalf("remove it at once through member 2: %v", err)
	}
}

// TestReconfigureFromVersion: the admin port's change made against a
// membership version is made while the membership is that version, and
// refused with BADVERSION once it has moved on, through the leader or a
// follower, so a change whose caller stopped waiting cannot undo a later
// one.
func TestReconfigureFromVersion(t *testing.T) {
	nodes := reconfigCluster(t, false)
	cfg := waitMembership(t, nodes)
	leader := leaderOf(nodes)
	follower := followerOf(nodes, leader)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Until Raft's configuration follows a change, the next is refused
	// as in progress (ZooKeeper's check before fromConfig's): try again.
	change := func(s *Server, from int64, joining []string, leaving []uint64) (membership.Config, error) {
		for {
			got, err := s.ReconfigureFrom(ctx, from, joining, leaving)
			if !errors.Is(err, tree.ErrReconfigInProgress) || ctx.Err() != nil {
				return got, err
			}
			time.Sleep(50 * time.Millisecond) // for Raft's configuration to follow
		}
	}
	const observer = "server.9=127.0.0.1:1234:0:observer"
	added, err := change(follower, cfg.Version, []string{observer}, nil)
	if err != nil || added.Version == cfg.Version || !strings.Contains(added.Text(), "server.9=") {
		t.Fatalf("adding from version %x: %v, config %q", cfg.Version, err, added.Text())
	}
	for _, s := range []*Server{leader, follower} {
		if _, err := change(s, cfg.Version, nil, []uint64{9}); !errors.Is(err, tree.ErrBadVersion) {
			t.Fatalf("removing from the old version %x: %v, want %v", cfg.Version, err, tree.ErrBadVersion)
		}
	}
	removed, err := change(leader, added.Version, nil, []uint64{9})
	if err != nil || strings.Contains(removed.Text(), "server.9=") {
		t.Fatalf("removing from version %x: %v, config %q", added.Version, err, removed.Text())
	}
}
