package conformance

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// console drives an interactive command-line client the way a person at a
// terminal would: lines go to its stdin, and its stdout and stderr, merged
// in one pipe as a terminal would show them, come back line by line to be
// matched with expect. Everything it printed is shown if the test fails.
type console struct {
	tb         testing.TB
	name       string
	cmd        *exec.Cmd
	stdin      io.WriteCloser
	lines      chan string   // output lines; closed at EOF
	stop       chan struct{} // closed by close to release the reader
	exited     chan struct{} // closed when the process has been waited for
	transcript *logBuffer
}

// startConsole starts cmd in its own process group. The process is ended
// when the test ends if close has not ended it already.
func startConsole(tb testing.TB, name string, cmd *exec.Cmd) *console {
	tb.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stdout = w
	cmd.Stderr = w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		tb.Fatalf("start %s: %v", name, err)
	}
	w.Close() // the child holds the write end now; EOF comes when it exits
	c := &console{
		tb:         tb,
		name:       name,
		cmd:        cmd,
		stdin:      stdin,
		lines:      make(chan string, 1024),
		stop:       make(chan struct{}),
		exited:     make(chan struct{}),
		transcript: newLogBuffer(),
	}
	go c.read(r)
	go func() {
		cmd.Wait()
		close(c.exited)
	}()
	dumpOnFailure(tb, name+" transcript", c.transcript)
	tb.Cleanup(c.close)
	return c
}

func (c *console) read(r *os.File) {
	defer r.Close()
	defer close(c.lines)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintf(c.transcript, "%s\n", line)
		select {
		case c.lines <- line:
		case <-c.stop:
			return
		}
	}
}

// send writes one line to the client's stdin.
func (c *console) send(line string) {
	c.tb.Helper()
	fmt.Fprintf(c.transcript, "> %s\n", line)
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		c.tb.Fatalf("%s: send %q: %v", c.name, line, err)
	}
}

// expect reads output lines until one matches re and returns its
// submatches; the test fails if none does within timeout or the output ends.
func (c *console) expect(re *regexp.Regexp, timeout time.Duration) []string {
	c.tb.Helper()
	m, _ := c.expectLines(re, timeout)
	return m
}

// expectLines is expect that also returns every line read, the matching one
// last, for output that spans lines such as a stat.
func (c *console) expectLines(re *regexp.Regexp, timeout time.Duration) ([]string, []string) {
	c.tb.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var seen []string
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.tb.Fatalf("%s: output ended while waiting for /%s/", c.name, re)
			}
			seen = append(seen, line)
			if m := re.FindStringSubmatch(line); m != nil {
				return m, seen
			}
		case <-timer.C:
			c.tb.Fatalf("%s: no line matching /%s/ within %v", c.name, re, timeout)
		}
	}
}

// waitExit waits for the client to exit on its own, e.g. after quit.
func (c *console) waitExit(timeout time.Duration) {
	c.tb.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-c.exited:
	case <-timer.C:
		c.tb.Fatalf("%s: still running %v after it was told to quit", c.name, timeout)
	}
}

// close ends the client: stdin is closed, which interactive clients take as
// quit, then its process group gets SIGTERM and finally SIGKILL.
func (c *console) close() {
	c.stdin.Close()
	pid := c.cmd.Process.Pid
	for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
		if sig != 0 {
			_ = syscall.Kill(-pid, sig)
		}
		timer := time.NewTimer(10 * time.Second)
		select {
		case <-c.exited:
			timer.Stop()
			close(c.stop)
			return
		case <-timer.C:
		}
	}
	close(c.stop)
	c.tb.Errorf("%s: pid %d survived SIGKILL", c.name, pid)
}

// runCommand runs a one-shot client command to completion and returns its
// merged output; a non-zero exit or the deadline fails the test.
func runCommand(tb testing.TB, name string, cmd *exec.Cmd) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	run := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	run.Env, run.Dir = cmd.Env, cmd.Dir
	run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	run.Cancel = func() error { return syscall.Kill(-run.Process.Pid, syscall.SIGKILL) }
	run.WaitDelay = 10 * time.Second
	out, err := run.CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(cmd.Args[1:], " "), err, out)
	}
	return string(out)
}
