package server

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hutchzk/hutch/clock"
	"github.com/hutchzk/hutch/internal/diskfault"
	"github.com/hutchzk/hutch/internal/faultnet"
	"github.com/hutchzk/hutch/internal/nemesis"
	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/raftstore"
)

var (
	inprocFaults = flag.Int("nemesis.faults", 8, "faults TestClusterNemesis injects (100 or more for a long run)")
	inprocSeed   = flag.Uint64("nemesis.seed", 0, "fault schedule seed for TestClusterNemesis (0: from the clock, logged)")
	inprocKinds  = flag.String("nemesis.kinds", "", "comma-separated fault kinds TestClusterNemesis injects (default: all it supports)")
)

// inprocCluster is three hutch nodes in this process, each with its own
// data directory, clock and faultnet dialer, driven by the nemesis. It can
// do what a cluster of processes cannot, shift one node's clock, and
// cannot freeze a node (Pause is unsupported): the process nemesis in
// package ensemble covers that.
type inprocCluster struct {
	tb       testing.TB
	network  *faultnet.Network
	expiries *expiryRecorder

	mu    sync.Mutex // guards nodes' servers and rng
	nodes []*inprocNode
	rng   *rand.Rand // where DamageLog damages
	// Disks hold the nodes' data directories, by index, when the test
	// can mount them (diskfault: ext4 on a loop device), for the disk
	// faults.
	nemesis.Disks
}

type inprocNode struct {
	cfg   Config // fixed addresses and data directory, reused on restart
	clock *clock.Offset
	srv   *Server // nil while killed
}

// startInprocCluster starts three nodes; with disks, each keeps its data
// on a disk of its own that the disk faults can fill or fail.
func startInprocCluster(tb testing.TB, tick time.Duration, disks bool) *inprocCluster {
	tb.Helper()
	c := &inprocCluster{tb: tb, network: faultnet.New(), expiries: &expiryRecorder{}, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 26))}
	const n = 3
	peers := make(map[uint64]string, n)
	for id := uint64(1); id <= n; id++ {
		peers[id] = fmt.Sprintf("127.0.0.1:%d", realzk.FreePort(tb))
	}
	base := tb.TempDir()
	for i := range n {
		id := uint64(i + 1)
		off := clock.NewOffset(clock.System, 0)
		dataDir := filepath.Join(base, fmt.Sprint(id))
		if disks {
			d := diskfault.FailingSync(tb, nemesisDiskBack, nemesisDiskSize)
			c.Disks = append(c.Disks, d)
			dataDir = filepath.Join(d.Dir, "data")
		}
		c.nodes = append(c.nodes, &inprocNode{clock: off, cfg: Config{
			ListenAddr:          fmt.Sprintf("127.0.0.1:%d", realzk.FreePort(tb)),
			TickTime:            tick,
			MaxClientConnsPerIP: -1,
			Clock:               off,
			Logger:              slog.New(c.expiries.handler(i, testLogger().With("member", i+1).Handler())),
			Raft: &raftstore.Config{NodeID: id, RaftAddr: peers[id], Peers: peers,
				DataDir: dataDir, Secret: []byte("in-process nemesis secret"),
				Dial: c.network.Dialer(peers[id])},
		}})
	}
	for i := range c.nodes {
		if err := c.Restart(i); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Cleanup(func() {
		for i := range c.nodes {
			_ = c.Kill(i)
		}
	})
	waitFor(tb, 20*time.Second, "a leader", func() bool { return c.Leader() >= 0 })
	return c
}

func (c *inprocCluster) server(i int) *Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i].srv
}

func (c *inprocCluster) Size() int { return len(c.nodes) }

func (c *inprocCluster) ClientAddrs() []string {
	out := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		out[i] = nd.cfg.ListenAddr
	}
	return out
}

func (c *inprocCluster) Leader() int {
	leader := -1
	for i := range c.nodes {
		if s := c.server(i); s != nil && s.State().Leads() {
			if leader >= 0 {
				return -1
			}
			leader = i
		}
	}
	return leader
}

// Kill closes the node without closing its sessions: to the others it is
// a crash.
func (c *inprocCluster) Kill(i int) error {
	c.mu.Lock()
	s := c.nodes[i].srv
	c.nodes[i].srv = nil
	c.mu.Unlock()
	if s != nil {
		return s.Close()
	}
	return nil
}

// Restart starts the node again from its data directory, on the same
// addresses.
func (c *inprocCluster) Restart(i int) error {
	nd := c.nodes[i]
	cfg := nd.cfg
	rc := *cfg.Raft
	cfg.Raft = &rc
	s := New(cfg)
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		// The old listeners may take a moment to let go of their ports.
		if err = s.Start(); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
		s = New(cfg)
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("restart node %d: %w", i+1, err)
	}
	c.mu.Lock()
	nd.srv = s
	c.mu.Unlock()
	return nil
}

func (c *inprocCluster) Pause(int) error  { return nemesis.ErrUnsupported }
func (c *inprocCluster) Resume(int) error { return nemesis.ErrUnsupported }

// Isolate silently drops every link between node i and the others.
func (c *inprocCluster) Isolate(i int) error {
	var others []string
	for j, nd := range c.nodes {
		if j != i {
			others = append(others, nd.cfg.Raft.RaftAddr)
		}
	}
	c.network.Drop(c.nodes[i].cfg.Raft.RaftAddr, others...)
	return nil
}

func (c *inprocCluster) Heal() error {
	c.network.Heal()
	return nil
}

func (c *inprocCluster) Skew(i int, offset time.Duration) error {
	c.nodes[i].clock.Set(offset)
	return nil
}

// CutOneWay stops node from's dials to node to at the network.
func (c *inprocCluster) CutOneWay(from, to int) error {
	c.network.DropOneWay(c.nodes[from].cfg.Raft.RaftAddr, c.nodes[to].cfg.Raft.RaftAddr)
	return nil
}

// Flood floods node i's peer port from the address the nodes use.
func (c *inprocCluster) Flood(i int) (func() string, error) {
	f := faultnet.StartFlood(faultnet.FloodConfig{Addr: c.nodes[i].cfg.Raft.RaftAddr, FromIP: "127.0.0.1",
		Total: 10_000, Hold: 1000, GarbageEvery: 10, Pace: 500 * time.Millisecond, For: 2 * time.Minute})
	return func() string { return fmt.Sprintf("%+v", f.Stop()) }, nil
}

// Expiries returns what the nodes logged expiring.
func (c *inprocCluster) Expiries() ([]nemesis.ServerExpiry, error) { return c.expiries.list(), nil }

func (c *inprocCluster) Digests() ([]string, error) {
	out := make([]string, len(c.nodes))
	for i := range c.nodes {
		s := c.server(i)
		if s == nil {
			return nil, fmt.Errorf("node %d is down", i+1)
		}
		d, z := s.Digest()
		out[i] = fmt.Sprintf("%016x@%d", d, z)
		if err := s.HaltError(); err != nil {
			out[i] += fmt.Sprintf(" (stopped itself: %v)", err)
		}
	}
	return out, nil
}

// The in-process nemesis's disks: an ext4 filesystem of nemesisDiskSize
// over a tmpfs of nemesisDiskBack, so filling the filesystem gives
// ENOSPC and filling the tmpfs failing fsyncs.
const (
	nemesisDiskSize = 128 << 20
	nemesisDiskBack = 160 << 20
)

// Halted reports whether node i stopped itself.
func (c *inprocCluster) Halted(i int) bool {
	s := c.server(i)
	return s != nil && s.HaltError() != nil
}

// DamageLog changes node i's log, which must be down.
func (c *inprocCluster) DamageLog(i int, d nemesis.Damage) (string, error) {
	if c.server(i) != nil {
		return "", fmt.Errorf("node %d is running", i+1)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return nemesis.DamageLog(c.nodes[i].cfg.Raft.DataDir, d, c.rng)
}

// Recover stops node i, frees its disk or puts an empty one in its place
// (nemesis.Disks.Restore), and starts it.
func (c *inprocCluster) Recover(i int, wipe bool) error {
	if err := c.Kill(i); err != nil {
		c.tb.Logf("stopping node %d: %v", i+1, err)
	}
	if err := c.Disks.Restore(i, wipe, c.Leader); err != nil {
		return err
	}
	return c.Restart(i)
}

// TestClusterNemesis runs the nemesis against three in-process nodes:
// crash and restart from the data directory, silent partitions, leader
// kills during session churn, and clock skew (one node's clock an hour
// off, ahead or behind, for a while), under the same workloads and checks
// as the process nemesis.
func TestClusterNemesis(t *testing.T) {
	kinds, err := nemesis.ParseKinds(*inprocKinds)
	if err != nil {
		t.Fatal(err)
	}
	c := startInprocCluster(t, 500*time.Millisecond, diskfault.CanMount(t))
	nemesis.Check(t, c, nemesis.Config{
		Seed:           *inprocSeed,
		Faults:         *inprocFaults,
		Kinds:          kinds,
		SessionTimeout: 4 * time.Second,
		PartitionFor:   3 * time.Second,
		SkewBy:         time.Hour,
		SkewFor:        3 * time.Second,
	})
}

// TestClusterNemesisDisk runs the nemesis's disk faults against three
// in-process nodes, each on a disk of its own: a follower's, the leader's
// and every member's filesystem full, a follower's fsyncs failing, a
// byte of a follower's log changed and its tail torn, under the usual
// workloads and checks, reads without sync among them.
func TestClusterNemesisDisk(t *testing.T) {
	if !diskfault.CanMount(t) {
		t.Skip("the disk faults need root to mount disks")
	}
	c := startInprocCluster(t, 500*time.Millisecond, true)
	nemesis.Check(t, c, nemesis.Config{
		Seed:           *inprocSeed,
		Faults:         max(*inprocDiskFaults, 1),
		Kinds:          nemesis.DiskKinds,
		SessionTimeout: 4 * time.Second,
	})
}

var inprocDiskFaults = flag.Int("nemesis.diskfaults", len(nemesis.DiskKinds), "faults TestClusterNemesisDisk injects, disk faults only")

// expiryRecorder notes the sessions the nodes log expiring, as the
// nemesis's server-side record of expiries.
type expiryRecorder struct {
	mu   sync.Mutex // guards seen
	seen []nemesis.ServerExpiry
}

func (r *expiryRecorder) handler(node int, next slog.Handler) slog.Handler {
	return &expiryHandler{Handler: next, rec: r, node: node}
}

func (r *expiryRecorder) list() []nemesis.ServerExpiry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]nemesis.ServerExpiry(nil), r.seen...)
}

type expiryHandler struct {
	slog.Handler
	rec  *expiryRecorder
	node int
}

// Enabled takes every Info record, whether or not the wrapped handler
// wants it: the expiries are logged at Info.
func (h *expiryHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.Handler.Enabled(ctx, l)
}

func (h *expiryHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == sessionExpiredMsg {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "session" {
				h.rec.mu.Lock()
				h.rec.seen = append(h.rec.seen, nemesis.ServerExpiry{Node: h.node, Session: a.Value.Int64(), At: r.Time})
				h.rec.mu.Unlock()
				return false
			}
			return true
		})
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h *expiryHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &expiryHandler{Handler: h.Handler.WithAttrs(as), rec: h.rec, node: h.node}
}

func (h *expiryHandler) WithGroup(name string) slog.Handler {
	return &expiryHandler{Handler: h.Handler.WithGroup(name), rec: h.rec, node: h.node}
}
