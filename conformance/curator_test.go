package conformance

import (
	"bufio"
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
)

// curatorSource is the Java program TestCurator compiles and runs.
const curatorSource = "testdata/curator/CuratorCheck.java"

// curatorRunTimeout bounds one JVM running every scenario; each scenario
// has its own, shorter, limit inside CuratorCheck.
const curatorRunTimeout = 4 * time.Minute

// curatorResult is what CuratorCheck printed for one scenario: key → value.
type curatorResult map[string]string

// TestCurator runs Apache Curator's recipes (Debian's Curator 5.4) against
// each target: locks, semaphores, leader election with failover, shared
// counters, container parents and protected creates. One JVM per target
// runs every scenario; each scenario is a subtest checking what it printed.
func TestCurator(t *testing.T) {
	classes := realzk.CompileCurator(t, curatorSource)
	forEachBusyTarget(t, func(t *testing.T, _, addr string) {
		results := runCurator(t, classes, addr)
		for _, sc := range curatorScenarios {
			t.Run(sc.name, func(t *testing.T) {
				r, ok := results[sc.name]
				switch {
				case !ok:
					t.Fatalf("CuratorCheck printed nothing for %s", sc.name)
				case r["error"] != "":
					t.Fatalf("%s failed in Java: %s", sc.name, r["error"])
				case r["done"] != "true":
					t.Fatalf("%s did not finish: %v", sc.name, r)
				}
				t.Logf("ran in %sms", r["elapsed_ms"])
				sc.check(t, r)
			})
		}
	})
}

// runCurator runs CuratorCheck against addr and returns its results by
// scenario. Curator's own logs (stderr) are shown if the test fails.
func runCurator(t *testing.T, classpath, addr string) map[string]curatorResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), curatorRunTimeout)
	defer cancel()
	args := append(strings.Fields(clientJVMFlags),
		"-Djava.net.preferIPv4Stack=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		// It warns of every socket the server closes after closeSession.
		"-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.ClientCnxn=error",
		"-cp", classpath, "CuratorCheck", addr)
	cmd := groupCommand(ctx, "java", args...)
	var stdout bytes.Buffer
	stderr := newLogBuffer()
	dumpOnFailure(t, "CuratorCheck stderr", stderr)
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("CuratorCheck after %v: %v\nstdout:\n%s", time.Since(start).Round(time.Millisecond), err, stdout.String())
	}
	t.Logf("CuratorCheck ran in %v", time.Since(start).Round(time.Millisecond))

	results := make(map[string]curatorResult)
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 3)
		if len(f) != 3 {
			t.Fatalf("CuratorCheck printed %q, want scenario<TAB>key<TAB>value", sc.Text())
		}
		if results[f[0]] == nil {
			results[f[0]] = make(curatorResult)
		}
		results[f[0]][f[1]] = f[2]
	}
	return results
}
