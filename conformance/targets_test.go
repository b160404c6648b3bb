package conformance

import (
	"bytes"
	"sync"
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

// targets lists the servers every check runs against: real ZooKeeper as the
// reference, then hutch in-process.
func targets(t *testing.T) []target {
	t.Helper()
	return []target{
		{name: "zookeeper", start: func(tb testing.TB) string { return realzk.Start(tb).Addr }},
		{name: "hutch", start: startHutch},
	}
}

// forEachTarget runs check as a subtest against a fresh server per target.
func forEachTarget(t *testing.T, check func(t *testing.T, addr string)) {
	t.Helper()
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			check(t, tg.start(t))
		})
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
