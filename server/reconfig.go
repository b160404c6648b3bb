package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// reconfig answers a client's reconfig (opcode 16). The leader decides
// it (raftstore/reconfig.go; a single node answers as a standalone
// ZooKeeper) and logs its outcome, which takes a zxid like any write; the
// reply comes when that outcome applies here: the new configuration's
// text and the Stat of /zookeeper/config, or the error. The reconfig
// travels apart from the connection's other writes, so the session's
// order is kept around it: its earlier writes have applied before it is
// sent, and a later read or write waits for its outcome (only pings are
// answered meanwhile). body is the request as sent; the leader decodes
// it, so a malformed one is refused there, in turn.
func (c *conn) reconfig(h wire.RequestHeader, body []byte) bool {
	c.waitWrites()
	s := c.srv
	p := &proposal{
		cmd: zkdb.Command{Conn: c.id, Kind: zkdb.KindReconfig,
			Txn: tree.Txn{Session: c.sessionID.Load(), Auth: c.identities(), Op: wire.OpReconfig}},
		conn:    c,
		xid:     h.Xid,
		req:     c.cur,
		size:    len(body),
		applied: replyWrite,
		done:    make(chan struct{}),
	}
	s.pending.add(p, s.clock.Now())
	var ok bool
	if s.alone() {
		// A single node keeping its state with Raft is standalone too.
		ok = s.repl.Propose(standaloneReconfig(p.cmd, s.cfg.ReconfigEnabled), p.size)
	} else {
		ok = s.repl.Reconfig(p.cmd, append([]byte(nil), body...), false)
	}
	if !ok {
		s.pending.take(p.cmd.Seq)
		return false
	}
	c.lastWrite, c.pendingReconfig = p, p
	return true
}

// memberOf records whether this node belongs to cfg, the membership just
// applied. A member a reconfig removed stops serving, and says so: its
// clients' connections close once their replies are written (the
// requester's answer included), a new session is refused until a reconfig
// adds it back, and the four-letter words answer that it is not serving.
// (ZooKeeper 3.8 keeps a removed follower serving, as a non-voting
// follower, while it stays connected to its leader; issue 27 asks for a
// removed member that stops, so an operator decommissioning one sees its
// clients move.) A node with no membership yet (a single node, an
// ensemble before its first leader wrote one) serves. It may run under the
// DB's lock.
func (s *Server) memberOf(cfg membership.Config) {
	if s.cfg.Raft == nil {
		return
	}
	_, in := cfg.Member(s.nodeID)
	removed := !in && !cfg.IsZero()
	if s.removed.Swap(removed) == removed {
		return
	}
	if !removed {
		s.log.Info("this server is a member of the ensemble again: serving clients", "version", fmt.Sprintf("%x", cfg.Version))
		return
	}
	s.log.Warn("this server is not a member of the ensemble (removed by reconfig, or not yet added): it takes no new sessions, and closes its clients' connections",
		"version", fmt.Sprintf("%x", cfg.Version), "connections", len(s.openConns()), "in", RemovedGrace)
	time.AfterFunc(RemovedGrace, func() {
		if !s.removed.Load() || s.closed.Load() {
			return
		}
		for _, c := range s.openConns() {
			c.out.finish()
		}
	})
}

// RemovedGrace is how long a member a reconfig removed goes on answering
// its clients before it closes their connections (once their replies are
// written): long enough that the client that asked for the removal, which
// gets its answer here, is answered its next request too, rather than
// find the connection closing under it. The leader keeps the member in
// Raft, not voting, a while longer, so it is sent the log meanwhile.
const RemovedGrace = 2 * time.Second

// alone reports whether this Raft node is on its own: started without
// peers, and not made an ensemble since (Reconfigure).
func (s *Server) alone() bool {
	r := s.cfg.Raft
	return r != nil && len(r.Peers) == 0 && len(r.Members) == 0 && s.db.Membership().IsZero()
}

// Errors of Reconfigure.
var (
	// ErrReconfigLost: the leader was lost with the change in flight; it
	// may or may not have been made (Membership tells).
	ErrReconfigLost = errors.New("server: reconfig lost with the leader: it may or may not have been made")
)

// Reconfig changes the ensemble's membership by the path a client's
// reconfig takes (the leader decides it in ZooKeeper's order of checks
// and logs its outcome, and Raft's configuration follows), with the
// operator's authority: neither ReconfigEnabled nor the ACL of
// /zookeeper/config applies. req is what a reconfig carries: joining and
// leaving servers, or all new members, and the version it expects (-1 for
// any). It returns the new configuration, or the error the reconfig was
// refused with (tree.ErrNewConfigNoQuorum, tree.ErrBadArguments, ...). A
// joining server need not name a client address here, as a client's
// reconfig must. A node that started alone becomes the first member of an
// ensemble it can grow this way.
func (s *Server) Reconfig(ctx context.Context, req wire.ReconfigRequest) (membership.Config, error) {
	if s.repl == nil {
		return membership.Config{}, ErrNotStarted
	}
	if s.cfg.Raft == nil {
		return membership.Config{}, ErrNotReplicated
	}
	var (
		err       error
		installed *membership.Config
	)
	p := &proposal{
		cmd: zkdb.Command{Kind: zkdb.KindReconfig, Txn: tree.Txn{Op: wire.OpReconfig}},
		applied: func(_ *proposal, e *zkdb.Effects) {
			err, installed = e.Result.Err, e.Membership
		},
		done: make(chan struct{}),
	}
	var enc wire.Encoder
	req.Encode(&enc)
	s.pending.add(p, s.clock.Now())
	if !s.repl.Reconfig(p.cmd, append([]byte(nil), enc.Bytes()...), true) {
		s.pending.take(p.cmd.Seq)
		return membership.Config{}, ErrClosed
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return membership.Config{}, ctx.Err()
	}
	switch {
	case !p.committed:
		return membership.Config{}, ErrReconfigLost
	case err != nil:
		return membership.Config{}, err
	}
	return *installed, nil
}

// AddMembers adds members to the ensemble, or changes their role or
// addresses (Reconfig with the joining servers).
func (s *Server) AddMembers(ctx context.Context, members ...membership.Member) (membership.Config, error) {
	var joining []string
	for _, m := range members {
		joining = append(joining, fmt.Sprintf("server.%d=%s", m.ID, m))
	}
	return s.Reconfigure(ctx, joining, nil)
}

// RemoveMembers removes members from the ensemble (Reconfig with the
// leaving servers).
func (s *Server) RemoveMembers(ctx context.Context, ids ...uint64) (membership.Config, error) {
	return s.Reconfigure(ctx, nil, ids)
}

// Reconfigure is Reconfig with joining server.N lines and leaving ids,
// made against whatever membership holds (ReconfigureFrom with -1).
func (s *Server) Reconfigure(ctx context.Context, joining []string, leaving []uint64) (membership.Config, error) {
	return s.ReconfigureFrom(ctx, -1, joining, leaving)
}

// ReconfigureFrom is the admin port's membership change (monitor.Source):
// Reconfigure made only against membership version from (a reconfig's
// fromConfig; -1 for any). Against any other it is refused with
// tree.ErrBadVersion, so a change whose caller gave up waiting, and which
// Raft orders after a later change, cannot undo that one.
func (s *Server) ReconfigureFrom(ctx context.Context, from int64, joining []string, leaving []uint64) (membership.Config, error) {
	req := wire.ReconfigRequest{CurConfigID: from}
	if len(joining) > 0 {
		req.JoiningServers = []byte(strings.Join(joining, ","))
	}
	if len(leaving) > 0 {
		ids := make([]string, len(leaving))
		for i, id := range leaving {
			ids[i] = strconv.FormatUint(id, 10)
		}
		req.LeavingServers = []byte(strings.Join(ids, ","))
	}
	return s.Reconfig(ctx, req)
}
