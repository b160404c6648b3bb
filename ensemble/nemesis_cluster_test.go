package ensemble

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/faultnet"
	"github.com/hutchzk/hutch/internal/nemesis"
	"github.com/hutchzk/hutch/internal/realzk"
)

// procCluster is a nemesis.Cluster of three hutch processes on loopback.
// Node i (1-based) listens for Raft on 127.0.0.i, so that once hutch binds
// its outgoing peer connections to that IP a faultnet.Switch in front of
// every node can tell who dialled and partition nodes silently.
type procCluster struct {
	*ensemble                   // the nodes; stopAll and digest are reused
	sw         *faultnet.Switch // nil when the binary cannot advertise the switch
	secretFile string           // "" when the binary has no --peer-secret-file

	mu     sync.Mutex // guards paused
	paused map[int]bool
}

// peerSwitchFlag is the flag of the ensemble command line that brings the
// advertise/listen split (--peers names what others dial, --raft-listen
// what the node binds, outgoing connections bound to its IP). A binary
// without it advertises its own listener, so no switch can stand between
// nodes and partitions are left out.
const peerSwitchFlag = "peer-secret-file"

// binarySupports reports whether hutch --help lists flag.
func binarySupports(tb testing.TB, bin, flag string) bool {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, "--help").CombinedOutput() // --help may exit non-zero
	return strings.Contains(string(out), flag)
}

// startProcCluster starts three hutch processes with data directories and
// returns once one of them leads.
func startProcCluster(tb testing.TB) *procCluster {
	tb.Helper()
	e := &ensemble{tb: tb, bin: realzk.BuildHutch(tb), base: tb.TempDir()}
	c := &procCluster{ensemble: e, paused: make(map[int]bool)}
	var routes []faultnet.Route
	for i := 1; i <= 3; i++ {
		ip := fmt.Sprintf("127.0.0.%d", i)
		nd := &node{
			id:         i,
			clientAddr: "127.0.0.1:" + strconv.Itoa(realzk.FreePort(tb)),
			raftAddr:   ip + ":" + strconv.Itoa(realzk.FreePort(tb)),
			adminAddr:  "127.0.0.1:" + strconv.Itoa(realzk.FreePort(tb)),
			dataDir:    filepath.Join(e.base, fmt.Sprintf("data-%d", i)),
		}
		e.nodes = append(e.nodes, nd)
		routes = append(routes, faultnet.Route{Node: strconv.Itoa(i), IP: ip, Target: nd.raftAddr})
	}
	advertised := make([]string, len(e.nodes))
	for i, nd := range e.nodes {
		advertised[i] = nd.raftAddr
	}
	if binarySupports(tb, e.bin, "--"+peerSwitchFlag) {
		c.sw = faultnet.StartSwitch(tb, routes)
		for i := range e.nodes {
			advertised[i] = c.sw.Front(strconv.Itoa(i + 1))
		}
		c.secretFile = filepath.Join(e.base, "peer-secret")
		if err := os.WriteFile(c.secretFile, []byte(rand.Text()+"\n"), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	var peers []string
	for i, a := range advertised {
		peers = append(peers, fmt.Sprintf("%d=%s", i+1, a))
	}
	e.peers = strings.Join(peers, ",")
	// Cleanups run last-registered first: continue any stopped process,
	// then stop them all by pid.
	tb.Cleanup(e.stopAll)
	tb.Cleanup(c.continueAll)

	errs := make([]error, len(e.nodes))
	var wg sync.WaitGroup
	for i, nd := range e.nodes {
		wg.Go(func() { errs[i] = c.launch(nd) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		tb.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for c.Leader() < 0 {
		if time.Now().After(deadline) {
			tb.Fatal("no node leads 30s after start")
		}
		time.Sleep(50 * time.Millisecond) // polling other processes
	}
	return c
}

// hutchArgs is node nd's command line. It is written for the ensemble
// command line with the advertise/listen split: --peers gives the address
// the other nodes dial (the switch's front when partitions are on),
// --raft-listen where the node really listens, and the node binds its
// outgoing peer connections to that IP. A binary without the split gets
// the real addresses in --peers and no secret file.
func (c *procCluster) hutchArgs(nd *node) []string {
	args := []string{
		"--id", strconv.Itoa(nd.id),
		"--listen", nd.clientAddr,
		"--raft-listen", nd.raftAddr,
		"--peers", c.peers,
		"--data-dir", nd.dataDir,
		"--tick-time", "500ms",
		"--election-timeout", "1s",
		"--admin-listen", nd.adminAddr,
		"--max-client-conns", "0",
	}
	if c.secretFile != "" {
		args = append(args, "--"+peerSwitchFlag, c.secretFile)
	}
	return args
}

// launch starts a new incarnation of nd and waits until it answers imok.
func (c *procCluster) launch(nd *node) error {
	nd.mu.Lock()
	nd.incarnation++
	logFile := filepath.Join(c.base, fmt.Sprintf("node%d.%d.log", nd.id, nd.incarnation))
	nd.mu.Unlock()
	out, err := os.Create(logFile)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.bin, c.hutchArgs(nd)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	out.Close() // the child holds its own copy
	if err != nil {
		return fmt.Errorf("node %d: %w", nd.id, err)
	}
	p := &process{pid: cmd.Process.Pid, logFile: logFile, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	nd.mu.Lock()
	nd.proc = p
	nd.mu.Unlock()
	return awaitImok(nd, p)
}

// awaitImok polls ruok until the process answers imok, exits, or
// readyTimeout passes.
func awaitImok(nd *node, p *process) error {
	deadline := time.Now().Add(readyTimeout)
	for attempt := 0; ; attempt++ {
		if reply, err := realzk.FourLetterWord(nd.clientAddr, "ruok", time.Second); err == nil && reply == "imok" {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("node %d (pid %d) exited before answering imok; log:\n%s", nd.id, p.pid, tail(p.logFile))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d (pid %d) not imok after %v; log:\n%s", nd.id, p.pid, readyTimeout, tail(p.logFile))
		}
	}
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
	return c.launch(c.nodes[i])
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
	if c.sw == nil {
		return nemesis.ErrUnsupported
	}
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
	if c.sw != nil {
		c.sw.Heal()
	}
	return nil
}

// Skew is unsupported: the processes share the host's clock.
func (c *procCluster) Skew(int, time.Duration) error { return nemesis.ErrUnsupported }

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
