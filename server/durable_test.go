package server

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/raftstore"
)

// durableCluster is an in-process ensemble whose members keep their log
// on disk and can be stopped and started again from it, on the same
// client and peer addresses.
type durableCluster struct {
	tb      testing.TB
	cfgs    []Config
	members []*Server // nil while stopped
}

// startDurable starts n members, member i's data in dirs[i] (a fresh
// temporary directory where dirs[i] is ""), with logStore ("" for the
// default) and tick; mods adjust each member's configuration.
func startDurable(tb testing.TB, n int, dirs []string, logStore string, tick time.Duration, mods ...func(id uint64, cfg *Config)) *durableCluster {
	tb.Helper()
	peers := make(map[uint64]string, n)
	for id := uint64(1); id <= uint64(n); id++ {
		peers[id] = fmt.Sprintf("127.0.0.1:%d", realzk.FreePort(tb))
	}
	c := &durableCluster{tb: tb, members: make([]*Server, n)}
	secret := []byte("durable test ensemble secret")
	for i := range n {
		id := uint64(i + 1)
		dir := ""
		if i < len(dirs) {
			dir = dirs[i]
		}
		if dir == "" {
			dir = tb.TempDir()
		}
		cfg := Config{
			ListenAddr:          fmt.Sprintf("127.0.0.1:%d", realzk.FreePort(tb)),
			AdminAddr:           "127.0.0.1:0",
			TickTime:            tick,
			MaxClientConnsPerIP: -1,
			Logger:              testLogger(),
			Raft: &raftstore.Config{NodeID: id, RaftAddr: peers[id], Peers: peers, Secret: secret,
				DataDir: filepath.Join(dir, "data"), LogStore: logStore},
		}
		for _, mod := range mods {
			mod(id, &cfg)
		}
		c.cfgs = append(c.cfgs, cfg)
	}
	for i := range n {
		if err := c.start(i); err != nil {
			tb.Fatalf("start member %d: %v", i+1, err)
		}
	}
	tb.Cleanup(func() {
		for i := range c.members {
			c.stop(i)
		}
	})
	waitFor(tb, 20*time.Second, "a leader", func() bool { return c.leader() != nil })
	return c
}

// start starts member i from its data directory.
func (c *durableCluster) start(i int) error {
	cfg := c.cfgs[i]
	rc := *cfg.Raft
	cfg.Raft = &rc
	s := New(cfg)
	if err := s.Start(); err != nil {
		return err
	}
	c.members[i] = s
	return nil
}

// stop stops member i, as a crash would look to the others.
func (c *durableCluster) stop(i int) {
	if s := c.members[i]; s != nil {
		_ = s.Close()
		c.members[i] = nil
	}
}

// leader returns the running member that leads, or nil.
func (c *durableCluster) leader() *Server {
	var running []*Server
	for _, s := range c.members {
		if s != nil {
			running = append(running, s)
		}
	}
	return leaderOf(running)
}

// follower returns the index of a running member that does not lead.
func (c *durableCluster) follower() int {
	l := c.leader()
	for i, s := range c.members {
		if s != nil && s != l {
			return i
		}
	}
	c.tb.Fatal("no running follower")
	return -1
}

// index returns the position of s among the members.
func (c *durableCluster) index(s *Server) int {
	for i, m := range c.members {
		if m == s {
			return i
		}
	}
	c.tb.Fatal("not a member")
	return -1
}

// addrs lists the client addresses with member first first.
func (c *durableCluster) addrs(first int) []string {
	out := []string{c.cfgs[first].ListenAddr}
	for i, cfg := range c.cfgs {
		if i != first {
			out = append(out, cfg.ListenAddr)
		}
	}
	return out
}

// dataDir is member i's data directory.
func (c *durableCluster) dataDir(i int) string { return c.cfgs[i].Raft.DataDir }

// dialAll opens a session that tries addrs in order (the first first) and
// moves along them when its server goes.
func dialAll(tb testing.TB, addrs []string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	tb.Helper()
	c, events, err := zk.Connect(addrs, timeout, zk.WithLogger(discardLogger{}), zk.WithHostProvider(&presetHosts{order: addrs}))
	return awaitSession(tb, c, events, err, addrs)
}

// turnsAway reports whether the client port at addr refuses connections
// or closes them unanswered.
func turnsAway(addr string) bool {
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return true
	}
	defer nc.Close()
	_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = nc.Read(make([]byte, 1))
	return err == io.EOF
}

// presetHosts is a go-zookeeper HostProvider that tries servers in an
// order of its own: go-zookeeper shuffles the list it hands to Init.
type presetHosts struct {
	order []string
	next  int
}

func (h *presetHosts) Init([]string) error { return nil }
func (h *presetHosts) Len() int            { return len(h.order) }
func (h *presetHosts) Connected()          {}
func (h *presetHosts) Next() (string, bool) {
	s := h.order[h.next%len(h.order)]
	h.next++
	return s, h.next%len(h.order) == 0
}
