package hutchtest

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/faultnet"
	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/server"
)

// Ensemble is an in-process ensemble of hutch servers replicating
// through hutch's real Raft code (hashicorp/raft, a raft-boltdb log in a
// temporary directory per member, peer connections over loopback TCP),
// whose links a test can cut. Clients reach the members in memory, by
// Dialer; partitions cut the members off from each other, not from
// their clients, as a partition between server racks would. Members are
// numbered from 0.
type Ensemble struct {
	tb      testing.TB
	opts    options
	members []*Server
	net     *faultnet.Network
	peers   []string // each member's Raft address, its name in net

	// mu guards the link state: why each directed link is down, and what
	// net has been told.
	mu        sync.Mutex
	partition map[link]bool
	cuts      map[link]bool
	paused    map[int]bool
	dropped   map[link]bool
}

// link is the connections member from dials to member to.
type link struct{ from, to int }

// startAttempts bounds how often StartEnsemble picks new Raft ports after
// one was taken by another process between picking and binding.
const startAttempts = 5

// StartEnsemble runs an ensemble of n members (3 or 5 make sense) for the
// test, waits until it has a leader, and stops it when the test ends. The
// options are Start's, applied to every member; DataDir is not needed
// (each member keeps its log in a temporary directory, so Kill and
// Restart keep its state, as a real member's disk would).
func StartEnsemble(tb testing.TB, n int, opts ...Option) *Ensemble {
	tb.Helper()
	if n < 1 || n > 200 {
		tb.Fatalf("hutchtest: an ensemble of %d members", n)
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	e := &Ensemble{tb: tb, opts: o, net: faultnet.New(), partition: map[link]bool{},
		cuts: map[link]bool{}, paused: map[int]bool{}, dropped: map[link]bool{}}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	base := tb.TempDir()
	for i := range n {
		m := newServer(tb, o, "hutch-"+strconv.Itoa(i+1), i+1)
		m.ens, m.index = e, i
		m.cfg.Raft = &raftstore.Config{NodeID: uint64(i + 1), DataDir: filepath.Join(base, strconv.Itoa(i+1)),
			Secret: secret, ElectionTimeout: o.election, Logger: m.cfg.Logger}
		e.members = append(e.members, m)
	}
	// Before the members' own cleanups: let held I/O go, so that they
	// stop at once.
	tb.Cleanup(func() {
		e.mu.Lock()
		e.partition, e.cuts, e.paused = map[link]bool{}, map[link]bool{}, map[int]bool{}
		e.mu.Unlock()
		e.net.Heal()
	})
	var errs []error
	for range startAttempts {
		err := e.startAll()
		if err == nil {
			e.Leader()
			return e
		}
		errs = append(errs, err)
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	tb.Fatalf("hutchtest: start ensemble: %v", errors.Join(errs...))
	return nil
}

// startAll picks every member a Raft port and starts them all; on failure
// it stops those it started.
func (e *Ensemble) startAll() error {
	e.peers = make([]string, len(e.members))
	peers := make(map[uint64]string, len(e.members))
	for i := range e.members {
		e.peers[i] = "127.0.0.1:" + strconv.Itoa(realzk.FreePort(e.tb))
		peers[uint64(i+1)] = e.peers[i]
	}
	for i, m := range e.members {
		r := m.cfg.Raft
		r.RaftAddr, r.Peers, r.Dial = e.peers[i], peers, e.net.Dialer(e.peers[i])
	}
	for i, m := range e.members {
		if err := m.start(false); err != nil {
			for _, started := range e.members[:i] {
				started.stop()
			}
			return fmt.Errorf("%s: %w", m.name, err)
		}
	}
	return nil
}

// Member is member i, for what the ensemble does not wrap: its sessions,
// watches, tree and events, a Dialer to it alone.
func (e *Ensemble) Member(i int) *Server {
	e.tb.Helper()
	if i < 0 || i >= len(e.members) {
		e.tb.Fatalf("hutchtest: no member %d in an ensemble of %d", i, len(e.members))
	}
	return e.members[i]
}

// Size is the number of members.
func (e *Ensemble) Size() int { return len(e.members) }

// Leader returns the member that leads, waiting for an election if need
// be; it fails the test if none leads within the wait timeout (at least
// 30 s: an election on a loaded machine can take a few).
func (e *Ensemble) Leader() int {
	e.tb.Helper()
	deadline := time.Now().Add(max(e.opts.waitTimeout, 30*time.Second))
	for {
		if i, ok := e.leaderNow(); ok {
			return i
		}
		if time.Now().After(deadline) {
			e.tb.Fatalf("hutchtest: no leader after %v", max(e.opts.waitTimeout, 30*time.Second))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leaderNow is the member that says it leads and is not paused.
func (e *Ensemble) leaderNow() (int, bool) {
	e.mu.Lock()
	paused := maps(e.paused)
	e.mu.Unlock()
	for i, m := range e.members {
		if srv := m.cur.Load(); srv != nil && !paused[i] && srv.Mode() == "leader" {
			return i, true
		}
	}
	return -1, false
}

func maps(m map[int]bool) map[int]bool {
	out := make(map[int]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Kill stops member i at once, as a crash would: its clients lose their
// connection, its sessions live on in the others (and expire there if
// their clients do not reconnect in time).
func (e *Ensemble) Kill(i int) {
	e.tb.Helper()
	m := e.Member(i)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stop()
}

// Restart stops member i (if running) and starts it again from its log,
// on the same addresses; it catches up with the others by itself.
func (e *Ensemble) Restart(i int) { e.Member(i).Restart() }

// Pause makes member i silent, as if its process were stopped: its
// clients get no answers (their connections stay open) and its peers
// hear nothing, its session expiry waits. Unlike a real stop its Raft
// timers run on, so when it resumes it behaves as one coming back from a
// silent partition.
func (e *Ensemble) Pause(i int) {
	e.tb.Helper()
	m := e.Member(i)
	e.mu.Lock()
	e.paused[i] = true
	e.mu.Unlock()
	if srv := m.cur.Load(); srv != nil {
		srv.Pause()
	}
	e.apply()
}

// Resume undoes Pause.
func (e *Ensemble) Resume(i int) {
	e.tb.Helper()
	m := e.Member(i)
	e.mu.Lock()
	delete(e.paused, i)
	e.mu.Unlock()
	e.apply()
	if srv := m.cur.Load(); srv != nil {
		srv.Resume()
	}
}

// Partition splits the members into groups that cannot reach each other,
// silently, as a real partition does: bytes sent across it wait, unread,
// until Heal, and new connections across it time out. Members named in
// no group form one more group together, so Partition([]int{0}) cuts
// member 0 off from the rest. It replaces any earlier partition.
func (e *Ensemble) Partition(groups ...[]int) {
	e.tb.Helper()
	group := make(map[int]int)
	for g, members := range groups {
		for _, i := range members {
			e.Member(i)
			group[i] = g + 1
		}
	}
	cut := map[link]bool{}
	for a := range e.members {
		for b := range e.members {
			if a != b && group[a] != group[b] {
				cut[link{a, b}] = true
			}
		}
	}
	e.mu.Lock()
	e.partition = cut
	e.mu.Unlock()
	e.apply()
}

// CutOneWay stops member from from reaching member to: connections from
// dials to to hang and new ones time out, while to's connections to from
// work on, so from still hears to. A firewall that drops one direction's
// new connections, or a peer whose accept queue is full, looks like this.
func (e *Ensemble) CutOneWay(from, to int) {
	e.tb.Helper()
	e.Member(from)
	e.Member(to)
	e.mu.Lock()
	e.cuts[link{from, to}] = true
	e.mu.Unlock()
	e.apply()
}

// Heal undoes every Partition and CutOneWay; paused members stay paused.
func (e *Ensemble) Heal() {
	e.mu.Lock()
	e.partition, e.cuts = map[link]bool{}, map[link]bool{}
	e.mu.Unlock()
	e.apply()
}

// apply tells the network which links are down now: those of the
// partition, the one-way cuts and the paused members.
func (e *Ensemble) apply() {
	e.mu.Lock()
	defer e.mu.Unlock()
	want := map[link]bool{}
	for l := range e.partition {
		want[l] = true
	}
	for l := range e.cuts {
		want[l] = true
	}
	for i := range e.paused {
		for j := range e.members {
			if i != j {
				want[link{i, j}], want[link{j, i}] = true, true
			}
		}
	}
	for l := range want {
		if !e.dropped[l] {
			e.net.DropOneWay(e.peers[l.from], e.peers[l.to])
		}
	}
	for l := range e.dropped {
		if !want[l] {
			e.net.Undrop(e.peers[l.from], e.peers[l.to])
		}
	}
	e.dropped = want
}

// Addrs are the members' client addresses (see Server.Addr).
func (e *Ensemble) Addrs() []string {
	out := make([]string, len(e.members))
	for i, m := range e.members {
		out[i] = m.Addr()
	}
	return out
}

// ConnectString names every member, as a client's connection string.
func (e *Ensemble) ConnectString() string { return strings.Join(e.Addrs(), ",") }

// Dialer connects, in memory, to the member whose address it is given
// (Addrs); go-zookeeper given ConnectString and this dialer moves between
// members as it would between servers.
func (e *Ensemble) Dialer() func(network, address string, timeout time.Duration) (net.Conn, error) {
	return func(_, address string, _ time.Duration) (net.Conn, error) {
		for _, m := range e.members {
			if m.Addr() == address {
				return m.dial(address)
			}
		}
		return nil, refused(address)
	}
}

// Connect opens a go-zookeeper session to the ensemble (ConnectString,
// Dialer), as Server.Connect.
func (e *Ensemble) Connect(timeout time.Duration, opts ...func(*zk.Conn)) (*zk.Conn, <-chan zk.Event) {
	e.tb.Helper()
	return connect(e.tb, e.Addrs(), timeout, e.Dialer(), max(e.opts.waitTimeout, 30*time.Second), opts)
}

// ExpireSession expires session id through the leader, which owns
// expiry, as its timeout would (see Server.ExpireSession); the close is
// replicated like any write. It waits for a leader if there is none yet.
func (e *Ensemble) ExpireSession(id int64) {
	e.tb.Helper()
	deadline := time.Now().Add(max(e.opts.waitTimeout, 30*time.Second))
	for {
		err := e.Member(e.Leader()).srv().ExpireSession(id)
		if err == nil {
			return
		}
		if !errors.Is(err, server.ErrNotLeader) || time.Now().After(deadline) {
			e.tb.Fatalf("hutchtest: expire session %#x: %v", id, err)
		}
		time.Sleep(10 * time.Millisecond) // leadership changing hands
	}
}

// DropConnection closes the connection that carries session id, on
// whichever member holds it (see Server.DropConnection).
func (e *Ensemble) DropConnection(id int64) {
	e.tb.Helper()
	for _, m := range e.members {
		if srv := m.cur.Load(); srv != nil && srv.DropConnection(id) == nil {
			return
		}
	}
	e.tb.Fatalf("hutchtest: no member holds a connection of session %#x", id)
}

// DropAll closes every client connection of every member and returns how
// many it closed.
func (e *Ensemble) DropAll() int {
	n := 0
	for _, m := range e.members {
		if srv := m.cur.Load(); srv != nil {
			n += srv.DropAll()
		}
	}
	return n
}

// Advance moves every member's fake clock (FakeClock) forward by d, the
// leader's last, and returns once the leader applied the expiries and
// deletions that follow (see Server.Advance).
func (e *Ensemble) Advance(d time.Duration) {
	e.tb.Helper()
	if !e.opts.fakeClock {
		e.tb.Fatalf("hutchtest: Advance needs the FakeClock option")
	}
	lead, _ := e.leaderNow()
	for i, m := range e.members {
		if i == lead {
			continue
		}
		if srv := m.cur.Load(); srv != nil {
			if err := srv.AdvanceClock(d); err != nil {
				e.tb.Fatalf("hutchtest: %s: advance: %v", m.name, err)
			} else {
				continue
			}
		}
		m.clock.Advance(d) // a stopped member's clock moves too
	}
	if lead >= 0 {
		e.members[lead].Advance(d)
	}
}
