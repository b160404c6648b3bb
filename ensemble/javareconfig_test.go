package ensemble

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
)

// reconfigCheckSource is the Java program TestJavaReconfig compiles and
// runs.
const reconfigCheckSource = "testdata/ReconfigCheck.java"

// TestJavaReconfig changes a running three-member ensemble from Java, on
// ZooKeeper 3.8 and on hutch from the same zoo.cfg files: ZooKeeperAdmin's
// reconfigure adds a fourth server, already running, as an observer and
// removes a follower; the observer then serves a session of its own
// (a write it forwards, a read, /zookeeper/config), and Curator's
// EnsembleTracker, which watches /zookeeper/config, turns its connect
// string into the three members left and writes through it.
func TestJavaReconfig(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper's and hutch's ensembles and a JVM for each")
	}
	classpath := realzk.CompileCurator(t, reconfigCheckSource)
	bin := realzk.BuildHutch(t)
	ports := distinctPorts(t, 4)
	secretFile := filepath.Join(t.TempDir(), "peer-secret")
	if err := os.WriteFile(secretFile, []byte(rand.Text()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"zookeeper", "hutch"} {
		t.Run(target, func(t *testing.T) {
			nodes := reconfigCfgs(t, t.TempDir(), ports[:3], secretFile, "")
			// Server 4 starts from the members' lines and its own, as an
			// observer, as ZooKeeper's manual has a joining server do.
			all := reconfigCfgs(t, t.TempDir(), ports, secretFile, "peerType=observer\n")
			obsLine := fmt.Sprintf("server.4=127.0.0.1:%d:%d:observer;127.0.0.1:%d", ports[3][1], ports[3][2], ports[3][0])
			cfg, err := os.ReadFile(all[3].cfgFile)
			if err != nil {
				t.Fatal(err)
			}
			participant := fmt.Sprintf("server.4=127.0.0.1:%d:%d;127.0.0.1:%d", ports[3][1], ports[3][2], ports[3][0])
			if err := os.WriteFile(all[3].cfgFile, bytes.Replace(cfg, []byte(participant), []byte(obsLine), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			start := realzk.StartHutchConfigs
			if target == "zookeeper" {
				start = func(tb testing.TB, _ string, procs []realzk.ConfigProcess) []*realzk.Server {
					return realzk.StartZooKeeperConfigs(tb, procs)
				}
			}
			start(t, bin, configProcesses(nodes))
			waitModes(t, nodes, []string{"follower", "follower", "leader"}, 60*time.Second)
			start(t, bin, configProcesses(all[3:]))
			// A follower leaves (ZooKeeper's leader that leaves drops every
			// client in the election that follows).
			victim := 2
			if realzk.Mode(nodes[2].clientAddr, 2*time.Second) == "leader" {
				victim = 1
			}
			var connect, want []string
			for i, nd := range nodes {
				connect = append(connect, nd.clientAddr)
				if i != victim {
					want = append(want, nd.clientAddr)
				}
			}
			want = append(want, all[3].clientAddr)
			out := runReconfigCheck(t, classpath, strings.Join(connect, ","), obsLine, fmt.Sprint(victim+1), all[3].clientAddr, strings.Join(want, ","))
			for _, k := range []string{"curator.initial", "add.config", "add.stat", "observer.read", "observer.config", "remove.config", "curator.final", "curator.read"} {
				t.Logf("%s: %s", k, out[k])
			}
			if out["done"] != "true" {
				t.Fatalf("ReconfigCheck did not finish: %v", out)
			}
			if !strings.Contains(out["add.config"], obsLine+"|") || !strings.Contains(out["observer.config"], obsLine+"|") {
				t.Errorf("the configuration after adding the observer: %q, from the observer %q; want %q in both", out["add.config"], out["observer.config"], obsLine)
			}
			if gone := fmt.Sprintf("server.%d=", victim+1); strings.Contains(out["remove.config"], gone) || !strings.Contains(out["remove.config"], obsLine+"|") {
				t.Errorf("the configuration after removing %d: %q", victim+1, out["remove.config"])
			}
			if out["observer.read"] != "o" || out["curator.read"] != "c" {
				t.Errorf("reads through the observer and Curator: %q %q", out["observer.read"], out["curator.read"])
			}
			if mode := realzk.Mode(all[3].clientAddr, 2*time.Second); mode != "observer" {
				t.Errorf("srvr of server 4: Mode %q, want observer", mode)
			}
		})
	}
}

// runReconfigCheck runs ReconfigCheck with args and returns what it
// printed by key; its stderr is shown if the test fails.
func runReconfigCheck(t *testing.T, classpath string, args ...string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	jvm := []string{
		"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Djava.net.preferIPv4Stack=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.ClientCnxn=error",
		"-cp", classpath, "ReconfigCheck",
	}
	cmd := exec.CommandContext(ctx, "java", append(jvm, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	t.Logf("ReconfigCheck ran in %v: %v", time.Since(began).Round(time.Millisecond), err)
	out := map[string]string{}
	for ln := range strings.SplitSeq(stdout.String(), "\n") {
		if k, v, ok := strings.Cut(ln, "\t"); ok {
			out[k] = v
		}
	}
	if err != nil || out["error"] != "" {
		t.Fatalf("ReconfigCheck: %v %s\nstdout:\n%s\nstderr:\n%s", err, out["error"], stdout.String(), stderr.String())
	}
	return out
}
