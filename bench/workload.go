package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// workload is one thing hutch bench measures.
type workload struct {
	name  string
	about string
	// describe says what one run does at the given size, for the tables.
	describe func(s Size) string
	// coldOnly: the workload skips the warm-up round, whose traces would
	// spoil what it measures (memory: a warmed-up server reuses the
	// memory the warm-up freed).
	coldOnly bool
	// run measures once against e's target, under e.root. It is bounded by
	// ctx (--max-time): once ctx ends, it returns promptly.
	run func(ctx context.Context, e *env) (*measurement, error)
}

// workloads are every workload, in the order a run without names takes
// them.
var workloads = []*workload{
	lockWorkload, stockWorkload,
	readSyncWorkload, writeSyncWorkload, readPipelinedWorkload, writePipelinedWorkload,
	fanoutWorkload, sessionsWorkload, memoryWorkload,
}

// measurement is what one run of a workload against one target measured.
type measurement struct {
	figures []Figure
	notes   []string // what the figures cannot say (RSS unknown)
}

func (m *measurement) add(f ...Figure) { m.figures = append(m.figures, f...) }

// env is what a workload runs with: the options, the target, a fresh root
// znode and a session to set up fixtures with.
type env struct {
	opt    *Options
	target Target
	admin  *session
	root   string
	prog   *progress
}

// mkdir creates the znode name under the run's root, holding data, and
// returns its path.
func (e *env) mkdir(name string, data []byte) (string, error) {
	p := e.root + "/" + name
	if _, err := e.admin.conn.Create(p, data, 0, openACL); err != nil {
		return "", fmt.Errorf("create %s: %w", p, err)
	}
	return p, nil
}

// or returns v, or def when v is zero (the flag was not given).
func or(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// runOnce runs w once against target: it opens an admin session, creates a
// fresh root, runs the workload bounded by --max-time, then deletes the
// root (bounded by --max-time again, and done even after an interrupt).
// Each workload session is closed when the run's time is up, the admin
// session when both times are, so that no call outlives them.
func runOnce(ctx context.Context, opt *Options, w *workload, target Target, prog *progress) (m *measurement, err error) {
	admin, err := connect(ctx, 0, target.Servers[0], opt.ConnectTimeout, dialOptions{timeout: opt.SessionTimeout})
	if err != nil {
		return nil, err
	}
	defer admin.conn.Close()
	// go-zookeeper's calls have no deadline; one the server never
	// answers returns when its session is closed. The admin session is
	// closed once the run has had --max-time twice over.
	bound, cancelBound := context.WithTimeout(context.WithoutCancel(ctx), 2*opt.MaxTime)
	defer cancelBound()
	defer context.AfterFunc(bound, admin.conn.Close)()
	root, err := newRoot(admin.conn)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := cleanUp(ctx, opt, target, root, prog); cerr != nil {
			m, err = nil, errors.Join(err, fmt.Errorf("delete %s: %w (znodes left behind)", root, cerr))
		}
	}()
	maxTime := fmt.Errorf("not done within --max-time %v", opt.MaxTime)
	runCtx, cancel := context.WithTimeoutCause(ctx, opt.MaxTime, maxTime)
	defer cancel()
	m, err = w.run(runCtx, &env{opt: opt, target: target, admin: admin, root: root, prog: prog})
	switch cause := context.Cause(runCtx); {
	case err == nil:
	case cause != nil && !errors.Is(err, cause):
		// Calls cut short by the deadline fail with whatever the
		// client says; the deadline is the reason.
		err = fmt.Errorf("%w (%v)", cause, err)
	case errors.Is(err, zk.ErrConnectionClosed):
		err = fmt.Errorf("%w (a session lost its connection: go-zookeeper drops one that hears nothing for 2/3 of --session-timeout, %v, as a loaded server's may)", err, opt.SessionTimeout)
	}
	return m, err
}

// cleanUp deletes a run's root through a session of its own, bounded by
// --max-time from now, even after ctx ended: an interrupted run still
// cleans up.
func cleanUp(ctx context.Context, opt *Options, target Target, root string, prog *progress) error {
	prog.phase("cleanup", 0, "znodes deleted")
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opt.MaxTime)
	defer cancel()
	s, err := connect(ctx, 0, target.Servers[0], opt.ConnectTimeout, dialOptions{timeout: opt.SessionTimeout})
	if err != nil {
		return err
	}
	defer s.conn.Close()
	defer context.AfterFunc(ctx, s.conn.Close)()
	return deleteTree(ctx, s.conn, root, &prog.done)
}

// timer measures the elapsed time of a run's measured phase and, when
// the target's process id is known (--pid, --against-pid), the server's
// CPU time over it: what the server spent, whatever the client did.
type timer struct {
	start time.Time
	pids  []int
	cpu   time.Duration // the server's CPU time at start
}

func (e *env) startTimer() timer {
	t := timer{start: time.Now(), pids: e.target.PIDs}
	if len(t.pids) > 0 {
		t.cpu, _ = processesCPU(t.pids)
	}
	return t
}

func (t timer) elapsed() time.Duration           { return time.Since(t.start) }
func (t timer) since(at time.Time) time.Duration { return at.Sub(t.start) }

// serverCPU adds to m the server's CPU time since the timer started per
// one of count units, when the server's process id is known.
func (t timer) serverCPU(m *measurement, unit string, count int) {
	if len(t.pids) == 0 || count <= 0 {
		return
	}
	now, err := processesCPU(t.pids)
	if err != nil {
		return
	}
	m.add(Figure{Name: "server CPU per " + unit, Unit: "µs", Better: Lower,
		Value:      float64((now - t.cpu).Microseconds()) / float64(count),
		Resolution: float64(len(t.pids)) * float64(cpuTick.Microseconds()) / float64(count)})
}

// cpuTick is the unit /proc counts a process's CPU time in: USER_HZ,
// 100 a second on Linux.
const cpuTick = 10 * time.Millisecond

// processesCPU sums the CPU time of the processes pids (an ensemble's
// members).
func processesCPU(pids []int) (time.Duration, error) { return sumOver(pids, processCPU) }

// processCPU reads a process's user and system CPU time from /proc, in
// the kernel's 10 ms ticks (USER_HZ is 100 on Linux).
func processCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses: utime and
	// stime are the 12th and 13th of them.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * cpuTick, nil
}
