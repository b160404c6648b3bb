package testcluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hutchzk/hutch/internal/faultnet"
	"github.com/hutchzk/hutch/internal/freeport"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/server"
)

// Config describes an ensemble.
type Config struct {
	// Size is the number of members, numbered from 1.
	Size int
	// Member returns member number's configuration; the cluster adds its
	// Raft settings (node id, peers, data directory, secret) and wraps its
	// logger so that faults the test caused are logged quietly.
	Member func(number int) MemberConfig
	// DataDir is where each member keeps its Raft log, in a directory of
	// its own, so that Kill and Restart keep its state as a disk would.
	DataDir string
	// ElectionTimeout is Raft's (raftstore.DefaultElectionTimeout when 0).
	ElectionTimeout time.Duration
	// LeaderWait bounds the wait for the first leader (30 s when 0).
	LeaderWait time.Duration
}

// startAttempts bounds how often Start picks new Raft ports after one was
// taken by another process between picking and binding.
const startAttempts = 5

// Cluster is an ensemble of members replicating through hutch's real Raft
// code (a raft-boltdb log per member, peer connections over loopback
// TCP), whose links a test can cut, pause and shape. Members are numbered
// from 1, as in their names, addresses and Raft node ids.
type Cluster struct {
	members []*Member // member n is members[n-1]
	net     *faultnet.Network
	peers   []string // each member's Raft address, its name in net
	clients *clientLinks
	quiet   *quietLog
	wait    time.Duration
	// joiner is what AddMember gives a member that joins later.
	joiner joinerConfig

	// mu guards the link state: why each directed link is down, and what
	// net has been told.
	mu        sync.Mutex
	partition map[link]bool
	cuts      map[link]bool
	paused    map[int]bool
	dropped   map[link]bool
	killed    map[int]bool
}

// link is the connections member from dials to member to.
type link struct{ from, to int }

// Start runs an ensemble and waits until a majority agrees on a leader.
func Start(cfg Config) (*Cluster, error) {
	if cfg.Size < 1 || cfg.Size > server.MaxServerID {
		return nil, fmt.Errorf("an ensemble of %d members: from 1 to %d", cfg.Size, server.MaxServerID)
	}
	if cfg.LeaderWait <= 0 {
		cfg.LeaderWait = 30 * time.Second
	}
	c := &Cluster{net: faultnet.New(), clients: newClientLinks(), wait: cfg.LeaderWait,
		partition: map[link]bool{}, cuts: map[link]bool{}, paused: map[int]bool{},
		dropped: map[link]bool{}, killed: map[int]bool{}}
	// The first election's warnings (no leader yet, heartbeats timing
	// out) are no more news than a fault's.
	c.quiet = &quietLog{settle: 3*max(cfg.ElectionTimeout, raftstore.DefaultElectionTimeout) + time.Second, active: true}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	c.joiner = joinerConfig{secret: secret, dataDir: cfg.DataDir, election: cfg.ElectionTimeout}
	for n := 1; n <= cfg.Size; n++ {
		mc := cfg.Member(n)
		mc.Number = n
		logger := mc.Server.Logger
		if logger == nil {
			logger = slog.Default()
		}
		mc.Server.Logger = slog.New(c.quiet.wrap(logger.Handler()))
		mc.Server.Raft = &raftstore.Config{NodeID: uint64(n), DataDir: filepath.Join(cfg.DataDir, strconv.Itoa(n)),
			Secret: secret, ElectionTimeout: cfg.ElectionTimeout, Logger: mc.Server.Logger}
		c.members = append(c.members, newMember(mc, c.clients, c.quiet))
	}
	var errs []error
	for range startAttempts {
		err := c.startAll()
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), cfg.LeaderWait)
			defer cancel()
			if _, err := c.Leader(ctx); err != nil {
				c.Close()
				return nil, err
			}
			c.quiet.healed(false)
			return c, nil
		}
		errs = append(errs, err)
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	c.Close()
	return nil, fmt.Errorf("start ensemble: %w", errors.Join(errs...))
}

// startAll picks every member a Raft port and starts them all; on failure
// it stops those it started.
func (c *Cluster) startAll() error {
	c.peers = make([]string, len(c.members))
	peers := make(map[uint64]string, len(c.members))
	for i := range c.members {
		port, err := freeport.Pick("127.0.0.1")
		if err != nil {
			return err
		}
		c.peers[i] = "127.0.0.1:" + strconv.Itoa(port)
		peers[uint64(i+1)] = c.peers[i]
	}
	for i, m := range c.members {
		r := m.cfg.Raft
		r.RaftAddr, r.Peers, r.Dial = c.peers[i], peers, c.net.Dialer(c.peers[i])
	}
	for i, m := range c.members {
		if err := m.Start(0); err != nil {
			for _, started := range c.members[:i] {
				_ = started.Stop()
			}
			return err
		}
	}
	return nil
}

// Close heals every link, so that held I/O lets go, and stops every
// member.
func (c *Cluster) Close() error {
	c.mu.Lock()
	c.partition, c.cuts, c.paused = map[link]bool{}, map[link]bool{}, map[int]bool{}
	c.mu.Unlock()
	c.net.Heal()
	c.clients.heal()
	var errs []error
	for _, m := range c.members {
		errs = append(errs, m.Close())
	}
	return errors.Join(errs...)
}

// Size is the number of members.
func (c *Cluster) Size() int { return len(c.members) }

// Member returns member n (from 1).
func (c *Cluster) Member(n int) (*Member, error) {
	if n < 1 || n > len(c.members) {
		return nil, fmt.Errorf("member %d: %w (members are numbered 1 to %d)", n, ErrNoMember, len(c.members))
	}
	return c.members[n-1], nil
}

// Members are the members, member 1 first.
func (c *Cluster) Members() []*Member { return slices.Clone(c.members) }

// leads reports whether srv says it is the Raft leader.
func leads(srv *server.Server) bool { return srv.State().Leads() }

// ownsExpiry says whether member n runs and decides session expiry.
func (c *Cluster) ownsExpiry(n int) bool {
	srv := c.members[n-1].cur.Load()
	return srv != nil && srv.OwnsExpiry()
}

// LeaderNow returns the leader a majority of the ensemble agrees on now,
// as etcd's tests ask of theirs: a member that says it leads, and with
// which at least a majority of all members (itself included) name it
// their leader while running, unpaused, and reached by it (the links it
// dials to them neither partitioned nor cut). A leader cut off by a
// partition still says it leads, and the members it can no longer reach
// still name it until they elect another: neither counts.
func (c *Cluster) LeaderNow() (int, bool) {
	c.mu.Lock()
	paused, dropped := maps(c.paused), linkSet(c.dropped)
	c.mu.Unlock()
	views := make([]uint64, len(c.members)) // each member's leader; 0 for none or not counted
	for i, m := range c.members {
		if srv := m.cur.Load(); srv != nil && !paused[i+1] {
			views[i] = srv.Replication().LeaderID
		}
	}
	for i, m := range c.members {
		lead := i + 1
		srv := m.cur.Load()
		if srv == nil || paused[lead] || views[i] != uint64(lead) || !leads(srv) {
			continue
		}
		agree := 0
		for j, v := range views {
			if v == uint64(lead) && (j == i || !dropped[link{lead, j + 1}]) {
				agree++
			}
		}
		if agree > len(c.members)/2 {
			return lead, true
		}
	}
	return 0, false
}

// Leader waits until a majority agrees on a leader (LeaderNow) and
// returns it; ErrNoLeader if none does before ctx ends.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	return c.poll(ctx, func() (int, bool) { return c.LeaderNow() })
}

// WaitLeader waits until every member named, or with none every running
// and unpaused member, names the same leader, which a majority agrees on,
// and returns it: etcd's WaitMembersForLeader. After Heal it waits for a
// member that was cut off to follow again.
func (c *Cluster) WaitLeader(ctx context.Context, members ...int) (int, error) {
	for _, n := range members {
		if _, err := c.Member(n); err != nil {
			return 0, err
		}
	}
	return c.poll(ctx, func() (int, bool) {
		lead, ok := c.LeaderNow()
		if !ok {
			return 0, false
		}
		c.mu.Lock()
		paused := maps(c.paused)
		c.mu.Unlock()
		names := members
		if len(names) == 0 {
			for i, m := range c.members {
				if m.Running() && !paused[i+1] {
					names = append(names, i+1)
				}
			}
		}
		for _, n := range names {
			srv := c.members[n-1].cur.Load()
			if srv == nil || srv.Replication().LeaderID != uint64(lead) {
				return 0, false
			}
		}
		return lead, true
	})
}

// poll calls f every few milliseconds until it holds or ctx ends.
func (c *Cluster) poll(ctx context.Context, f func() (int, bool)) (int, error) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if n, ok := f(); ok {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%w: %w", ErrNoLeader, ctx.Err())
		case <-tick.C:
		}
	}
}

func maps(m map[int]bool) map[int]bool {
	out := make(map[int]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func linkSet(m map[link]bool) map[link]bool {
	out := make(map[link]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Kill stops member n at once, as a crash would: its clients lose their
// connection, its sessions live on in the others.
func (c *Cluster) Kill(n int) error {
	m, err := c.Member(n)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.killed[n] = true
	c.mu.Unlock()
	c.quiet.fault()
	return m.Stop()
}

// Restart stops member n (if running) and starts it again from its log,
// on the same addresses; it catches up with the others by itself.
func (c *Cluster) Restart(n int) error {
	m, err := c.Member(n)
	if err != nil {
		return err
	}
	c.quiet.fault()
	err = m.Restart(0)
	c.mu.Lock()
	delete(c.killed, n)
	c.mu.Unlock()
	c.quiet.healed(c.faulty())
	return err
}

// Pause makes member n silent, as if its process were stopped: its
// clients get no answers (their connections stay open) and its peers hear
// nothing; its session expiry waits. Unlike a real stop its Raft timers
// run on, so when it resumes it behaves as one coming back from a silent
// partition.
func (c *Cluster) Pause(n int) error {
	m, err := c.Member(n)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.paused[n] = true
	c.mu.Unlock()
	c.quiet.fault()
	if srv := m.cur.Load(); srv != nil {
		srv.Pause()
	}
	c.apply()
	return nil
}

// Resume undoes Pause.
func (c *Cluster) Resume(n int) error {
	m, err := c.Member(n)
	if err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.paused, n)
	c.mu.Unlock()
	c.apply()
	if srv := m.cur.Load(); srv != nil {
		srv.Resume()
	}
	c.quiet.healed(c.faulty())
	return nil
}

// Paused reports whether member n is paused.
func (c *Cluster) Paused(n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused[n]
}

// Partition splits the members into groups that cannot reach each other,
// silently, as a real partition does: bytes sent across it wait, unread,
// until Heal, and new connections across it time out. Members named in no
// group form one more group together, so Partition([]int{1}) cuts member
// 1 off from the rest. It replaces any earlier partition.
func (c *Cluster) Partition(groups ...[]int) error {
	group := make(map[int]int)
	for g, members := range groups {
		for _, n := range members {
			if _, err := c.Member(n); err != nil {
				return err
			}
			if _, dup := group[n]; dup {
				return fmt.Errorf("member %d is in two groups", n)
			}
			group[n] = g + 1
		}
	}
	cut := map[link]bool{}
	for a := 1; a <= len(c.members); a++ {
		for b := 1; b <= len(c.members); b++ {
			if a != b && group[a] != group[b] {
				cut[link{a, b}] = true
			}
		}
	}
	c.mu.Lock()
	c.partition = cut
	c.mu.Unlock()
	c.quiet.fault()
	c.apply()
	return nil
}

// CutOneWay stops member from reaching member to: connections from dials
// to to hang and new ones time out, while to's connections to from work
// on, so from still hears to. A firewall that drops one direction's new
// connections, or a peer whose accept queue is full, looks like this.
func (c *Cluster) CutOneWay(from, to int) error {
	if _, err := c.Member(from); err != nil {
		return err
	}
	if _, err := c.Member(to); err != nil {
		return err
	}
	if from == to {
		return fmt.Errorf("member %d cannot be cut from itself", from)
	}
	c.mu.Lock()
	c.cuts[link{from, to}] = true
	c.mu.Unlock()
	c.quiet.fault()
	c.apply()
	return nil
}

// Heal undoes every Partition, CutOneWay and shaped link (SetMemberShape,
// SetLinkShape, SetSessionShape); paused members stay paused and killed
// ones stopped.
func (c *Cluster) Heal() {
	c.mu.Lock()
	c.partition, c.cuts = map[link]bool{}, map[link]bool{}
	c.mu.Unlock()
	c.apply()
	c.net.HealShapes()
	c.clients.heal()
	c.quiet.healed(c.faulty())
}

// faulty reports whether a fault the test caused is still in effect.
func (c *Cluster) faulty() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.dropped) > 0 || len(c.killed) > 0
}

// apply tells the network which links are down now: those of the
// partition, the one-way cuts and the paused members.
func (c *Cluster) apply() {
	c.mu.Lock()
	defer c.mu.Unlock()
	want := map[link]bool{}
	for l := range c.partition {
		want[l] = true
	}
	for l := range c.cuts {
		want[l] = true
	}
	for i := range c.paused {
		for j := 1; j <= len(c.members); j++ {
			if i != j {
				want[link{i, j}], want[link{j, i}] = true, true
			}
		}
	}
	for l := range want {
		c.net.DropOneWay(c.peers[l.from-1], c.peers[l.to-1])
	}
	for l := range c.dropped {
		if !want[l] {
			c.net.Undrop(c.peers[l.from-1], c.peers[l.to-1])
		}
	}
	c.dropped = want
}

// SetMemberShape degrades every link of member n (faultnet.Shape: delay,
// jitter, rate, loss), to its peers both ways and to its clients both
// ways, as a slow or lossy network interface would; the zero Shape
// restores them.
func (c *Cluster) SetMemberShape(n int, s faultnet.Shape) error {
	if _, err := c.Member(n); err != nil {
		return err
	}
	if err := s.Check(); err != nil {
		return err
	}
	for j := 1; j <= len(c.members); j++ {
		if j != n {
			c.net.SetShape(c.peers[n-1], c.peers[j-1], s)
			c.net.SetShape(c.peers[j-1], c.peers[n-1], s)
		}
	}
	c.clients.setMember(n, s)
	c.noteShape(s)
	return nil
}

// SetLinkShape degrades what member from sends member to, one way.
func (c *Cluster) SetLinkShape(from, to int, s faultnet.Shape) error {
	if _, err := c.Member(from); err != nil {
		return err
	}
	if _, err := c.Member(to); err != nil {
		return err
	}
	if err := s.Check(); err != nil {
		return err
	}
	c.net.SetShape(c.peers[from-1], c.peers[to-1], s)
	c.noteShape(s)
	return nil
}

// SetSessionShape degrades the connection of session id's client, both
// ways, on whichever member it connects to, now and after it reconnects.
func (c *Cluster) SetSessionShape(id int64, s faultnet.Shape) error {
	if err := s.Check(); err != nil {
		return err
	}
	c.clients.setSession(id, s)
	c.noteShape(s)
	return nil
}

func (c *Cluster) noteShape(s faultnet.Shape) {
	if s.IsZero() {
		c.quiet.healed(c.faulty())
	} else {
		c.quiet.fault()
	}
}

// Addrs are the members' client addresses (Member.Addr), member 1 first.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.Addr()
	}
	return out
}

// Dial connects in memory to the member whose address (Addrs) it is
// given, as a ZooKeeper client's dialer.
func (c *Cluster) Dial(address string) (net.Conn, error) {
	for _, m := range c.members {
		if m.Addr() == address {
			return m.Dial()
		}
	}
	return nil, Refused(address)
}

// ExpireSession expires session id through the leader, which owns
// expiry, as its timeout would; the close is replicated like any write.
// It waits for a leader if there is none.
func (c *Cluster) ExpireSession(ctx context.Context, id int64) error {
	for {
		lead, err := c.Leader(ctx)
		if err != nil {
			return err
		}
		srv, err := c.members[lead-1].server()
		if err == nil {
			err = srv.ExpireSession(id)
		}
		if err == nil || (!errors.Is(err, server.ErrNotLeader) && !errors.Is(err, ErrStopped)) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(10 * time.Millisecond): // leadership changing hands
		}
	}
}

// DropConnection closes the connection that carries session id, on
// whichever member holds it.
func (c *Cluster) DropConnection(id int64) error {
	for _, m := range c.members {
		if srv := m.cur.Load(); srv != nil && srv.DropConnection(id) == nil {
			return nil
		}
	}
	return fmt.Errorf("drop connection of session %#x: %w", id, server.ErrNoConnection)
}

// DropAll closes every client connection of every member and returns how
// many it closed.
func (c *Cluster) DropAll() int {
	n := 0
	for _, m := range c.members {
		if srv := m.cur.Load(); srv != nil {
			n += srv.DropAll()
		}
	}
	return n
}

// MemberOf returns the member the client of session id is connected to
// now (Curator's findConnectionInstance); false if it is connected to
// none.
func (c *Cluster) MemberOf(id int64) (int, bool) {
	for i, m := range c.members {
		if slices.Contains(m.Connected(), id) {
			return i + 1, true
		}
	}
	return 0, false
}

// Advance moves every member's fake clock forward by d, the leader's
// last, and returns once the leader applied the expiries and deletions
// that follow (see server.AdvanceClock). With keepConnected the sessions
// whose clients are connected to a running member are treated as having
// pinged all along, and live on.
func (c *Cluster) Advance(d time.Duration, keepConnected bool) error {
	if c.members[0].clock == nil {
		return server.ErrRealClock
	}
	var alive []int64
	if keepConnected {
		for _, m := range c.members {
			alive = append(alive, m.Connected()...)
		}
	}
	// The advance's expiries happen where expiry is owned. A leader just
	// elected owns it only once it has taken the sessions over, and that
	// takeover gives every session a fresh timeout at its clock's time:
	// a clock moved before it would expire nothing. So a takeover under
	// way is waited for (with no leader agreed on, nothing is).
	lead, ok := c.LeaderNow()
	if ok && !c.ownsExpiry(lead) {
		ctx, cancel := context.WithTimeout(context.Background(), c.wait)
		lead, _ = c.poll(ctx, func() (int, bool) {
			n, ok := c.LeaderNow()
			return n, ok && c.ownsExpiry(n)
		})
		cancel()
	}
	for i, m := range c.members {
		if i+1 != lead {
			if err := m.Advance(d, alive); err != nil {
				return err
			}
		}
	}
	if lead > 0 {
		return c.members[lead-1].Advance(d, alive)
	}
	return nil
}
