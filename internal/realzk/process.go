package realzk

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/freeport"
)

// Deadlines are generous because tests must hold on a loaded two-core
// machine where a JVM can take many seconds to come up.
const (
	// ReadyTimeout bounds how long a started server may take to answer imok.
	ReadyTimeout = 60 * time.Second
	// stopTimeout is how long a server gets to exit after SIGTERM before
	// its process group is killed.
	stopTimeout = 15 * time.Second
	// startAttempts covers the window between FreePort closing its listener
	// and the server binding the port, in which another process may take it.
	startAttempts = 3
)

// Server is a server process started for a test.
type Server struct {
	// Addr is the client address, "127.0.0.1:port".
	Addr string
	// PID is the server's process id; it leads its own process group.
	PID int
	// Dir is the server's private directory (configuration, data, logs).
	Dir string
	// LogFile receives the server's logs and its stdout and stderr.
	LogFile string

	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd.Wait returns
	waitErr  error         // cmd.Wait's result, set before exited is closed
	stopOnce sync.Once
	stopErr  error
}

// Exited is closed when the server process has exited.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Stop ends the server: SIGTERM to its process group, SIGKILL if it has not
// exited within a deadline. It waits for the process and is safe to call
// more than once; tests rarely need it because Start registers it as a
// cleanup.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

func (s *Server) stop() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	// The negative pid addresses the whole group, so a wrapper script's
	// children die with it.
	_ = syscall.Kill(-s.PID, syscall.SIGTERM)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-s.exited:
		return nil
	case <-timer.C:
	}
	_ = syscall.Kill(-s.PID, syscall.SIGKILL)
	kill := time.NewTimer(stopTimeout)
	defer kill.Stop()
	select {
	case <-s.exited:
		return fmt.Errorf("pid %d ignored SIGTERM for %v and was killed", s.PID, stopTimeout)
	case <-kill.C:
		return fmt.Errorf("pid %d survived SIGKILL for %v", s.PID, stopTimeout)
	}
}

func (s *Server) port() int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}

// LogTail returns the last n bytes of the server's log, for failure messages.
func (s *Server) LogTail(n int) string {
	return tail(s.LogFile, n)
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// readyFunc reports whether the server at addr serves clients yet.
type readyFunc func(addr string, timeout time.Duration) error

// answersImok is ready once ruok is answered with imok.
func answersImok(addr string, timeout time.Duration) error {
	reply, err := FourLetterWord(addr, "ruok", timeout)
	if err == nil && reply != "imok" {
		err = fmt.Errorf("ruok answered %q", reply)
	}
	return err
}

// launch starts cmd in its own process group with stdout and stderr
// appended to logFile, and waits until ready says the server at addr serves.
func launch(cmd *exec.Cmd, addr, dir, logFile string, ready readyFunc) (*Server, error) {
	s, err := startProcess(cmd, addr, dir, logFile)
	if err != nil {
		return nil, err
	}
	if err := s.waitReady(ready, ReadyTimeout); err != nil {
		stopErr := s.Stop()
		return nil, errors.Join(err, stopErr)
	}
	return s, nil
}

// startProcess starts cmd in its own process group with stdout and
// stderr appended to logFile, and reaps it when it exits.
func startProcess(cmd *exec.Cmd, addr, dir, logFile string) (*Server, error) {
	out, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child holds its own copy
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	s := &Server{Addr: addr, PID: cmd.Process.Pid, Dir: dir, LogFile: logFile, cmd: cmd, exited: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// Kill ends the server with SIGKILL, as a crash would, and waits for it
// to exit.
func (s *Server) Kill() error {
	_ = syscall.Kill(-s.PID, syscall.SIGKILL)
	select {
	case <-s.exited:
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("pid %d survived SIGKILL for %v", s.PID, stopTimeout)
	}
}

// Relaunch starts an exited server's command again (the same binary,
// flags, directory, data and address) and returns it once ready says it
// serves, polled every few milliseconds so that benchmarks can time a
// restart from the moment of exec; the returned duration is that time.
// The new process is stopped by its pid when the test ends.
func (s *Server) Relaunch(tb testing.TB, ready func(addr string, timeout time.Duration) error) (*Server, time.Duration) {
	tb.Helper()
	select {
	case <-s.exited:
	default:
		tb.Fatalf("relaunch %s: pid %d is still running", s.Addr, s.PID)
	}
	cmd := exec.Command(s.cmd.Path, s.cmd.Args[1:]...)
	cmd.Dir, cmd.Env = s.cmd.Dir, s.cmd.Env
	start := time.Now()
	n, err := startProcess(cmd, s.Addr, s.Dir, s.LogFile)
	if err != nil {
		tb.Fatalf("relaunch %s: %v", s.Addr, err)
	}
	tb.Cleanup(func() { _ = n.Stop() })
	deadline := start.Add(ReadyTimeout)
	for {
		err := ready(n.Addr, time.Second)
		if err == nil {
			return n, time.Since(start)
		}
		select {
		case <-n.exited:
			tb.Fatalf("relaunch %s: exited before serving (%v); log:\n%s", n.Addr, n.waitErr, n.LogTail(4<<10))
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("relaunch %s: not serving after %v: %v", n.Addr, ReadyTimeout, err)
		}
	}
}

// Serving reports whether the server at addr serves clients: for
// ZooKeeper, srvr says so (it answers ruok before its database is loaded);
// hutch answers srvr only once its state is open.
func Serving(addr string, timeout time.Duration) error {
	reply, err := FourLetterWord(addr, "srvr", timeout)
	if err == nil && !strings.Contains(reply, "Mode: ") {
		err = fmt.Errorf("srvr answered %q", reply)
	}
	return err
}

// errExited reports a server that exited before it was ready.
var errExited = errors.New("server exited before answering imok")

func (s *Server) waitReady(ready readyFunc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	backoff := 50 * time.Millisecond
	var last error
	for {
		probe := min(5*time.Second, time.Until(deadline))
		if probe <= 0 {
			return fmt.Errorf("%s not ready after %v (last probe: %v)", s.Addr, timeout, last)
		}
		last = ready(s.Addr, probe)
		if last == nil {
			if listensOn(s.PID, s.port()) {
				return nil
			}
			last = fmt.Errorf("another process answers on %s", s.Addr)
		}
		timer := time.NewTimer(min(backoff, time.Until(deadline)))
		select {
		case <-s.exited:
			timer.Stop()
			return fmt.Errorf("%w: %v", errExited, s.waitErr)
		case <-timer.C:
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// startWithRetry calls try with a fresh free port until it succeeds, fails
// for a reason other than the port being taken, or runs out of attempts.
func startWithRetry(tb testing.TB, what string, try func(port int) (*Server, error)) *Server {
	tb.Helper()
	var errs []error
	for range startAttempts {
		s, err := try(FreePort(tb))
		if err == nil {
			tb.Cleanup(func() {
				if err := s.Stop(); err != nil {
					tb.Errorf("stop %s: %v", what, err)
				}
				if tb.Failed() {
					tb.Logf("%s log tail (%s):\n%s", what, s.LogFile, s.LogTail(8<<10))
				}
			})
			return s
		}
		errs = append(errs, err)
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	tb.Fatalf("start %s: %v", what, errors.Join(errs...))
	return nil
}

// errPortTaken marks a start that failed because the port was taken between
// FreePort and the server's bind.
var errPortTaken = errors.New("port taken")

// classifyStartError wraps err with errPortTaken when the server's log says
// the address was in use.
func classifyStartError(err error, logFile string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, errExited) && strings.Contains(tail(logFile, 64<<10), "ddress already in use") {
		return fmt.Errorf("%w: %w", errPortTaken, err)
	}
	return fmt.Errorf("%w\nlog tail (%s):\n%s", err, logFile, tail(logFile, 4<<10))
}

// FreePort returns a loopback TCP port that was free a moment ago on
// 127.0.0.1 and that it has not returned before (package freeport).
// Another process may take it before the caller binds it; the Start
// functions retry.
func FreePort(tb testing.TB) int {
	tb.Helper()
	return FreePortOn(tb, "127.0.0.1")
}

// FreePortOn is FreePort for another loopback address, such as a node's
// own 127.0.0.3: a port free on one address may be taken on another.
func FreePortOn(tb testing.TB, ip string) int {
	tb.Helper()
	port, err := freeport.Pick(ip)
	if err != nil {
		tb.Fatal(err)
	}
	return port
}

// FourLetterWord sends a four-letter word such as "ruok" or "srvr" to addr
// and returns the whole reply, read until the server closes the connection.
func FourLetterWord(addr, cmd string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(deadline); err != nil {
		return "", err
	}
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return string(b), err
	}
	return string(b), nil
}

// Unavailable skips the test because a tool it needs (what) is not
// installed, or fails it when CI=true: a CI run must not quietly drop the
// real-ZooKeeper side.
func Unavailable(tb testing.TB, what string) {
	tb.Helper()
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		tb.Fatalf("%s is not installed: real ZooKeeper side skipped under CI (run scripts/test.sh to install it)", what)
	}
	tb.Skipf("%s is not installed (scripts/test.sh installs it)", what)
}
