package hutchtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
)

func TestMain(m *testing.M) { realzk.Main(m) }

// snippetRE finds the fenced blocks of a markdown file that name a file:
// ```go file=lock_test.go
var snippetRE = regexp.MustCompile("(?ms)^```(\\w+) file=(\\S+)\\n(.*?)^```")

// docSnippets returns docs/testing.md's snippets by file name.
func docSnippets(tb testing.TB) map[string]string {
	tb.Helper()
	md, err := os.ReadFile("../docs/testing.md")
	if err != nil {
		tb.Fatal(err)
	}
	out := make(map[string]string)
	for _, m := range snippetRE.FindAllStringSubmatch(string(md), -1) {
		out[m[2]] = m[3]
	}
	return out
}

// TestTestingDocSnippets runs every snippet of docs/testing.md as it is
// written there: the Go tests in a module of their own that imports
// hutchtest (as a user's would), the JUnit class with Curator against the
// hutch binary, and the pytest file with kazoo against the binary.
func TestTestingDocSnippets(t *testing.T) {
	snippets := docSnippets(t)
	for _, name := range []string{"lock_test.go", "HutchLockTest.java", "test_hutch.py", "HutchFailoverTest.java", "test_failover.py"} {
		if snippets[name] == "" {
			t.Fatalf("docs/testing.md has no %s snippet (found %d)", name, len(snippets))
		}
	}
	bin := realzk.BuildHutch(t)

	t.Run("go", func(t *testing.T) {
		repo, err := filepath.Abs("..")
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		gomod := "module example.com/hutchdoc\n\ngo 1.26.0\n\n" +
			"require (\n\tgithub.com/go-zookeeper/zk v1.0.4\n\tgithub.com/hutchzk/hutch v0.0.0\n)\n\n" +
			"replace github.com/hutchzk/hutch => " + repo + "\n"
		sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
		if err != nil {
			t.Fatal(err)
		}
		write(t, dir, "go.mod", gomod)
		write(t, dir, "go.sum", string(sum))
		write(t, dir, "lock_test.go", snippets["lock_test.go"])
		out := runGroup(t, dir, 5*time.Minute, []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off"},
			"go", "test", "-count=1", "-v", ".")
		if n := strings.Count(out, "--- PASS"); n != 5 || strings.Contains(out, "FAIL") {
			t.Fatalf("%d of 5 Go snippet tests passed:\n%s", n, out)
		}
	})

	t.Run("junit-curator", func(t *testing.T) {
		dir := t.TempDir()
		lock := write(t, dir, "HutchLockTest.java", snippets["HutchLockTest.java"])
		failover := write(t, dir, "HutchFailoverTest.java", snippets["HutchFailoverTest.java"])
		cp := realzk.CompileCuratorAll(t, []string{lock, failover}, "junit4.jar", "hamcrest-core.jar")
		out := runGroup(t, dir, 4*time.Minute, nil, "java", "-cp", cp, "-Dhutch.bin="+bin,
			"org.junit.runner.JUnitCore", "HutchLockTest", "HutchFailoverTest")
		if !strings.Contains(out, "OK (4 tests)") {
			t.Fatalf("JUnit:\n%s", out)
		}
	})

	t.Run("pytest-kazoo", func(t *testing.T) {
		if err := exec.Command(realzk.Python, "-c", "import kazoo, pytest").Run(); err != nil {
			realzk.Unavailable(t, "kazoo and pytest for "+realzk.Python+" (Debian's python3-kazoo, python3-pytest)")
		}
		dir := t.TempDir()
		write(t, dir, "test_hutch.py", snippets["test_hutch.py"])
		write(t, dir, "test_failover.py", snippets["test_failover.py"])
		out := runGroup(t, dir, 3*time.Minute, []string{"HUTCH=" + bin}, realzk.Python, "-m", "pytest", "-q",
			"-p", "no:cacheprovider", "test_hutch.py", "test_failover.py")
		if !strings.Contains(out, "6 passed") || strings.Contains(out, "failed") {
			t.Fatalf("pytest:\n%s", out)
		}
	})
}

// write writes a file into dir and returns its path.
func write(tb testing.TB, dir, name, content string) string {
	tb.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// runGroup runs a command in its own process group in dir, with env
// added, and returns its output; it fails the test if the command fails
// or outlives timeout. Whatever the command started (a hutch it did not
// stop) is killed with its group.
func runGroup(tb testing.TB, dir string, timeout time.Duration, env []string, name string, args ...string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
