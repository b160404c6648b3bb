package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is one run of hutch cli: its arguments (what follows "hutch
// cli") and its standard streams.
type Config struct {
	Args   []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Interrupt delivers SIGINT: it stops a running watch command, and
	// at any other time ends hutch cli through Exit.
	Interrupt <-chan os.Signal
	// Exit ends the process after an interrupt; nil uses os.Exit.
	Exit func(code int)
}

// Main runs hutch cli on the process's standard streams and returns its
// exit status.
func Main(args []string) int {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	return Run(Config{Args: args, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Interrupt: sig})
}

// defaultServer is zkCli's default connect string.
const defaultServer = "localhost:2181"

// invocation is hutch cli's command line.
type invocation struct {
	server    string
	timeout   time.Duration
	keepGoing bool
	readOnly  bool     // -r: the session may be served read-only
	command   []string // a command to run alone, or nil
}

// parseInvocation reads zkCli's options (-server, -timeout, -r,
// -waitforconnection) and hutch cli's -keep-going, each with one dash as
// zkCli spells them or two; the first word that is not an option starts
// the command. pflag cannot be used: it reads -server as -s -e -r -v...
func parseInvocation(args []string) (invocation, bool, error) {
	inv := invocation{server: defaultServer, timeout: 30 * time.Second}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			inv.command = args[i:]
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		needValue := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("no argument found for option %s", a)
			}
			i++
			return args[i], nil
		}
		switch name {
		case "server":
			v, err := needValue()
			if err != nil {
				return inv, false, err
			}
			inv.server = v
		case "timeout":
			v, err := needValue()
			if err != nil {
				return inv, false, err
			}
			ms, err := strconv.Atoi(v)
			if err != nil || ms <= 0 {
				return inv, false, fmt.Errorf("-timeout %q is not a positive number of milliseconds", v)
			}
			inv.timeout = time.Duration(ms) * time.Millisecond
		case "keep-going":
			inv.keepGoing = true
		case "r":
			inv.readOnly = true
		case "waitforconnection":
			// Commands always wait for the connection.
		case "h", "help":
			return inv, true, nil
		default:
			return inv, false, fmt.Errorf("unknown option %s", a)
		}
	}
	return inv, false, nil
}

const helpText = `Usage: hutch cli [-server host:port[,host:port...]] [-timeout ms] [-r] [-keep-going] [command args...]

A ZooKeeper client that answers as ZooKeeper 3.8's zkCli.sh does, for any
ZooKeeper-compatible server. The server defaults to localhost:2181 and the
session timeout to 30000 ms, as zkCli's. With -r the session may be
served read-only by a member without a quorum (canBeReadOnly): the prompt
then says CONNECTEDREADONLY, writes fail with "Not a read-only call", and
hutch cli moves to a read-write server as soon as it finds one.

With a command it runs that one command and exits. Without one it reads
commands from stdin: interactively, with history and tab completion of
commands and znode paths, when stdin is a terminal; otherwise as a script,
line by line, stopping at the first command that fails unless -keep-going
is given. An unknown word, such as "help", lists the commands, as in zkCli.

Exit status: that of the last command run: 0 when it succeeded, 1 when it
failed, 127 for an unknown command; 2 for a wrong hutch cli option; 130 when
interrupted outside a watch.

Where hutch cli differs from zkCli.sh:
  - errors are named, never numbered: sync prints "Sync has failed.
    rc=CONNECTIONLOSS" where zkCli prints rc=-4;
  - a command that fails without zkCli calling it an error exits 1 here:
    "Not connected", addauth refused by the server (hutch cli waits for the
    server's answer), sync failing, deleteall failing part way, setquota,
    listquota and delquota refusing or finding no quota;
  - setquota, listquota and delquota print Java's message for limits or
    stats that do not parse, where zkCli dies of the exception;
  - no start-up banner and no event for the first connection; the session
    is closed on exit (zkCli leaves it to expire);
  - watch [-R] [-n count] path adds a persistent (recursive with -R) watch
    and prints its events until interrupted, until stdin ends in a script
    (without -n), or after count events; then removes it;
  - removewatches is not offered; a connect string with a chroot is
    refused.
`

// Run runs hutch cli as cfg says and returns its exit status.
func Run(cfg Config) int {
	inv, help, err := parseInvocation(cfg.Args)
	if help {
		fmt.Fprint(cfg.Stdout, helpText)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(cfg.Stderr, "hutch cli: %v\n", err)
		return exitUsage
	}
	s := newSession(inv.server, inv.timeout, cfg.Stdout, cfg.Stderr)
	s.readOnly = inv.readOnly
	exit := cfg.Exit
	if exit == nil {
		exit = os.Exit
	}

	var restoreMu sync.Mutex
	var restore func() // puts the terminal back, in interactive mode
	stopSignals := make(chan struct{})
	defer close(stopSignals)
	if cfg.Interrupt != nil {
		go func() {
			for {
				select {
				case <-stopSignals:
					return
				case <-cfg.Interrupt:
					if s.interrupt() {
						continue
					}
					s.close()
					restoreMu.Lock()
					if restore != nil {
						restore()
					}
					restoreMu.Unlock()
					exit(exitInterrupted)
					return
				}
			}
		}()
	}

	if err := s.connect(inv.server, true); err != nil {
		fmt.Fprintf(cfg.Stderr, "hutch cli: %v\n", err)
		return exitUsage
	}
	defer s.close()

	if inv.command != nil {
		code, _ := s.process(inv.command)
		return code
	}
	if t, ok := terminalOf(cfg.Stdin, cfg.Stdout); ok {
		return s.interactive(t, func(r func()) {
			restoreMu.Lock()
			restore = r
			restoreMu.Unlock()
		})
	}
	return s.script(cfg.Stdin, inv.keepGoing)
}

// script runs the lines of in as commands, stopping at the first that
// fails unless keepGoing. The exit status is that of the last command run.
func (s *session) script(in io.Reader, keepGoing bool) int {
	q := newLineQueue(in)
	s.inputDone = q.ended
	for {
		line, ok := q.next()
		if !ok {
			break
		}
		code, quit := s.executeLine(line)
		if quit || (code != exitOK && !keepGoing) {
			break
		}
	}
	return s.lastCode
}

// lineQueue reads lines ahead of the commands, so that the end of input
// is noticed while a command (watch) runs.
type lineQueue struct {
	mu    sync.Mutex // guards lines and eof
	lines []string
	eof   bool
	more  chan struct{} // signalled when a line arrives or input ends
	ended chan struct{} // closed at the end of input
}

func newLineQueue(in io.Reader) *lineQueue {
	q := &lineQueue{more: make(chan struct{}, 1), ended: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			q.mu.Lock()
			q.lines = append(q.lines, strings.TrimSuffix(sc.Text(), "\r"))
			q.mu.Unlock()
			q.signal()
		}
		q.mu.Lock()
		q.eof = true
		q.mu.Unlock()
		close(q.ended)
		q.signal()
	}()
	return q
}

func (q *lineQueue) signal() {
	select {
	case q.more <- struct{}{}:
	default:
	}
}

// next returns the next line, or false at the end of input.
func (q *lineQueue) next() (string, bool) {
	for {
		q.mu.Lock()
		if len(q.lines) > 0 {
			line := q.lines[0]
			q.lines = q.lines[1:]
			q.mu.Unlock()
			return line, true
		}
		eof := q.eof
		q.mu.Unlock()
		if eof {
			return "", false
		}
		<-q.more
	}
}
