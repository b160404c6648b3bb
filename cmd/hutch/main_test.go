package main

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"
)

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--no-such-flag"}, {"--log-level", "loud"}, {"--tick-time", "soon"},
		{"--peers", "1=127.0.0.1:7001"}, {"--peers", "x=y"}, {"--id", "4", "--peers", "1=127.0.0.1:7001"},
	} {
		if err := run(args); err == nil {
			t.Errorf("run(%q) accepted bad flags", args)
		}
	}
}

// TestSignalShutdown builds the binary, serves a connection and checks that
// SIGTERM closes listener and connections and exits 0.
func TestSignalShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "hutch")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	addrRE := regexp.MustCompile(`msg=serving addr=(\S+)`)
	var addr string
	for addr == "" && lines.Scan() {
		if m := addrRE.FindStringSubmatch(lines.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		_ = cmd.Process.Kill()
		t.Fatal("no 'serving' log line")
	}
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var sawStopped bool
	for lines.Scan() {
		if regexp.MustCompile(`msg=stopped`).MatchString(lines.Text()) {
			sawStopped = true
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if !sawStopped {
		t.Error("no 'stopped' log line")
	}
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); err == nil {
		t.Error("open connection survived shutdown")
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("listener still accepting after shutdown")
	}
}

func TestRaftConfig(t *testing.T) {
	if c, err := raftConfig(0, "", "", ""); c != nil || err != nil {
		t.Fatalf("no flags: %+v %v, want plain single node", c, err)
	}
	c, err := raftConfig(2, "", "1=127.0.0.1:7001, 2=127.0.0.1:7002,3=127.0.0.1:7003", "/d")
	if err != nil || c.NodeID != 2 || c.RaftAddr != "127.0.0.1:7002" || len(c.Peers) != 3 || c.DataDir != "/d" {
		t.Fatalf("got %+v %v", c, err)
	}
	if c, err = raftConfig(0, "", "", "/d"); err != nil || c.NodeID != 1 || len(c.Peers) != 0 {
		t.Fatalf("--data-dir alone: %+v %v, want a durable single voter", c, err)
	}
}
