package hutchtest

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/faultnet"
	"github.com/hutchzk/hutch/internal/testcluster"
	"github.com/hutchzk/hutch/trace"
)

// Ensemble is an in-process ensemble of hutch servers replicating
// through hutch's real Raft code (hashicorp/raft, a raft-boltdb log in a
// temporary directory per member, peer connections over loopback TCP),
// whose links a test can cut, pause and slow. Clients reach the members
// in memory, by Dialer; partitions cut the members off from each other,
// not from their clients, as a partition between server racks would.
//
// Members are numbered from 1, as in their names in the logs (hutch-2),
// their in-memory addresses (127.0.0.2:0), their Raft node ids and the
// controls of hutch test-ensemble.
type Ensemble struct {
	tb      testing.TB
	opts    options
	c       *testcluster.Cluster
	members []*Server // member n is members[n-1]
}

// StartEnsemble runs an ensemble of n members (3 or 5 make sense) for the
// test, waits until a majority agrees on a leader, and stops it when the
// test ends. The options are Start's, applied to every member; DataDir is
// not needed (each member keeps its log in a temporary directory, so Kill
// and Restart keep its state, as a real member's disk would). The Raft
// ports are picked free and bound at once; the rare one taken by another
// process in between is retried with new ports.
func StartEnsemble(tb testing.TB, n int, opts ...Option) *Ensemble {
	tb.Helper()
	if n < 1 || n > 200 {
		tb.Fatalf("hutchtest: an ensemble of %d members", n)
	}
	o := buildOptions(opts)
	e := &Ensemble{tb: tb, opts: o}
	configs := make([]testcluster.MemberConfig, n)
	for i := range configs {
		configs[i] = memberConfig(tb, o, "hutch-"+strconv.Itoa(i+1), i+1)
	}
	c, err := testcluster.Start(testcluster.Config{Size: n, DataDir: tb.TempDir(), ElectionTimeout: o.election,
		LeaderWait: max(o.waitTimeout, 30*time.Second),
		Member:     func(number int) testcluster.MemberConfig { return configs[number-1] }})
	if err != nil {
		tb.Fatalf("hutchtest: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Logf("hutchtest: %v", err)
		}
	})
	e.c = c
	for _, m := range c.Members() {
		e.members = append(e.members, &Server{tb: tb, opts: o, m: m, ens: e})
	}
	return e
}

// fatal fails the test with err.
func (e *Ensemble) fatal(err error) {
	e.tb.Helper()
	e.tb.Fatalf("hutchtest: %v", err)
}

// leaderWait bounds the waits for a leader: at least 30 s, since an
// election on a loaded machine can take a few.
func (e *Ensemble) leaderWait() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), max(e.opts.waitTimeout, 30*time.Second))
}

// Member is member n (from 1), for what the ensemble does not wrap: its
// sessions, watches, tree and events, a Dialer to it alone.
func (e *Ensemble) Member(n int) *Server {
	e.tb.Helper()
	if _, err := e.c.Member(n); err != nil {
		e.fatal(err)
	}
	return e.members[n-1]
}

// Size is the number of members.
func (e *Ensemble) Size() int { return len(e.members) }

// Leader returns the member that leads, as a majority of the ensemble
// agrees: one that says it leads and that, with itself, a majority of
// all members name as their leader while it reaches them (not partitioned
// or cut off from them, not paused). It waits for an election if need be,
// and fails the test if none is agreed on within the wait timeout (at
// least 30 s). Right after Partition cuts the leader off, it waits for
// the others to elect one of theirs, rather than return the old leader,
// which still believes it leads.
func (e *Ensemble) Leader() int {
	e.tb.Helper()
	ctx, cancel := e.leaderWait()
	defer cancel()
	n, err := e.c.Leader(ctx)
	if err != nil {
		e.fatal(err)
	}
	return n
}

// LeaderNow is Leader without waiting: false if no leader is agreed on
// at this moment.
func (e *Ensemble) LeaderNow() (int, bool) { return e.c.LeaderNow() }

// WaitLeader waits until every member named, or with none every running
// and unpaused member, names the same leader, one a majority agrees on
// (Leader), and returns it, as etcd's WaitMembersForLeader does. After
// Heal it waits until a member that was cut off follows again.
func (e *Ensemble) WaitLeader(members ...int) int {
	e.tb.Helper()
	ctx, cancel := e.leaderWait()
	defer cancel()
	n, err := e.c.WaitLeader(ctx, members...)
	if err != nil {
		e.fatal(err)
	}
	return n
}

// Kill stops member n at once, as a crash would: its clients lose their
// connection, its sessions live on in the others (and expire there if
// their clients do not reconnect in time).
func (e *Ensemble) Kill(n int) {
	e.tb.Helper()
	if err := e.c.Kill(n); err != nil {
		e.fatal(err)
	}
}

// Restart stops member n (if running) and starts it again from its log,
// on the same addresses; it catches up with the others by itself.
func (e *Ensemble) Restart(n int) {
	e.tb.Helper()
	if err := e.c.Restart(n); err != nil {
		e.fatal(err)
	}
}

// Pause makes member n silent, as if its process were stopped: its
// clients get no answers (their connections stay open) and its peers
// hear nothing, its session expiry waits. Unlike a real stop its Raft
// timers run on, so when it resumes it behaves as one coming back from a
// silent partition.
func (e *Ensemble) Pause(n int) {
	e.tb.Helper()
	if err := e.c.Pause(n); err != nil {
		e.fatal(err)
	}
}

// Resume undoes Pause.
func (e *Ensemble) Resume(n int) {
	e.tb.Helper()
	if err := e.c.Resume(n); err != nil {
		e.fatal(err)
	}
}

// Partition splits the members into groups that cannot reach each other,
// silently, as a real partition does: bytes sent across it wait, unread,
// until Heal, and new connections across it time out. Members named in
// no group form one more group together, so Partition([]int{1}) cuts
// member 1 off from the rest. It replaces any earlier partition.
func (e *Ensemble) Partition(groups ...[]int) {
	e.tb.Helper()
	if err := e.c.Partition(groups...); err != nil {
		e.fatal(err)
	}
}

// CutOneWay stops member from from reaching member to: connections from
// dials to to hang and new ones time out, while to's connections to from
// work on, so from still hears to. A firewall that drops one direction's
// new connections, or a peer whose accept queue is full, looks like this.
func (e *Ensemble) CutOneWay(from, to int) {
	e.tb.Helper()
	if err := e.c.CutOneWay(from, to); err != nil {
		e.fatal(err)
	}
}

// Heal undoes every Partition and CutOneWay and restores every shaped
// link; paused members stay paused, killed ones stopped.
func (e *Ensemble) Heal() { e.c.Heal() }

// SetMemberShape slows, narrows or makes lossy every link of member n
// (see Shape): to its peers and to its clients, both ways, as a bad
// network interface would. The zero Shape restores them.
func (e *Ensemble) SetMemberShape(n int, s Shape) {
	e.tb.Helper()
	if err := e.c.SetMemberShape(n, faultnet.Shape(s)); err != nil {
		e.fatal(err)
	}
}

// SetLinkShape degrades what member from sends member to, one way.
func (e *Ensemble) SetLinkShape(from, to int, s Shape) {
	e.tb.Helper()
	if err := e.c.SetLinkShape(from, to, faultnet.Shape(s)); err != nil {
		e.fatal(err)
	}
}

// SetSessionShape degrades the connection of session id's client, both
// ways, on whichever member it is connected to, now and after it moves.
func (e *Ensemble) SetSessionShape(id int64, s Shape) {
	e.tb.Helper()
	if err := e.c.SetSessionShape(id, faultnet.Shape(s)); err != nil {
		e.fatal(err)
	}
}

// Addrs are the members' client addresses (see Server.Addr), member 1
// first.
func (e *Ensemble) Addrs() []string { return e.c.Addrs() }

// ConnectString names every member, member 1 first, as a client's
// connection string.
func (e *Ensemble) ConnectString() string { return strings.Join(e.Addrs(), ",") }

// Dialer connects, in memory, to the member whose address it is given
// (Addrs); go-zookeeper given ConnectString and this dialer moves between
// members as it would between servers.
func (e *Ensemble) Dialer() func(network, address string, timeout time.Duration) (net.Conn, error) {
	return func(_, address string, _ time.Duration) (net.Conn, error) { return e.c.Dial(address) }
}

// Connect opens a go-zookeeper session to the ensemble (ConnectString,
// Dialer), as Server.Connect.
func (e *Ensemble) Connect(timeout time.Duration, opts ...func(*zk.Conn)) (*zk.Conn, <-chan zk.Event) {
	e.tb.Helper()
	return connect(e.tb, e.Addrs(), timeout, e.Dialer(), max(e.opts.waitTimeout, 30*time.Second), opts)
}

// MemberOf returns the member the client of session id is connected to
// now, as Curator's findConnectionInstance finds its server; false if it
// is connected to none (between two connections).
func (e *Ensemble) MemberOf(id int64) (int, bool) { return e.c.MemberOf(id) }

// ExpireSession expires session id through the leader, which owns
// expiry, as its timeout would (see Server.ExpireSession); the close is
// replicated like any write. It waits for a leader if there is none yet.
func (e *Ensemble) ExpireSession(id int64) {
	e.tb.Helper()
	ctx, cancel := e.leaderWait()
	defer cancel()
	if err := e.c.ExpireSession(ctx, id); err != nil {
		e.fatal(err)
	}
}

// DropConnection closes the connection that carries session id, on
// whichever member holds it (see Server.DropConnection).
func (e *Ensemble) DropConnection(id int64) {
	e.tb.Helper()
	if err := e.c.DropConnection(id); err != nil {
		e.fatal(err)
	}
}

// DropAll closes every client connection of every member and returns how
// many it closed.
func (e *Ensemble) DropAll() int { return e.c.DropAll() }

// Advance moves every member's fake clock (FakeClock) forward by d, the
// leader's last, and returns once the leader applied the expiries and
// deletions that follow (see Server.Advance; with KeepConnectedSessions
// the sessions of clients connected to any member live on).
func (e *Ensemble) Advance(d time.Duration) {
	e.tb.Helper()
	if !e.opts.fakeClock {
		e.tb.Fatalf("hutchtest: Advance needs the FakeClock option")
	}
	if err := e.c.Advance(d, e.opts.keepConnected); err != nil {
		e.fatal(err)
	}
}

// Tree is the leader's tree (see Server.Tree): what every member holds
// once it has caught up.
func (e *Ensemble) Tree() map[string]string {
	e.tb.Helper()
	return e.Member(e.Leader()).Tree()
}

// Events merges the members' traces into the ensemble's: each
// transaction and session close once, as the first member to apply it
// recorded it, and each watch notification and re-attach on the member
// that made it, ordered by the transactions they follow; Seq numbers
// them from 1. Member(n).Events is one member's own.
func (e *Ensemble) Events() []trace.Event { return e.c.Events() }

// WaitFor returns the first event match keeps on any member, past or
// future, as Server.WaitFor (a transaction is applied by every member:
// the first to apply it answers), and the member that recorded it; it
// fails the test if none comes within the wait timeout.
func (e *Ensemble) WaitFor(what string, match func(trace.Event) bool) (int, trace.Event) {
	e.tb.Helper()
	return e.waitFrom(nil, what, match)
}

// WaitForNext is WaitFor looking only at events from now on.
func (e *Ensemble) WaitForNext(what string, match func(trace.Event) bool) (int, trace.Event) {
	e.tb.Helper()
	return e.waitFrom(e.c.Marks(), what, match)
}

func (e *Ensemble) waitFrom(marks []int, what string, match func(trace.Event) bool) (int, trace.Event) {
	e.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.waitTimeout)
	defer cancel()
	n, ev, err := e.c.WaitFor(ctx, marks, match)
	if err != nil {
		e.tb.Fatalf("hutchtest: %s", waitFailure(what, err, e.opts.waitTimeout, e.Events()))
	}
	return n, ev
}
