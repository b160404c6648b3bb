package ensemble

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/realzk"
)

// curatorFailoverSource is the Java program TestEnsembleCuratorMutexFailover
// compiles and runs.
const curatorFailoverSource = "testdata/CuratorFailover.java"

// curatorRun is one CuratorFailover process and what it has printed.
type curatorRun struct {
	pid     int
	stderr  string        // file holding the JVM's stderr (Curator's warnings)
	scanned chan struct{} // closed when stdout reaches EOF
	waited  chan error    // receives Wait's result once

	mu        sync.Mutex     // guards the fields below
	progress  []time.Time    // arrival of each "decrement" line
	states    map[string]int // connection state → changes seen
	problems  []string       // "error", "reopen" and "violation" lines
	violation bool
	summary   map[string]string
	// diagnose describes the lock's state when progress stalls.
	diagnose func() string
}

// startCurator runs CuratorFailover and reads its stdout as it comes. The
// JVM is killed by its pid when ctx ends or the test does.
func startCurator(ctx context.Context, tb testing.TB, classpath string, args ...string) *curatorRun {
	tb.Helper()
	r := &curatorRun{
		stderr:  filepath.Join(tb.TempDir(), "curator.stderr"),
		scanned: make(chan struct{}),
		waited:  make(chan error, 1),
		states:  make(map[string]int),
	}
	errFile, err := os.Create(r.stderr)
	if err != nil {
		tb.Fatal(err)
	}
	defer errFile.Close() // the child has its own copy
	jvm := []string{
		"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Djava.net.preferIPv4Stack=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		// It warns of every socket a killed or leaderless server closes.
		"-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.ClientCnxn=error",
		"-cp", classpath, "CuratorFailover",
	}
	cmd := exec.CommandContext(ctx, "java", append(jvm, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Stderr = errFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	r.pid = cmd.Process.Pid
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			r.record(sc.Text(), time.Now())
		}
		close(r.scanned)
		r.waited <- cmd.Wait() // only after the last read, as StdoutPipe requires
	}()
	tb.Cleanup(func() {
		_ = syscall.Kill(r.pid, syscall.SIGKILL) // by pid; harmless once it exited
		<-r.scanned
		if tb.Failed() {
			tb.Logf("CuratorFailover stderr tail (%s):\n%s", r.stderr, tail(r.stderr))
		}
	})
	return r
}

func (r *curatorRun) record(line string, at time.Time) {
	kind, rest, _ := strings.Cut(line, " ")
	r.mu.Lock()
	defer r.mu.Unlock()
	switch kind {
	case "decrement":
		r.progress = append(r.progress, at)
	case "reopen":
		r.problems = append(r.problems, at.Format("15:04:05.000")+" "+line)
	case "state":
		f := strings.Fields(rest) // client, state, session
		if len(f) >= 2 {
			r.states[f[1]]++
		}
		r.problems = append(r.problems, at.Format("15:04:05.000")+" "+line)
	case "violation":
		r.violation = true
		r.problems = append(r.problems, at.Format("15:04:05.000")+" "+line)
	case "error":
		r.problems = append(r.problems, at.Format("15:04:05.000")+" "+line)
	case "summary":
		r.summary = make(map[string]string)
		for _, kv := range strings.Fields(rest) {
			k, v, _ := strings.Cut(kv, "=")
			r.summary[k] = v
		}
	}
}

func (r *curatorRun) decrements() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.progress)
}

// waitDecrements waits until the JVM has reported at least n decrements,
// failing the test if it exits, reports a violation or is not there by
// deadline.
func (r *curatorRun) waitDecrements(tb testing.TB, what string, n int, deadline time.Time) {
	tb.Helper()
	for {
		r.mu.Lock()
		got, violation := len(r.progress), r.violation
		r.mu.Unlock()
		switch {
		case got >= n:
			return
		case violation:
			tb.Fatalf("%s: CuratorFailover reported a violation:\n%s", what, strings.Join(r.problemLines(), "\n"))
		case time.Now().After(deadline):
			var state string
			if r.diagnose != nil {
				state = r.diagnose()
			}
			tb.Fatalf("%s: %d decrements, wanted %d by %s; state: %s; problems:\n%s",
				what, got, n, deadline.Format("15:04:05.000"), state, strings.Join(r.problemLines(), "\n"))
		}
		select {
		case <-r.scanned:
			tb.Fatalf("%s: CuratorFailover exited after %d decrements, wanted %d; problems:\n%s",
				what, r.decrements(), n, strings.Join(r.problemLines(), "\n"))
		case <-time.After(10 * time.Millisecond): // poll an in-process counter
		}
	}
}

// pauseSince returns when the first decrement numbered from (counting from
// 0) arrived after at, and the longest gap between decrements around it.
func (r *curatorRun) pauseSince(from int, at time.Time) (first, longest time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	first = -1
	for i := max(from, 1); i < len(r.progress); i++ {
		if first < 0 && r.progress[i].After(at) {
			first = r.progress[i].Sub(at)
		}
		longest = max(longest, r.progress[i].Sub(r.progress[i-1]))
	}
	return first, longest
}

func (r *curatorRun) problemLines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.problems...)
}

// TestEnsembleCuratorMutexFailover: six Curator clients, each its own
// session with a connect string naming all three nodes, sell a stock under
// one InterProcessMutex while the leader is killed with SIGKILL and
// restarted, twice. Curator rides out both elections without losing a
// session, the mutex never has two holders, and the stock ends at exactly
// 0 after exactly as many writes as it started with.
func TestEnsembleCuratorMutexFailover(t *testing.T) {
	const (
		clients      = 6
		initialStock = 300
		perPhase     = 20 // decrements to see before a kill and after it
		phaseLimit   = 25 * time.Second
		// runLimit bounds the JVM's whole run; it stops itself (and
		// prints its summary) jvmLimit in, or is killed at runLimit.
		runLimit = 60 * time.Second
		jvmLimit = 50 * time.Second
	)
	classpath := realzk.CompileCurator(t, curatorFailoverSource)
	e := startEnsemble(t, 3)
	admin := e.dial(e.addrs()...)
	if _, err := admin.Create("/mutex", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Create("/stock", []byte(strconv.Itoa(initialStock)), 0, openACL); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	runEnd, _ := ctx.Deadline()
	by := func(d time.Duration) time.Time { // now+d, but never past the run's end
		if t := time.Now().Add(d); t.Before(runEnd) {
			return t
		}
		return runEnd
	}
	start := time.Now()
	r := startCurator(ctx, t, classpath, strings.Join(e.addrs(), ","), "/mutex", "/stock",
		strconv.Itoa(clients), strconv.Itoa(int(jvmLimit/time.Second)))
	r.diagnose = func() string {
		var b strings.Builder
		for _, nd := range e.nodes {
			mode := cmp.Or(realzk.Mode(nd.clientAddr, time.Second), "down")
			fmt.Fprintf(&b, "node %d %s; ", nd.id, mode)
		}
		err := within(5*time.Second, func() error {
			kids, _, err := admin.Children("/mutex")
			if err != nil {
				return err
			}
			slices.Sort(kids)
			for _, k := range kids {
				_, st, err := admin.Exists("/mutex/" + k)
				if err == nil && st != nil {
					fmt.Fprintf(&b, "%s owner %#x; ", k, st.EphemeralOwner)
				}
			}
			return nil
		})
		if err != nil {
			fmt.Fprintf(&b, "listing /mutex: %v", err)
		}
		return b.String()
	}
	r.waitDecrements(t, "before any kill", perPhase, by(30*time.Second)) // JVM start included
	for phase := range 2 {
		victim := e.likelyLeader()
		guessed := victim != nil
		if victim == nil {
			victim = e.nodes[phase]
		}
		before := r.decrements()
		survivorWins := e.elections() - e.electionsOf(victim)
		killed := time.Now()
		e.kill(victim)
		r.waitDecrements(t, fmt.Sprintf("phase %d with node %d down", phase+1, victim.id), before+perPhase, by(phaseLimit))
		first, longest := r.pauseSince(before, killed)
		t.Logf("phase %d: killed node %d (leader by its log: %v) after %d decrements; first decrement %v later, longest pause %v, %d more in %v; a survivor won an election: %v",
			phase+1, victim.id, guessed, before, first.Round(time.Millisecond), longest.Round(time.Millisecond),
			perPhase, time.Since(killed).Round(time.Millisecond), e.elections() > survivorWins)
		restarted := time.Now()
		e.startNodes(victim)
		up := r.decrements()
		r.waitDecrements(t, fmt.Sprintf("phase %d after node %d restarted", phase+1, victim.id), up+perPhase, by(phaseLimit))
		_, longest = r.pauseSince(up, restarted)
		t.Logf("phase %d: node %d answered imok %v after restart; %d more decrements, longest pause %v",
			phase+1, victim.id, time.Since(restarted).Round(time.Millisecond), perPhase, longest.Round(time.Millisecond))
	}

	select {
	case <-r.scanned:
	case <-ctx.Done():
		t.Fatalf("CuratorFailover still running after %v, %d decrements", time.Since(start).Round(time.Millisecond), r.decrements())
	}
	if err := <-r.waited; err != nil {
		t.Errorf("CuratorFailover: %v", err)
	}
	r.mu.Lock()
	sum, states, problems := r.summary, r.states, r.problems
	r.mu.Unlock()
	t.Logf("CuratorFailover ran %v: %v; connection states %v", time.Since(start).Round(time.Millisecond), sum, states)
	for _, p := range problems {
		t.Log(p)
	}
	if sum == nil {
		t.Fatalf("CuratorFailover printed no summary")
	}
	for _, c := range []struct{ key, want string }{
		{"max_holders", "1"},
		{"violations", "0"},
		{"lost", "0"}, // no session ended: the clients continued
		{"unfinished", "0"},
		{"finished", strconv.Itoa(clients)},
		{"decrements", strconv.Itoa(initialStock)},
		{"final", "0"},
	} {
		if got := sum[c.key]; got != c.want {
			t.Errorf("CuratorFailover %s = %q, want %q", c.key, got, c.want)
		}
	}
	if n := r.decrements(); n != initialStock {
		t.Errorf("%d decrement lines, want %d", n, initialStock)
	}

	// Every node agrees: the stock is 0, written exactly initialStock times.
	for _, nd := range e.nodes {
		c := e.dial(nd.clientAddr)
		var data []byte
		var st *zk.Stat
		err := within(opTimeout, func() error {
			if _, err := c.Sync("/stock"); err != nil {
				return err
			}
			var err error
			data, st, err = c.Get("/stock")
			return err
		})
		if err != nil {
			t.Fatalf("node %d: read stock: %v", nd.id, err)
		}
		value, _, _ := strings.Cut(string(data), ":")
		if value != "0" || st.Version != initialStock {
			t.Errorf("node %d: stock %q at version %d, want 0 at version %d", nd.id, data, st.Version, initialStock)
		}
	}
	// The JVM closed its sessions, so no lock node may be left behind.
	deadline := time.Now().Add(sessionTimeout + 5*time.Second)
	for {
		var kids []string
		err := within(opTimeout, func() error {
			var err error
			kids, _, err = admin.Children("/mutex")
			return err
		})
		if err == nil && len(kids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock nodes left after the clients closed their sessions: %v (err %v)", kids, err)
		}
		time.Sleep(50 * time.Millisecond) // polling the server
	}
}
