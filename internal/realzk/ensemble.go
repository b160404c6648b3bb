package realzk

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// QuorumTimeout bounds how long StartEnsemble waits, after every server
// answers imok, for all of them to report leader or follower.
const QuorumTimeout = 90 * time.Second

// StartEnsemble runs an n-server ZooKeeper quorum on loopback: each server
// has its own dataDir with myid, and every zoo.cfg names the same
// server.N=127.0.0.1:peerPort:electionPort lines. It returns once srvr on
// every server shows Mode: leader or Mode: follower; the servers are
// stopped by pid when the test ends. Without Debian's ZooKeeper the test is
// skipped (failed under CI=true).
//
// Ports are picked free but not reserved; a port lost to another process
// before the JVM binds it fails the test rather than being retried, since a
// quorum cannot swap one member's ports after the others have read them.
func StartEnsemble(tb testing.TB, n int, opts ...Option) []*Server {
	tb.Helper()
	if !Installed() {
		Unavailable(tb, "Debian's zookeeper package")
	}
	if n < 1 {
		tb.Fatalf("StartEnsemble: n = %d", n)
	}
	base := dataBase(tb, opts)
	type ports struct{ client, peer, election int }
	ps := make([]ports, n)
	seen := make(map[int]bool)
	for i := range ps {
		pick := func() int {
			// FreePort may hand back a port just released; keep the three
			// ports of every member distinct.
			for range 20 {
				if p := FreePort(tb); !seen[p] {
					seen[p] = true
					return p
				}
			}
			tb.Fatal("StartEnsemble: no distinct free port")
			return 0
		}
		ps[i] = ports{client: pick(), peer: pick(), election: pick()}
	}
	var members strings.Builder
	for i, p := range ps {
		fmt.Fprintf(&members, "server.%d=127.0.0.1:%d:%d\n", i+1, p.peer, p.election)
	}

	servers := make([]*Server, 0, n)
	for i, p := range ps {
		id := i + 1
		dir := filepath.Join(base, "zk"+strconv.Itoa(id))
		o := options{
			tickTime: 2 * time.Second,
			config: [][2]string{
				{"initLimit", "10"},
				{"syncLimit", "5"},
			},
		}
		for _, opt := range opts {
			opt(&o)
		}
		cmd, logFile, err := zookeeperCommand(dir, p.client, o)
		if err != nil {
			tb.Fatalf("zookeeper %d: %v", id, err)
		}
		if err := quorumConfig(dir, id, members.String(), cmd); err != nil {
			tb.Fatalf("zookeeper %d: %v", id, err)
		}
		addr := "127.0.0.1:" + strconv.Itoa(p.client)
		// ruok is answered once the client port listens, before an
		// election; the quorum wait below checks the mode.
		s, err := launch(cmd, addr, dir, logFile, answersImok)
		if err != nil {
			tb.Fatalf("start zookeeper %d: %v", id, classifyStartError(err, logFile))
		}
		tb.Cleanup(func() {
			if err := s.Stop(); err != nil {
				tb.Errorf("stop zookeeper %d: %v", id, err)
			}
			if tb.Failed() {
				tb.Logf("zookeeper %d log tail (%s):\n%s", id, s.LogFile, s.LogTail(8<<10))
			}
		})
		servers = append(servers, s)
	}

	deadline := time.Now().Add(QuorumTimeout)
	modes := make([]string, n)
	backoff := 100 * time.Millisecond
	for {
		ready := true
		for i, s := range servers {
			modes[i] = Mode(s.Addr, 2*time.Second)
			if modes[i] != "leader" && modes[i] != "follower" {
				ready = false
			}
		}
		if ready {
			return servers
		}
		if time.Now().After(deadline) {
			tb.Fatalf("zookeeper ensemble not formed after %v: modes %q", QuorumTimeout, modes)
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
}

// quorumConfig turns the standalone setup zookeeperCommand wrote into a
// quorum member's: myid in the data directory, the member lines appended to
// zoo.cfg, and QuorumPeerMain instead of ZooKeeperServerMain.
func quorumConfig(dir string, id int, members string, cmd *exec.Cmd) error {
	data := filepath.Join(dir, "data")
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(id)+"\n"), 0o644); err != nil {
		return err
	}
	cfgFile := filepath.Join(dir, "conf", "zoo.cfg")
	f, err := os.OpenFile(cfgFile, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	// standaloneEnabled=false keeps a one-member ensemble a quorum too.
	_, werr := f.WriteString("standaloneEnabled=false\n" + members)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return werr
	}
	for i, a := range cmd.Args {
		if a == "org.apache.zookeeper.server.ZooKeeperServerMain" {
			cmd.Args[i] = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
			return nil
		}
	}
	return fmt.Errorf("no main class in %q", cmd.Args)
}

// Mode returns the Mode line of srvr at addr (standalone, leader,
// follower), or "" when it cannot tell (not serving, connection refused).
// ZooKeeper and hutch both answer it.
func Mode(addr string, timeout time.Duration) string {
	reply, err := FourLetterWord(addr, "srvr", timeout)
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(reply, "\n") {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}
