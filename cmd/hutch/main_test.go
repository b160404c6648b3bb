package main

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := raftConfig(0, "", "", "", ""); c != nil || err != nil {
		t.Fatalf("no flags: %+v %v, want plain single node", c, err)
	}
	c, err := raftConfig(2, "", "1=127.0.0.1:7001, 2=127.0.0.1:7002,3=127.0.0.1:7003", "/d", secret)
	if err != nil || c.NodeID != 2 || c.RaftAddr != "127.0.0.1:7002" || len(c.Peers) != 3 || c.DataDir != "/d" ||
		string(c.Secret) != "0123456789abcdef0123" {
		t.Fatalf("got %+v %v", c, err)
	}
	if c, err = raftConfig(0, "", "", "/d", ""); err != nil || c.NodeID != 1 || len(c.Peers) != 0 {
		t.Fatalf("--data-dir alone: %+v %v, want a durable single voter", c, err)
	}
	// Listening on one address and advertising another (a proxy, NAT).
	c, err = raftConfig(1, "0.0.0.0:7101", "1=10.0.0.1:7001,2=10.0.0.2:7001", "/d", secret)
	if err != nil || c.RaftAddr != "0.0.0.0:7101" || c.Peers[1] != "10.0.0.1:7001" {
		t.Fatalf("listen and advertise: %+v %v", c, err)
	}
}

// TestRaftConfigRefusals: every configuration that would make an unsafe or
// broken member is refused at start, with the reason.
func TestRaftConfigRefusals(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(secret, []byte("0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, []byte("tooshort"), 0o600); err != nil {
		t.Fatal(err)
	}
	three := "1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003"
	for _, tc := range []struct {
		name                string
		id                  uint64
		peers, data, secret string
		want                string
	}{
		{"peers without a data dir", 1, three, "", secret, "needs --data-dir"},
		{"peers without a secret", 1, three, dir, "", "needs --peer-secret-file"},
		{"a short secret", 1, three, dir, short, "at least 16"},
		{"a missing secret file", 1, three, dir, filepath.Join(dir, "nope"), "no such file"},
		{"id 255", 255, "255=127.0.0.1:7001", dir, secret, "out of range"},
		{"id 256", 256, "", dir, "", "out of range"},
		{"peer id 300", 1, "1=127.0.0.1:7001,300=127.0.0.1:7002", dir, secret, "out of range"},
		{"peer id 0", 1, "1=127.0.0.1:7001,0=127.0.0.1:7002", dir, secret, "out of range"},
		{"duplicate ids", 1, "1=127.0.0.1:7001,1=127.0.0.1:7002", dir, secret, "listed twice"},
		{"duplicate addresses", 1, "1=127.0.0.1:7001,2=127.0.0.1:7001", dir, secret, "same address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := raftConfig(tc.id, "", tc.peers, tc.data, tc.secret)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %+v, err %v; want an error saying %q", c, err, tc.want)
			}
		})
	}
	// And through the command line as a whole.
	if err := run([]string{"--id", "1", "--peers", three, "--listen", "127.0.0.1:0"}); err == nil ||
		!strings.Contains(err.Error(), "--data-dir") {
		t.Fatalf("run with --peers and no --data-dir: %v", err)
	}
}
