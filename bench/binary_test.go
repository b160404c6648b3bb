package bench

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
)

// TestHutchBenchBinary runs the built hutch binary's bench subcommand end
// to end, tiny, against a hutch process, and checks its exit status, its
// tables and its progress lines; then that it refuses a remote target.
func TestHutchBenchBinary(t *testing.T) {
	bin := realzk.BuildHutch(t)
	srv := realzk.StartHutchBinary(t, bin, "--max-client-conns", "0", "--log-level", "warn")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "bench", "--target", srv.Addr, "--pid", strconv.Itoa(srv.PID),
		"--rounds", "1", "--sessions", "3", "--stock", "30", "--ops", "300", "--znodes", "300",
		"stock", "write-pipelined", "memory")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hutch bench: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"hutch bench: target " + srv.Addr + " (pid " + strconv.Itoa(srv.PID) + ")",
		"\nstock: 3 sessions decrement a stock of 30 to 0 under the fair lock\n",
		"\nwrite-pipelined: 300 setData of 100 bytes from 3 sessions, 64 outstanding per session\n",
		"\nmemory: 300 znodes of 100 bytes",
		"decrements/s", "ops/s", "creates/s", "RSS after (MiB)", "p99.9 (ms)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "FAILED") || strings.Contains(out, "unknown") {
		t.Errorf("a figure failed or is unknown:\n%s", out)
	}
	// stderr is not a terminal here: plain progress lines, one per phase
	// at least, the warm-up first (memory has none).
	for _, want := range []string{
		"stock · warm-up · target " + srv.Addr + " · measure",
		"stock · round 1/1 · target " + srv.Addr + " · measure",
		"memory · round 1/1 · target " + srv.Addr + " · cleanup",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks the progress line %q:\n%s", want, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), "\r") || strings.Contains(stderr.String(), "memory · warm-up") {
		t.Errorf("progress rewrote its line off a terminal, or warmed memory up:\n%q", stderr.String())
	}

	stdout.Reset()
	stderr.Reset()
	cmd = exec.CommandContext(ctx, bin, "bench", "--target", "192.0.2.1:2181", "lock")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var exit *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("hutch bench against 192.0.2.1: %v, want exit status 1", err)
	}
	if !strings.Contains(stderr.String(), "not a loopback address") || stdout.Len() != 0 {
		t.Errorf("refusal: stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}
