package conformance

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
)

// kazoo's own tests, copied unchanged from its repository into
// testdata/kazoo_upstream (see the attribution there), run with kazoo's
// harness, which starts a three-member ensemble from zoo.cfg files it
// writes: hutch processes, through the shim in conftest.py, or, with
// -kazoo.zookeeper, Debian's ZooKeeper 3.8 as the harness means to.

var kazooOnZooKeeper = flag.Bool("kazoo.zookeeper", false, "run kazoo's upstream tests against ZooKeeper 3.8 too (three JVMs; by hand)")

// freePortBlock returns the first of n consecutive free loopback ports,
// for kazoo's harness, which numbers its servers' ports from one offset.
func freePortBlock(tb testing.TB, n int) int {
	tb.Helper()
	for range 50 {
		base := realzk.FreePort(tb)
		free := true
		for p := base; p < base+n && free; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				free = false
				continue
			}
			_ = l.Close()
		}
		if free {
			return base
		}
	}
	tb.Fatalf("no %d consecutive free ports", n)
	return 0
}

// pytestSummary is pytest's last line: "==== 1 passed, 1 warning in 20.90s ====".
var pytestSummary = regexp.MustCompile(`(?m)^=+ (.*) in [0-9.]+s(?: \([0-9:]+\))? =+$`)

// runKazooUpstream runs the pytest selector (a test of
// testdata/kazoo_upstream) against hutch, or ZooKeeper with zookeeper,
// and fails the test unless pytest passes every test selected.
func runKazooUpstream(t *testing.T, selector string, zookeeper bool) {
	t.Helper()
	if err := exec.Command(realzk.Python, "-c", "import kazoo.testing, pytest").Run(); err != nil {
		realzk.Unavailable(t, "kazoo and pytest for "+realzk.Python+" (Debian's python3-kazoo, python3-pytest)")
	}
	suite, err := filepath.Abs("testdata/kazoo_upstream")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	logs := t.TempDir()
	secret := filepath.Join(work, "peer-secret")
	if err := os.WriteFile(secret, []byte("kazoo upstream ensemble secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The harness's servers take ports offset+10*i+0..3, for i < 3.
	offset := freePortBlock(t, 24)
	env := append(os.Environ(),
		"ZOOKEEPER_VERSION=3.8.0",
		"ZOOKEEPER_CLASSPATH="+strings.Join([]string{
			filepath.Join(realzk.JavaDir, "zookeeper.jar"),
			filepath.Join(realzk.JavaDir, "slf4j-log4j12.jar"),
			filepath.Join(realzk.JavaDir, "log4j-1.2.jar"),
		}, ":"),
		"ZOOKEEPER_PORT_OFFSET="+strconv.Itoa(offset),
		"PYTHONDONTWRITEBYTECODE=1",
		"TMPDIR="+work,
	)
	if !zookeeper {
		env = append(env, "HUTCH_BIN="+realzk.BuildHutch(t), "HUTCH_PEER_SECRET_FILE="+secret, "HUTCH_LOG_DIR="+logs)
	} else if !realzk.Installed() {
		realzk.Unavailable(t, "Debian's zookeeper package")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := groupCommand(ctx, realzk.Python, "-m", "pytest", "-p", "no:cacheprovider", "-v", "-rA",
		filepath.Join(suite, selector))
	cmd.Dir, cmd.Env = work, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	t.Logf("pytest %s on %s: %v in %v", selector, map[bool]string{false: "hutch", true: "zookeeper"}[zookeeper],
		err, time.Since(start).Round(time.Second))
	summary := pytestSummary.FindStringSubmatch(out.String())
	if err != nil || summary == nil || !strings.Contains(summary[1], "passed") ||
		strings.Contains(summary[1], "failed") || strings.Contains(summary[1], "error") || strings.Contains(summary[1], "skipped") {
		var b strings.Builder
		files, _ := filepath.Glob(filepath.Join(logs, "*.log"))
		for _, f := range files {
			data, _ := os.ReadFile(f)
			if len(data) > 6000 {
				data = data[len(data)-6000:]
			}
			fmt.Fprintf(&b, "--- %s:\n%s\n", filepath.Base(f), data)
		}
		t.Fatalf("kazoo's %s: %v\n%s\n%s", selector, err, out.String(), b.String())
	}
	t.Logf("pytest %s: %s", selector, summary[1])
}

// TestKazooUpstreamReadOnlyMode is kazoo's TestReadOnlyMode: two of three
// members stopped, a read-only client restarted gets connected read-only
// to the one left, reads, is refused a write with NotReadOnlyCallError,
// and keeps its session through 15 s of pings.
func TestKazooUpstreamReadOnlyMode(t *testing.T) {
	t.Run("hutch", func(t *testing.T) { runKazooUpstream(t, "test_read_only.py::TestReadOnlyMode", false) })
	if *kazooOnZooKeeper {
		t.Run("zookeeper", func(t *testing.T) { runKazooUpstream(t, "test_read_only.py::TestReadOnlyMode", true) })
	}
}

// TestKazooUpstreamReconfig is kazoo's TestReconfig against the harness's
// three-member ensemble (reconfigEnabled=true, the super digest):
// test_no_super_auth wants NOAUTH for a joining observer without the
// super user, test_add_remove_observer adds an observer nobody runs and
// removes it, each reply holding (or not) the joining line, then wants
// BADVERSION for a fromConfig one past the current version, and
// test_bad_input wants BADARGUMENTS for a joining line that does not
// parse.
func TestKazooUpstreamReconfig(t *testing.T) {
	t.Run("hutch", func(t *testing.T) { runKazooUpstream(t, "test_reconfig.py::TestReconfig", false) })
	if *kazooOnZooKeeper {
		t.Run("zookeeper", func(t *testing.T) { runKazooUpstream(t, "test_reconfig.py::TestReconfig", true) })
	}
}
