package testcluster

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hutchzk/hutch/internal/freeport"
	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/server"
)

// joinerConfig is the Raft setting every member shares, kept for members
// that join later.
type joinerConfig struct {
	secret   []byte
	dataDir  string
	election time.Duration
}

// AddMember starts one more member, number Size()+1, from mc (as
// Config.Member gives one; the cluster adds its Raft settings). It joins
// as a running ZooKeeper server given the members' lines does: it does
// not bootstrap, and has no part in the ensemble until a reconfig names
// it (Reconfigure, Join), when the leader sends it the log. It returns the
// member's number. The ensemble's controls take it like any other member;
// AddMember must not run while another control does.
func (c *Cluster) AddMember(mc MemberConfig) (int, error) {
	n := len(c.members) + 1
	if n > server.MaxServerID {
		return 0, fmt.Errorf("member %d: at most %d members", n, server.MaxServerID)
	}
	port, err := freeport.Pick("127.0.0.1")
	if err != nil {
		return 0, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	// The members it may first reach; not itself, so it waits to be sent
	// the log instead of bootstrapping.
	peers := make(map[uint64]string, len(c.peers))
	for i, p := range c.peers {
		peers[uint64(i+1)] = p
	}
	mc.Number = n
	logger := mc.Server.Logger
	if logger == nil {
		logger = slog.Default()
	}
	mc.Server.Logger = slog.New(c.quiet.wrap(logger.Handler()))
	mc.Server.Raft = &raftstore.Config{NodeID: uint64(n), DataDir: filepath.Join(c.joiner.dataDir, strconv.Itoa(n)),
		Secret: c.joiner.secret, ElectionTimeout: c.joiner.election, Logger: mc.Server.Logger,
		RaftAddr: addr, Peers: peers, Dial: c.net.Dialer(addr)}
	m := newMember(mc, c.clients, c.quiet)
	if err := m.Start(0); err != nil {
		return 0, err
	}
	c.members = append(c.members, m)
	c.peers = append(c.peers, addr)
	return n, nil
}

// RaftAddr is member n's Raft (quorum) address, as a reconfig's server.N
// line names it.
func (c *Cluster) RaftAddr(n int) (string, error) {
	if _, err := c.Member(n); err != nil {
		return "", err
	}
	return c.peers[n-1], nil
}

// Reconfigure changes the membership through a running member, as an
// operator's reconfig does (server.Server.Reconfigure; the leader,
// when a majority agrees on one): joining are server.N lines, leaving
// member numbers. It returns the new configuration, or the error the
// reconfig was refused with.
func (c *Cluster) Reconfigure(ctx context.Context, joining []string, leaving []uint64) (membership.Config, error) {
	// The leader once a majority agrees on one (waiting a few election
	// timeouts for one: right after a start or a failover none may be
	// agreed on yet, and no member holds the membership), else any member
	// that belongs: the change goes to the leader either way.
	var via *server.Server
	wait, cancel := context.WithTimeout(ctx, 4*max(c.joiner.election, raftstore.DefaultElectionTimeout))
	lead, err := c.Leader(wait)
	cancel()
	if err == nil {
		via = c.members[lead-1].Server()
	}
	for _, m := range c.members {
		if via != nil {
			break
		}
		if srv := m.Server(); srv != nil {
			if _, in := srv.Replication().Members.Member(uint64(m.number)); in {
				via = srv
			}
		}
	}
	if via == nil {
		return membership.Config{}, ErrStopped
	}
	return via.Reconfigure(ctx, joining, leaving)
}

// Join makes member n a participant, or with observer an observer, of the
// ensemble by reconfig: it adds a member AddMember started, or changes the
// role of one that belongs.
func (c *Cluster) Join(ctx context.Context, n int, observer bool) (membership.Config, error) {
	addr, err := c.RaftAddr(n)
	if err != nil {
		return membership.Config{}, err
	}
	role := "participant"
	if observer {
		role = "observer"
	}
	return c.Reconfigure(ctx, []string{fmt.Sprintf("server.%d=%s:0:%s", n, addr, role)}, nil)
}
