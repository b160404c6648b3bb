package ensemble

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/nemesis"
	"github.com/hutchzk/hutch/internal/realzk"
)

func TestMain(m *testing.M) { realzk.Main(m) }

const (
	// readyTimeout bounds how long a started process may take to answer imok.
	readyTimeout = 30 * time.Second
	// stopTimeout is how long a process gets after SIGTERM at cleanup.
	stopTimeout = 5 * time.Second
	// sessionTimeout is what clients ask for: long enough to outlive a
	// leader election, short enough that a lost session ends within a run.
	sessionTimeout = 15 * time.Second
	// opTimeout bounds one client call, including reconnecting for it.
	opTimeout = 20 * time.Second
)

var openACL = zk.WorldACL(zk.PermAll)

// node is one member of the ensemble. Its ports and data directory stay
// fixed across restarts; each incarnation is a new process.
type node struct {
	id          int
	clientAddr  string
	raftAddr    string
	adminAddr   string // admin HTTP: /commands/digest
	metricsAddr string // Prometheus /metrics
	dataDir     string

	mu          sync.Mutex // guards the fields below
	incarnation int
	proc        *process
}

// process is one incarnation of a node.
type process struct {
	pid     int
	logFile string
	exited  chan struct{} // closed when Wait returns
}

// ensemble is a set of hutch processes sharing one --peers list.
type ensemble struct {
	tb         testing.TB
	bin        string
	base       string
	peers      string
	secretFile string
	extraArgs  []string // flags every node gets besides the harness's own
	nodes      []*node
}

// startEnsemble runs n hutch processes forming one Raft group, each with
// its own data directory and the ensemble's shared peer secret, and
// returns once a write through node 1 succeeds (a leader is elected).
func startEnsemble(tb testing.TB, n int) *ensemble {
	tb.Helper()
	e := newEnsemble(tb)
	var peers []string
	for i := 1; i <= n; i++ {
		nd := &node{
			id:          i,
			clientAddr:  "127.0.0.1:" + strconv.Itoa(realzk.FreePort(tb)),
			raftAddr:    "127.0.0.1:" + strconv.Itoa(realzk.FreePort(tb)),
			adminAddr:   "127.0.0.1:" + strconv.Itoa(realzk.FreePort(tb)),
			metricsAddr: "127.0.0.1:" + strconv.Itoa(realzk.FreePort(tb)),
		}
		nd.dataDir = filepath.Join(e.base, fmt.Sprintf("data-%d", i))
		e.nodes = append(e.nodes, nd)
		peers = append(peers, fmt.Sprintf("%d=%s", i, nd.raftAddr))
	}
	e.peers = strings.Join(peers, ",")
	tb.Cleanup(e.stopAll)
	e.startNodes(e.nodes...)
	c := e.dial(e.nodes[0].clientAddr)
	e.waitWritable(c, "/ready", 30*time.Second)
	return e
}

// newEnsemble prepares an ensemble with no nodes yet: the hutch binary, a
// base directory and the peer secret every member reads.
func newEnsemble(tb testing.TB) *ensemble {
	tb.Helper()
	e := &ensemble{tb: tb, bin: realzk.BuildHutch(tb), base: tb.TempDir()}
	if keep := os.Getenv("HUTCH_KEEP_LOGS"); keep != "" {
		// Node logs and data outlive the test there, for a post-mortem.
		e.base = filepath.Join(keep, fmt.Sprintf("%s-%d", strings.ReplaceAll(tb.Name(), "/", "_"), time.Now().UnixNano()))
		if err := os.MkdirAll(e.base, 0o755); err != nil {
			tb.Fatal(err)
		}
		tb.Logf("keeping node logs and data in %s", e.base)
	}
	e.secretFile = filepath.Join(e.base, "peer-secret")
	if err := os.WriteFile(e.secretFile, []byte(rand.Text()), 0o600); err != nil {
		tb.Fatal(err)
	}
	return e
}

// startNodes launches the given nodes concurrently and waits for each
// to answer imok.
func (e *ensemble) startNodes(nodes ...*node) {
	e.tb.Helper()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, nd := range nodes {
		wg.Go(func() { errs[i] = e.start(nd) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		e.tb.Fatal(err)
	}
}

// start launches nd's process and waits for it to answer imok. A node's
// ports are fixed (its peers know them), and while it was down another
// socket may have taken one, such as a peer flood's connection leaving
// from the same loopback address: that is the harness's problem, not the
// node's, so a start refused for a port in use is tried again, for up to
// portWait, until the port comes free.
func (e *ensemble) start(nd *node) error {
	deadline := time.Now().Add(portWait)
	for {
		err := e.startOnce(nd)
		if err == nil || !strings.Contains(err.Error(), "address already in use") || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond) // waiting on another process's socket
	}
}

// portWait bounds how long start waits for a node's port to come free.
const portWait = 20 * time.Second

func (e *ensemble) startOnce(nd *node) error {
	nd.mu.Lock()
	nd.incarnation++
	logFile := filepath.Join(e.base, fmt.Sprintf("node%d.%d.log", nd.id, nd.incarnation))
	nd.mu.Unlock()
	args := []string{
		"--listen", nd.clientAddr,
		"--id", strconv.Itoa(nd.id),
		"--raft-listen", nd.raftAddr,
		"--peers", e.peers,
		"--max-client-conns", "0",
		"--admin-listen", nd.adminAddr,
		"--metrics-listen", nd.metricsAddr,
		"--data-dir", nd.dataDir,
		"--peer-secret-file", e.secretFile,
	}
	args = append(args, e.extraArgs...)
	out, err := os.Create(logFile)
	if err != nil {
		return err
	}
	defer out.Close() // the child has its own copy
	cmd := exec.Command(e.bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
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
	deadline := time.Now().Add(readyTimeout)
	for {
		reply, err := realzk.FourLetterWord(nd.clientAddr, "ruok", time.Second)
		if err == nil && reply == "imok" {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("node %d exited before answering imok; log:\n%s", nd.id, tail(logFile))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d not imok after %v (last: %q, %v); log:\n%s", nd.id, readyTimeout, reply, err, tail(logFile))
		}
	}
}

// kill sends SIGKILL to the node's process by its pid and waits for it to
// be gone.
func (e *ensemble) kill(nd *node) {
	e.tb.Helper()
	p := nd.current()
	if p == nil {
		return
	}
	_ = syscall.Kill(p.pid, syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		e.tb.Fatalf("node %d (pid %d) survived SIGKILL for %v", nd.id, p.pid, stopTimeout)
	}
}

// stopAll ends every live process by its pid: SIGTERM, then SIGKILL.
func (e *ensemble) stopAll() {
	for _, nd := range e.nodes {
		p := nd.current()
		if p == nil {
			continue
		}
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(stopTimeout):
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
			<-p.exited
		}
		if e.tb.Failed() {
			e.tb.Logf("node %d log tail (%s):\n%s", nd.id, p.logFile, tail(p.logFile))
		}
	}
}

// leaderTime matches the line hutch logs on winning an election.
var leaderTime = regexp.MustCompile(`(?m)^time=(\S+) .*msg="raft leadership gained"`)

// likelyLeader returns the live node that most recently logged winning an
// election, or nil. hutch logs no loss of leadership, so this is a guess
// that the caller checks against nothing; it only makes a kill more
// likely to hit the leader.
func (e *ensemble) likelyLeader() *node {
	var best *node
	var bestAt time.Time
	for _, nd := range e.nodes {
		for _, m := range leaderTime.FindAllSubmatch(nd.liveLog(), -1) {
			at, err := time.Parse(time.RFC3339Nano, string(m[1]))
			if err == nil && at.After(bestAt) {
				best, bestAt = nd, at
			}
		}
	}
	return best
}

// elections counts the elections won, by their log lines, across the live
// nodes' current processes.
func (e *ensemble) elections() int {
	n := 0
	for _, nd := range e.nodes {
		n += e.electionsOf(nd)
	}
	return n
}

// electionsOf counts the elections the node's current process has won, or
// 0 if it is not running.
func (e *ensemble) electionsOf(nd *node) int {
	return len(leaderTime.FindAll(nd.liveLog(), -1))
}

// current returns the node's latest process, or nil if it never started.
func (nd *node) current() *process {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.proc
}

// liveLog returns the log of the node's running process, or nil when it
// is not running or the log cannot be read.
func (nd *node) liveLog() []byte {
	p := nd.current()
	if p == nil {
		return nil
	}
	select {
	case <-p.exited:
		return nil
	default:
	}
	b, _ := os.ReadFile(p.logFile)
	return b
}

// digest returns the node's tree digest and last zxid from its admin
// HTTP digest command, as "digest@zxid".
func (e *ensemble) digest(nd *node) (string, error) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + nd.adminAddr + "/commands/digest")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		Digest   string `json:"digest"`
		LastZxid int64  `json:"last_zxid"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s@%d", out.Digest, out.LastZxid), nil
}

// waitDigestsEqual waits until every node reports the same digest and
// returns it.
func (e *ensemble) waitDigestsEqual(limit time.Duration) string {
	e.tb.Helper()
	deadline := time.Now().Add(limit)
	var seen []string
	for {
		seen = seen[:0]
		answered := true
		for _, nd := range e.nodes {
			d, err := e.digest(nd)
			if err != nil {
				d, answered = err.Error(), false
			}
			seen = append(seen, d)
		}
		if answered && allEqual(seen) {
			return seen[0]
		}
		if time.Now().After(deadline) {
			e.tb.Fatalf("digests still differ after %v: %v", limit, seen)
		}
		time.Sleep(20 * time.Millisecond) // polling other processes
	}
}

func allEqual(xs []string) bool {
	for _, x := range xs[1:] {
		if x != xs[0] {
			return false
		}
	}
	return true
}

func (e *ensemble) addrs() []string {
	var out []string
	for _, nd := range e.nodes {
		out = append(out, nd.clientAddr)
	}
	return out
}

// dial connects a client to the given servers and waits for its session.
func (e *ensemble) dial(servers ...string) *zk.Conn {
	e.tb.Helper()
	return dialSession(e.tb, sessionTimeout, servers...)
}

// dialSession connects a client to servers with the given session timeout
// and waits for its session; the client closes when tb ends.
func dialSession(tb testing.TB, timeout time.Duration, servers ...string) *zk.Conn {
	tb.Helper()
	c, events, err := zk.Connect(servers, timeout, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		tb.Fatalf("connect %v: %v", servers, err)
	}
	tb.Cleanup(c.Close)
	deadline := time.After(opTimeout)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				go func() {
					for range events {
					}
				}()
				return c
			}
		case <-deadline:
			tb.Fatalf("connect %v: no session after %v", servers, opTimeout)
		}
	}
}

// waitWritable retries a versionless set (creating p first) until one
// succeeds, and returns how long that took.
func (e *ensemble) waitWritable(c *zk.Conn, p string, limit time.Duration) time.Duration {
	e.tb.Helper()
	start := time.Now()
	deadline := start.Add(limit)
	var last error
	for attempt := 0; attempt < 10000 && time.Now().Before(deadline); attempt++ {
		last = within(time.Until(deadline), func() error {
			_, err := c.Create(p, nil, 0, openACL)
			if errors.Is(err, zk.ErrNodeExists) {
				_, err = c.Set(p, []byte(strconv.Itoa(attempt)), -1)
			}
			return err
		})
		if last == nil {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond) // back off between failed attempts
	}
	e.tb.Fatalf("no write to %s succeeded within %v: %v", p, limit, last)
	return 0
}

// errTimeout is within's error when f did not return in time.
var errTimeout = nemesis.ErrGaveUp

// within runs f and returns its error, or errTimeout after d. go-zookeeper
// calls have no deadline of their own: one queued while no server
// answers waits for the session to end.
func within(d time.Duration, f func() error) error {
	return nemesis.Call(context.Background(), d, f)
}

func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	const n = 4 << 10
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
