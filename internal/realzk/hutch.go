package realzk

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// hutchPackage is the command BuildHutch builds.
const hutchPackage = "github.com/hutchzk/hutch/cmd/hutch"

// build is the hutch binary shared by every test of one test binary.
var build struct {
	once sync.Once
	dir  string // removed by Main
	bin  string
	err  error
}

// BuildHutch compiles cmd/hutch once per test binary and returns the path of
// the executable. The build lives in a temp directory that Main removes; a
// package using BuildHutch should call Main from its TestMain.
func BuildHutch(tb testing.TB) string {
	tb.Helper()
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "hutch-build-")
		if build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "hutch")
		goTool, err := exec.LookPath("go")
		if err != nil {
			build.err = err
			return
		}
		// The test runs in its package directory, inside the module, so
		// the import path resolves against this checkout. -buildvcs=false:
		// a checkout without commits (or without git) must still build.
		out, err := exec.Command(goTool, "build", "-buildvcs=false", "-o", build.bin, hutchPackage).CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("go build %s: %v\n%s", hutchPackage, err, out)
		}
	})
	if build.err != nil {
		tb.Fatalf("build hutch: %v", build.err)
	}
	return build.bin
}

// Main runs the tests of a package and then removes what BuildHutch built.
// Call it from TestMain: func TestMain(m *testing.M) { realzk.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// StartHutchBinary runs the hutch executable bin on a free loopback port,
// with "--listen 127.0.0.1:PORT" followed by args, and returns once it
// answers imok. It is stopped by its pid when the test ends; its stderr logs
// are in Server.LogFile and shown if the test failed.
func StartHutchBinary(tb testing.TB, bin string, args ...string) *Server {
	tb.Helper()
	base := tb.TempDir()
	attempt := 0
	return startWithRetry(tb, "hutch", func(port int) (*Server, error) {
		attempt++
		dir := filepath.Join(base, strconv.Itoa(attempt))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		cmd := exec.Command(bin, append([]string{"--listen", addr}, args...)...)
		cmd.Dir = dir
		logFile := filepath.Join(dir, "hutch.log")
		s, err := launch(cmd, addr, dir, logFile, answersImok)
		return s, classifyStartError(err, logFile)
	})
}
