package raftstore

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/hutchzk/hutch/internal/record"
	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// Reconfiguration. A client's reconfig goes from the member it is
// connected to (which blocks that connection until the answer, so the
// session's order holds) to the leader, which decides it as ZooKeeper's
// PrepRequestProcessor does, in the same order of checks:
//
//	reconfig disabled              RECONFIGDISABLED
//	another reconfig in progress   RECONFIGINPROGRESS
//	fromConfig not -1 nor current  BADVERSION
//	members do not parse           BADARGUMENTS (MARSHALLINGERROR where Java throws)
//	too few participants           BADARGUMENTS
//	no caught-up quorum of the new configuration   NEWCONFIGNOQUORUM
//	no WRITE on /zookeeper/config  NOAUTH
//	an id past hutch's bound       BADARGUMENTS (hutch's own check)
//
// and logs the outcome as one KindReconfig command, which takes a zxid on
// every replica and, for a new configuration, makes it the membership
// (zkdb). Only then does Raft's configuration follow, one single-server
// change at a time (reconcile.go), so a leader that dies mid-change leaves
// the next one the membership to finish. One reconfig is decided at a
// time: a second that arrives while one is being decided is refused as
// in progress; one that arrives while Raft's configuration follows the
// last waits for it.
//
// "Caught up" is what ZooKeeper calls synced: the member answers the
// leader's status question (ask.go) within an election timeout with an
// applied index at least the leader's when it asked. A joining member is
// not in Raft's configuration yet; when the new quorum needs it, and the
// requester may write /zookeeper/config, the leader first adds it as a
// non-voter and gives it CatchUpTimeout to catch up (by snapshot if need
// be); otherwise it counts as not synced, as in ZooKeeper.

// reconfigCall is a reconfig on its way to the leader: who asked (the
// command's Origin, Seq, Conn, Txn.Session and Txn.Auth), the request's
// jute body, which the leader decodes, and whether the operator asked
// (ChangeMembership: no reconfigEnabled or ACL check).
type reconfigCall struct {
	cmd      zkdb.Command
	body     []byte
	operator bool
}

// encodeReconfigCall lays a call out as
//
//	uvarint(origin) uvarint(seq) varint(conn) varint(session) byte(operator)
//	uvarint(nauth) (str(scheme) str(id))* body
func encodeReconfigCall(c reconfigCall) []byte {
	b := binary.AppendUvarint(nil, c.cmd.Origin)
	b = binary.AppendUvarint(b, c.cmd.Seq)
	b = binary.AppendVarint(b, c.cmd.Conn)
	b = binary.AppendVarint(b, c.cmd.Txn.Session)
	op := byte(0)
	if c.operator {
		op = 1
	}
	b = append(b, op)
	b = binary.AppendUvarint(b, uint64(len(c.cmd.Txn.Auth)))
	for _, id := range c.cmd.Txn.Auth {
		b = appendString(b, id.Scheme)
		b = appendString(b, id.ID)
	}
	return append(b, c.body...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func decodeReconfigCall(b []byte) (reconfigCall, bool) {
	var c reconfigCall
	r := record.NewSlice(b)
	c.cmd.Origin, c.cmd.Seq = r.Uvarint(), r.Uvarint()
	c.cmd.Conn, c.cmd.Txn.Session = r.Varint(), r.Varint()
	op := r.Byte()
	n := r.Count(2) // an identity is two strings, a byte each at least
	if r.Bad() || op > 1 {
		return c, false
	}
	c.operator = op == 1
	for range n {
		c.cmd.Txn.Auth = append(c.cmd.Txn.Auth, wire.ID{Scheme: r.String(), ID: r.String()})
	}
	c.body = append([]byte(nil), r.Rest()...)
	return c, !r.Bad()
}

// Reconfig hands a reconfig (cmd names who asked: Origin, Seq, Conn,
// Txn.Session, Txn.Auth; body is the request's jute encoding) to the
// leader, which decides it and logs its outcome. The server replies when
// that command applies here; if the leader cannot be reached, or its
// answer is lost, the writer is failed through Events. operator marks the
// operator's own change (no reconfigEnabled or ACL check), which may also
// grow a node that started alone into an ensemble. It reports false once
// the node has stopped.
func (n *Node) Reconfig(cmd zkdb.Command, body []byte, operator bool) bool {
	return n.queueReconfig(reconfigCall{cmd: cmd, body: body, operator: operator})
}

func (n *Node) queueReconfig(call reconfigCall) bool {
	select {
	case n.reconfigIn <- call:
		return true
	case <-n.stopped:
		return false
	}
}

// reconfigLoop sends the reconfigs this node's clients asked for to the
// leader, one at a time (one is decided at a time anyway).
func (n *Node) reconfigLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case call := <-n.reconfigIn:
			if err := n.sendReconfig(ctx, call); err != nil {
				n.cfg.Logger.Warn("reconfig failed", "err", err, "session", call.cmd.Txn.Session)
				n.events.Failed([]uint64{call.cmd.Seq})
			}
		}
	}
}

// sendReconfig has the leader decide call, waiting for a leader through
// an election as a forward does.
func (n *Node) sendReconfig(ctx context.Context, call reconfigCall) error {
	deadline := time.Now().Add(n.LeaderlessLimit())
	payload := encodeReconfigCall(call)
	for {
		var err error
		if n.store.IsLeader() {
			err = n.decideAndLog(ctx, call)
		} else {
			// The leader may wait CatchUpTimeout for a joiner, and an
			// election timeout for each member it asks.
			callCtx, cancel := context.WithTimeout(ctx, n.cfg.CatchUpTimeout+2*n.cfg.ElectionTimeout+n.cfg.ForwardTimeout)
			_, err = n.store.call(callCtx, frameReconfig, payload)
			cancel()
		}
		retry := errors.Is(err, ErrNoLeader) || errors.Is(err, ErrNotLeader) || errors.Is(err, ErrUnreachable)
		if err == nil || !retry || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(leaderPoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// serveReconfig decides a reconfig forwarded to this node, the leader.
func (n *Node) serveReconfig(payload []byte) byte {
	call, ok := decodeReconfigCall(payload)
	if !ok {
		return statusFailed
	}
	switch err := n.decideAndLog(n.ctx, call); {
	case err == nil:
		return statusOK
	case errors.Is(err, ErrNotLeader):
		return statusNotLeader
	default:
		n.cfg.Logger.Warn("reconfig failed on the leader", "err", err)
		return statusFailed
	}
}

// decideAndLog decides call and logs its outcome. ErrNotLeader means
// nothing was logged; any other error leaves the outcome unknown.
func (n *Node) decideAndLog(ctx context.Context, call reconfigCall) error {
	if _, ok := n.Leading(); !ok {
		return ErrNotLeader
	}
	switch {
	case !n.cfg.ReconfigEnabled && !call.operator:
		return n.logOutcome(call, zkdb.Outcome{Code: wire.CodeReconfigDisabled})
	case !n.decideMu.TryLock():
		return n.logOutcome(call, zkdb.Outcome{Code: wire.CodeReconfigInProgress})
	}
	// decideMu is held until the outcome is logged: that is ZooKeeper's
	// proposed-but-uncommitted reconfig, when another is in progress.
	// raftMu waits for Raft's configuration to catch up with the previous
	// one (its reconcile may outlast its answer to the client, so a client
	// that reconfigures twice in a row is not refused).
	decided := false
	defer func() {
		if !decided {
			n.decideMu.Unlock()
		}
	}()
	n.raftMu.Lock()
	defer n.raftMu.Unlock()
	if call.operator && n.db.Membership().IsZero() && len(n.cfg.Peers) == 0 {
		// A node that started alone: its membership is itself, written
		// now that the operator makes an ensemble of it.
		host, port, _ := net.SplitHostPort(n.store.Addr())
		qp, _ := strconv.Atoi(port)
		if err := n.writeMembership([]membership.Member{{ID: n.cfg.NodeID, Host: host, QuorumPort: qp}}); err != nil {
			return err
		}
	}
	out := n.decide(ctx, call)
	err := n.logOutcome(call, out)
	decided = true
	n.decideMu.Unlock()
	if err != nil {
		return err
	}
	if out.Code == wire.CodeOK {
		n.reconcile(ctx)
	}
	return nil
}

// logOutcome appends call's outcome to the log as its KindReconfig
// command and returns once it has applied here, so the next decision sees
// it. ErrNotLeader means Raft did not take it.
func (n *Node) logOutcome(call reconfigCall, out zkdb.Outcome) error {
	cmd := call.cmd
	cmd.Kind, cmd.Order, cmd.Term = zkdb.KindReconfig, 0, 0
	cmd.Txn.Op, cmd.Txn.Req = wire.OpReconfig, &out
	enc, err := zkdb.AppendCommands(nil, []zkdb.Command{cmd})
	if err != nil {
		return err
	}
	err = n.store.wait(n.store.append(enc))
	if errors.Is(err, raft.ErrNotLeader) {
		return ErrNotLeader
	}
	return err
}

// decide runs ZooKeeper's checks on call against the membership as
// applied here, the leader's, and returns the outcome to log. It holds
// decideMu and raftMu.
func (n *Node) decide(ctx context.Context, call reconfigCall) zkdb.Outcome {
	cur := n.db.Membership()
	out := zkdb.Outcome{Base: cur.Version}
	refuse := func(c wire.Code) zkdb.Outcome { out.Code = c; return out }
	var req wire.ReconfigRequest
	d := wire.NewDecoder(call.body)
	req.Decode(d)
	if d.Err() != nil || d.Remaining() != 0 {
		return refuse(wire.CodeMarshallingError)
	}
	if cur.IsZero() {
		// The first leader has not yet written the first configuration.
		return refuse(wire.CodeReconfigInProgress)
	}
	if req.CurConfigID != -1 && req.CurConfigID != cur.Version {
		return refuse(wire.CodeBadVersion)
	}
	var next membership.Config
	var err error
	if req.NewMembers != nil {
		next, err = membership.Replace(req.NewMembers, !n.cfg.StandaloneDisabled)
	} else {
		next, err = membership.Incremental(cur, req.JoiningServers, req.LeavingServers, call.operator)
	}
	switch {
	case errors.Is(err, membership.ErrMalformed):
		return refuse(wire.CodeMarshallingError)
	case err != nil:
		return refuse(wire.CodeBadArguments)
	}
	if minVoters := 2; next.Voters() < minVoters && (!n.cfg.StandaloneDisabled || next.Voters() < 1) {
		return refuse(wire.CodeBadArguments)
	}
	mayWrite := call.operator || n.db.CheckConfigWrite(call.cmd.Txn.Auth) == nil
	if !n.quorumSynced(ctx, next, mayWrite) {
		return refuse(wire.CodeNewConfigNoQuorum)
	}
	if !mayWrite {
		return refuse(wire.CodeNoAuth)
	}
	for _, m := range next.Members {
		if _, old := cur.Member(m.ID); !old && n.cfg.MaxMemberID > 0 && m.ID > n.cfg.MaxMemberID {
			return refuse(wire.CodeBadArguments)
		}
	}
	out.Config = next
	return out
}

// quorumSynced reports whether a quorum of next's participants is caught
// up: this node (when it is one), and every other that answers the
// status question in time with the leader's applied index reached. With
// mayAdd, joining participants the quorum needs are first added to Raft
// as non-voters and given CatchUpTimeout.
func (n *Node) quorumSynced(ctx context.Context, next membership.Config, mayAdd bool) bool {
	var voters []membership.Member
	for _, m := range next.Members {
		if m.Votes() {
			voters = append(voters, m)
		}
	}
	need := len(voters)/2 + 1
	replicas, _, err := n.store.Configuration()
	if err != nil {
		return false
	}
	addrs := make(map[uint64]string, len(replicas))
	for _, r := range replicas {
		addrs[r.ID] = r.Addr
	}
	synced := 0
	var known, joining []membership.Member
	for _, m := range voters {
		switch _, in := addrs[m.ID]; {
		case m.ID == n.cfg.NodeID:
			synced++
		case in:
			known = append(known, m)
		default:
			joining = append(joining, m)
		}
	}
	target := n.db.Applied()
	synced += n.countCaughtUp(ctx, known, addrs, target, n.cfg.ElectionTimeout)
	if synced >= need || !mayAdd || len(joining) == 0 {
		return synced >= need
	}
	for _, m := range joining {
		if err := n.addNonvoter(m); err != nil {
			n.cfg.Logger.Warn("reconfig: cannot add a joining member to catch up", "member", m.ID, "err", err)
			return false
		}
		addrs[m.ID] = m.RaftAddr()
	}
	return synced+n.countCaughtUp(ctx, joining, addrs, target, n.cfg.CatchUpTimeout) >= need
}

// addNonvoter adds m to Raft's configuration as a non-voter.
func (n *Node) addNonvoter(m membership.Member) error {
	_, prev, err := n.store.Configuration()
	if err != nil {
		return err
	}
	return n.store.AddNonvoter(m.ID, m.RaftAddr(), prev)
}

// countCaughtUp asks each member, at the Raft address addrs names, at
// once, and counts those that have applied target within wait.
func (n *Node) countCaughtUp(ctx context.Context, members []membership.Member, addrs map[uint64]string, target uint64, wait time.Duration) int {
	var mu sync.Mutex
	var wg sync.WaitGroup
	count := 0
	for _, m := range members {
		wg.Go(func() {
			if n.caughtUp(ctx, m.ID, addrs[m.ID], target, wait) {
				mu.Lock()
				count++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return count
}

// caughtUp asks member id at addr whether it has applied target, giving
// it wait to get there.
func (n *Node) caughtUp(ctx context.Context, id uint64, addr string, target uint64, wait time.Duration) bool {
	applied, who, err := n.store.askStatus(ctx, addr, target, wait)
	return err == nil && who == id && applied >= target
}
