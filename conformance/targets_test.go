package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
)

// target is a server a check runs against. start brings up a fresh one for
// the calling (sub)test and returns its client address; it is stopped when
// that test ends. Starting inside the subtest means a missing ZooKeeper
// install skips only the zookeeper side, never hutch's.
type target struct {
	name  string
	start func(tb testing.TB) string
}

// TestMain removes the hutch binary realzk.BuildHutch compiled.
func TestMain(m *testing.M) { realzk.Main(m) }

// targets lists the servers every check runs against: real ZooKeeper as the
// reference, then hutch in-process, then the hutch binary as users run it.
// The binary gets --max-client-conns 0 (unlimited, like the maxClientCnxns=0
// realzk gives ZooKeeper) so that checks opening many sessions from
// loopback compare like with like.
func targets(t *testing.T) []target {
	t.Helper()
	return []target{
		{name: "zookeeper", start: func(tb testing.TB) string { return realzk.Start(tb).Addr }},
		{name: "hutch", start: startHutch},
		{name: "hutch-binary", start: startHutchBinary},
	}
}

// startHutchBinary builds cmd/hutch (once per test binary) and runs it on a
// free loopback port; it is stopped when tb ends.
func startHutchBinary(tb testing.TB) string {
	tb.Helper()
	return realzk.StartHutchBinary(tb, realzk.BuildHutch(tb), "--max-client-conns", "0").Addr
}

// forEachTarget runs check as a subtest against a fresh server per target,
// then compares what the checks recorded in their ledgers: hutch must
// observe exactly what ZooKeeper does.
func forEachTarget(t *testing.T, check func(t *testing.T, addr string, l *ledger)) {
	t.Helper()
	tgs := targets(t)
	complete := make(map[string]*ledger)
	for _, tg := range tgs {
		l := &ledger{}
		passed := t.Run(tg.name, func(t *testing.T) {
			check(t, tg.start(t), l)
			l.complete = true // not reached after Skip or Fatal
		})
		if passed && l.complete {
			complete[tg.name] = l
		}
	}
	for _, tg := range tgs {
		if tg.name != reference {
			compareLedgers(t, tg.name, complete[reference], complete[tg.name])
		}
	}
}

// reference is the target whose ledger the others must match.
const reference = "zookeeper"

// ledger is what one check observed on one target that must come out the
// same on every target given the same requests: zxids, versions, counts,
// paths and events, with session ids and times left out. Comparing ledgers
// holds hutch to ZooKeeper's exact numbering, beyond the rules each check
// asserts on its own.
type ledger struct {
	lines    []string
	complete bool // the check ran to its end
}

// record adds one observation.
func (l *ledger) record(format string, args ...any) {
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// compareLedgers reports where got, the ledger of target name, differs from
// want, ZooKeeper's. A target that failed or was skipped has no ledger, and
// nothing is compared.
func compareLedgers(t *testing.T, name string, want, got *ledger) {
	t.Helper()
	if want == nil || got == nil {
		return
	}
	const maxReported = 5
	reported := 0
	for i := range max(len(want.lines), len(got.lines)) {
		w, g := "(nothing)", "(nothing)"
		if i < len(want.lines) {
			w = want.lines[i]
		}
		if i < len(got.lines) {
			g = got.lines[i]
		}
		if w == g {
			continue
		}
		if reported++; reported > maxReported {
			t.Errorf("%s differs from %s in more observations; first %d shown", name, reference, maxReported)
			return
		}
		t.Errorf("%s differs from %s at observation %d:\n%14s: %s\n%14s: %s", name, reference, i+1, reference, w, name, g)
	}
}

// Deadlines for waiting on a condition. They are long because they only
// matter when something is wrong, and a loaded two-core machine running
// JVMs can be slow when everything is right.
const (
	eventTimeout   = 20 * time.Second // a watch event after the change that fires it
	commandTimeout = 60 * time.Second // a client command's output, JVM start included
)

// logBuffer collects a server's or client's logs so that a test prints them
// only when it failed. It keeps the last max bytes and is safe for
// concurrent writers.
type logBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
	max int
}

func newLogBuffer() *logBuffer { return &logBuffer{max: 256 << 10} }

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - b.max; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// dumpOnFailure registers a cleanup that logs what b collected if tb failed.
func dumpOnFailure(tb testing.TB, what string, b *logBuffer) {
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("%s:\n%s", what, b.String())
		}
	})
}

// groupCommand runs name in a process group of its own, killed whole when
// ctx ends (a JVM or Python client leaves no child behind), with ten
// seconds for its output to drain after it exits.
func groupCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}
