package ensemble

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/diskfault"
	"github.com/hutchzk/hutch/internal/faultnet"
	"github.com/hutchzk/hutch/internal/nemesis"
	"github.com/hutchzk/hutch/internal/realzk"
)

// procCluster is a nemesis.Cluster of three hutch processes on loopback.
// Node i (1-based) listens for Raft on 127.0.0.i and makes its peer
// connections from there, so a faultnet.Switch in front of every node
// can tell who dialled and partition nodes silently; --peers names the
// switch's fronts, --raft-listen the real listeners.
type procCluster struct {
	*ensemble // the nodes; start, stopAll and digest are reused
	sw        *faultnet.Switch

	mu     sync.Mutex // guards paused, floodRSS and rng
	paused map[int]bool
	// floodRSS is the flooded node's resident memory (KiB) before and at
	// most during each flood.
	floodRSS [][2]int64
	// Disks hold the nodes' data directories, by index, when the test
	// can mount them (diskfault), for the disk faults; rng picks where a
	// log is damaged.
	nemesis.Disks
	rng *rand.Rand
}

// startProcCluster starts three hutch processes with data directories and
// returns once one of them leads. With disks, each keeps its data on a
// disk of its own that the disk faults can fill or fail.
func startProcCluster(tb testing.TB, disks bool) *procCluster {
	tb.Helper()
	e := newEnsemble(tb)
	// The admin token lets the nemesis change the membership (SetRole).
	token := filepath.Join(e.base, "admin-token")
	if err := os.WriteFile(token, []byte(procAdminToken), 0o600); err != nil {
		tb.Fatal(err)
	}
	e.extraArgs = []string{"--tick-time", "500ms", "--election-timeout", "1s", "--admin-token-file", token}
	c := &procCluster{ensemble: e, paused: make(map[int]bool), rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 26))}
	var routes []faultnet.Route
	for i := 1; i <= 3; i++ {
		ip := fmt.Sprintf("127.0.0.%d", i)
		dataDir := filepath.Join(e.base, fmt.Sprintf("data-%d", i))
		if disks {
			d := diskfault.FailingSync(tb, procDiskBack, procDiskSize)
			c.Disks = append(c.Disks, d)
			dataDir = filepath.Join(d.Dir, "data")
		}
		nd := &node{
			id:         i,
			clientAddr: "127.0.0.1:" + strconv.Itoa(realzk.FreePort(tb)),
			raftAddr:   ip + ":" + strconv.Itoa(realzk.FreePortOn(tb, ip)),
			adminAddr:  "127.0.0.1:" + strconv.Itoa(realzk.FreePort(tb)),
			dataDir:    dataDir,
		}
		e.nodes = append(e.nodes, nd)
		routes = append(routes, faultnet.Route{Node: strconv.Itoa(i), IP: ip, Target: nd.raftAddr, FrontPort: realzk.FreePortOn(tb, ip)})
	}
	c.sw = faultnet.StartSwitch(tb, routes)
	var peers []string
	for i := range e.nodes {
		peers = append(peers, fmt.Sprintf("%d=%s", i+1, c.sw.Front(strconv.Itoa(i+1))))
	}
	e.peers = strings.Join(peers, ",")
	// Cleanups run last-registered first: continue any stopped process,
	// then stop them all by pid.
	tb.Cleanup(e.stopAll)
	tb.Cleanup(c.continueAll)
	e.startNodes(e.nodes...)
	deadline := time.Now().Add(30 * time.Second)
	for c.Leader() < 0 {
		if time.Now().After(deadline) {
			tb.Fatal("no node leads 30s after start")
		}
		time.Sleep(50 * time.Millisecond) // polling other processes
	}
	return c
}

// running returns node i's live process, or an error.
func (c *procCluster) running(i int) (*node, *process, error) {
	if i < 0 || i >= len(c.nodes) {
		return nil, nil, fmt.Errorf("no node %d", i)
	}
	nd := c.nodes[i]
	p := nd.current()
	if p == nil {
		return nd, nil, fmt.Errorf("node %d never started", nd.id)
	}
	select {
	case <-p.exited:
		// Not killed by us, or Restart would have replaced it: it died.
		return nd, nil, fmt.Errorf("node %d (pid %d) is not running; log:\n%s", nd.id, p.pid, tail(p.logFile))
	default:
	}
	return nd, p, nil
}

// continueAll sends SIGCONT to every stopped process, so SIGTERM at
// cleanup reaches it.
func (c *procCluster) continueAll() {
	for i := range c.nodes {
		_ = c.Resume(i)
	}
}

// Size is the number of nodes.
func (c *procCluster) Size() int { return len(c.nodes) }

// ClientAddrs returns each node's client address.
func (c *procCluster) ClientAddrs() []string { return c.addrs() }

// Leader returns the index of the one node whose srvr says it leads, or -1.
func (c *procCluster) Leader() int {
	modes := make([]string, len(c.nodes))
	var wg sync.WaitGroup
	for i, nd := range c.nodes {
		wg.Go(func() { modes[i] = realzk.Mode(nd.clientAddr, 500*time.Millisecond) })
	}
	wg.Wait()
	leader := -1
	for i, m := range modes {
		if m == "leader" {
			if leader >= 0 {
				return -1 // an old leader that has not noticed yet
			}
			leader = i
		}
	}
	return leader
}

// Kill sends SIGKILL to node i's process and waits for it to be gone.
func (c *procCluster) Kill(i int) error {
	nd, p, err := c.running(i)
	if err != nil {
		return err
	}
	if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill node %d (pid %d): %w", nd.id, p.pid, err)
	}
	c.mu.Lock()
	delete(c.paused, i)
	c.mu.Unlock()
	select {
	case <-p.exited:
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("node %d (pid %d) survived SIGKILL for %v", nd.id, p.pid, stopTimeout)
	}
}

// Restart starts node i again from its data directory.
func (c *procCluster) Restart(i int) error {
	if _, _, err := c.running(i); err == nil {
		return fmt.Errorf("node %d is running", i+1)
	}
	return c.start(c.nodes[i])
}

// Pause stops node i's process with SIGSTOP.
func (c *procCluster) Pause(i int) error {
	nd, p, err := c.running(i)
	if err != nil {
		return err
	}
	if err := syscall.Kill(p.pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("stop node %d (pid %d): %w", nd.id, p.pid, err)
	}
	c.mu.Lock()
	c.paused[i] = true
	c.mu.Unlock()
	return nil
}

// Resume continues node i's process if Pause stopped it.
func (c *procCluster) Resume(i int) error {
	c.mu.Lock()
	paused := c.paused[i]
	delete(c.paused, i)
	c.mu.Unlock()
	if !paused {
		return nil
	}
	nd, p, err := c.running(i)
	if err != nil {
		return err
	}
	if err := syscall.Kill(p.pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("continue node %d (pid %d): %w", nd.id, p.pid, err)
	}
	return nil
}

// Isolate pauses every link between node i and the others at the switch.
func (c *procCluster) Isolate(i int) error {
	var others []string
	for j := range c.nodes {
		if j != i {
			others = append(others, strconv.Itoa(j+1))
		}
	}
	c.sw.Drop(strconv.Itoa(i+1), others...)
	return nil
}

// Heal resumes every link.
func (c *procCluster) Heal() error {
	c.sw.Heal()
	return nil
}

// Skew is unsupported: the processes share the host's clock.
func (c *procCluster) Skew(int, time.Duration) error { return nemesis.ErrUnsupported }

// CutOneWay stops node from's new connections to node to at the switch,
// and holds those it had.
func (c *procCluster) CutOneWay(from, to int) error {
	c.sw.DropDials(strconv.Itoa(from+1), strconv.Itoa(to+1))
	return nil
}

// Flood floods node i's real peer listener from 127.0.0.1, node 1's own
// address, and samples the node's resident memory meanwhile.
func (c *procCluster) Flood(i int) (func() string, error) {
	nd, p, err := c.running(i)
	if err != nil {
		return nil, err
	}
	before := rssOf(p.pid)
	f := faultnet.StartFlood(faultnet.FloodConfig{Addr: nd.raftAddr, FromIP: "127.0.0.1", Total: 10_000, Hold: 1000, GarbageEvery: 10, Pace: 500 * time.Millisecond, For: 2 * time.Minute})
	done := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		top := before
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				peak <- top
				return
			case <-t.C:
				top = max(top, rssOf(p.pid))
			}
		}
	}()
	return func() string {
		st := f.Stop()
		close(done)
		top := <-peak
		c.mu.Lock()
		c.floodRSS = append(c.floodRSS, [2]int64{before, top})
		c.mu.Unlock()
		return fmt.Sprintf("%d connections opened (%d closed by the node); node %d resident memory %d KiB before, at most %d KiB during",
			st.Opened, st.ClosedByServer, nd.id, before, top)
	}, nil
}

// rssOf reads a process's resident set size in KiB, 0 if unknown.
func rssOf(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

// expiredLine matches the line a node logs when it expires a session.
var expiredLine = regexp.MustCompile(`(?m)^time=(\S+) level=INFO msg="session expired" session=(-?\d+)`)

// Expiries reads every session expiry from every node's logs, all its
// incarnations included.
func (c *procCluster) Expiries() ([]nemesis.ServerExpiry, error) {
	var out []nemesis.ServerExpiry
	for i, nd := range c.nodes {
		files, err := filepath.Glob(filepath.Join(c.base, fmt.Sprintf("node%d.*.log", nd.id)))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			for _, m := range expiredLine.FindAllSubmatch(b, -1) {
				at, err := time.Parse(time.RFC3339Nano, string(m[1]))
				if err != nil {
					return nil, fmt.Errorf("%s: %w", f, err)
				}
				id, err := strconv.ParseInt(string(m[2]), 10, 64)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", f, err)
				}
				out = append(out, nemesis.ServerExpiry{Node: i, Session: id, At: at})
			}
		}
	}
	return out, nil
}

// The disks: ext4 of procDiskSize over a tmpfs of procDiskBack, so
// filling the filesystem gives ENOSPC and filling the tmpfs failing
// fsyncs.
const (
	procDiskSize = 128 << 20
	procDiskBack = 160 << 20
)

// Halted reports whether node i's process exited of itself, saying it
// stopped itself (the hutch command exits when its member halts).
func (c *procCluster) Halted(i int) bool {
	nd := c.nodes[i]
	p := nd.current()
	if p == nil {
		return false
	}
	select {
	case <-p.exited:
	default:
		return false
	}
	return strings.Contains(tail(p.logFile), "stopped itself")
}

// DamageLog changes node i's log, which must be down.
func (c *procCluster) DamageLog(i int, d nemesis.Damage) (string, error) {
	if _, _, err := c.running(i); err == nil {
		return "", fmt.Errorf("node %d is running", i+1)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return nemesis.DamageLog(c.nodes[i].dataDir, d, c.rng)
}

// Recover stops node i if it still runs, frees its disk or puts an empty
// one in its place (nemesis.Disks.Restore), and starts it.
func (c *procCluster) Recover(i int, wipe bool) error {
	if _, _, err := c.running(i); err == nil {
		if err := c.Kill(i); err != nil {
			return err
		}
	}
	if err := c.Disks.Restore(i, wipe, c.Leader); err != nil {
		return err
	}
	return c.start(c.nodes[i])
}

// Digests returns each node's "digest@zxid" from its admin HTTP server.
func (c *procCluster) Digests() ([]string, error) {
	out := make([]string, len(c.nodes))
	var errs []error
	for i, nd := range c.nodes {
		d, err := c.digest(nd)
		if err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", nd.id, err))
		}
		out[i] = d
	}
	return out, errors.Join(errs...)
}
