package cli

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkclient"
)

// Exit statuses of hutch cli. A command that fails exits with 1, as zkCli's
// CliException; an unknown command with 127, as its CommandNotFoundException.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2   // hutch cli's own options were wrong
	exitNotFound    = 127 // no such command
	exitInterrupted = 130 // SIGINT outside a watch
)

// session is one zkCli-like session: the ZooKeeper client, what zkCli
// keeps between commands (history, printwatches) and where output goes.
type session struct {
	host     string // connect string, shown in the prompt
	timeout  time.Duration
	readOnly bool // -r: sessions may be served read-only (canBeReadOnly)

	outMu sync.Mutex // serialises writes to out and errOut
	out   io.Writer  // command results (zkCli's System.out)
	err   io.Writer  // messages and errors (zkCli's System.err)

	zk           *zkclient.Client // replaced by connect; only the command goroutine touches it
	printWatches atomic.Bool
	history      map[int]string
	count        int // commands run, numbering the history
	lastCode     int // exit status of the last command

	// inputDone is closed when stdin has ended in script mode; nil
	// otherwise. A watch without -n ends with it.
	inputDone <-chan struct{}

	watchMu sync.Mutex  // guards active
	active  *watchState // the running watch command, or nil
}

func newSession(host string, timeout time.Duration, out, errOut io.Writer) *session {
	s := &session{host: host, timeout: timeout, out: out, err: errOut, history: map[int]string{}}
	s.printWatches.Store(true)
	return s
}

// printOut and printErr write one piece of output atomically with
// respect to events printed meanwhile.
func (s *session) printOut(text string) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	io.WriteString(s.out, text)
}

func (s *session) printErr(text string) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	io.WriteString(s.err, text)
}

// connect opens a new session to host, closing the current one, as zkCli's
// connectToZK. The first SyncConnected of the session hutch cli starts
// with is not printed (zkCli prints it as part of its start-up banner);
// later connections print theirs as zkCli does.
func (s *session) connect(host string, quietStart bool) error {
	if s.zk != nil && s.zk.State().Alive() {
		s.zk.Close()
	}
	s.host = host
	servers, err := zkclient.ParseServers(host)
	if err != nil {
		s.zk = nil
		return err
	}
	skip := quietStart
	zk, err := zkclient.New(zkclient.Config{
		Servers:        servers,
		SessionTimeout: s.timeout,
		CanBeReadOnly:  s.readOnly,
		Watcher: func(ev zkclient.Event) {
			if skip {
				skip = false
				if ev.Type == wire.EventNone && (ev.State == wire.StateSyncConnected || ev.State == wire.StateConnectedReadOnly) {
					return
				}
			}
			s.onEvent(ev)
		},
	})
	s.zk = zk
	return err
}

// close ends the session without printing its Closed event.
func (s *session) close() {
	if s.zk != nil {
		s.printWatches.Store(false)
		s.zk.Close()
	}
}

// onEvent prints an event as zkCli's default watcher does and feeds the
// running watch command.
func (s *session) onEvent(ev zkclient.Event) {
	if s.printWatches.Load() {
		s.printOut("\nWATCHER::\n\n" + ev.String() + "\n")
	}
	s.watchMu.Lock()
	if w := s.active; w != nil {
		w.observe(ev)
	}
	s.watchMu.Unlock()
}

// interrupt stops the running watch command and reports whether there was
// one; SIGINT at any other time ends hutch cli.
func (s *session) interrupt() bool {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.active == nil {
		return false
	}
	s.active.stop()
	return true
}

// executeLine runs one line as zkCli's executeLine: an empty line does
// nothing; otherwise the line joins the history and runs. It reports the
// line's exit status and whether it was quit.
func (s *session) executeLine(line string) (code int, quit bool) {
	if line == "" {
		return s.lastCode, false
	}
	args := splitLine(line)
	if len(args) == 0 {
		// zkCli would run the previous command again; a blank line
		// does nothing here.
		return s.lastCode, false
	}
	s.history[s.count] = line
	code, quit = s.process(args)
	s.count++
	if !quit {
		s.lastCode = code
	}
	return s.lastCode, quit
}

// process runs one parsed command as zkCli's processZKCmd: the commands of
// the shell itself first, then, with a live session, the rest.
func (s *session) process(args []string) (code int, quit bool) {
	name := args[0]
	cmd, ok := commands[name]
	if !ok {
		s.usage()
		// zkCli says it twice: its CommandNotFoundException is given
		// "Command not found <cmd>" and prefixes "Command not found: ".
		s.report(&failure{msg: "Command not found: Command not found " + name, code: exitNotFound})
		return exitNotFound, false
	}
	code = exitOK
	switch name {
	case "quit":
		return s.lastCode, true
	case "redo":
		if len(args) >= 2 {
			code = s.redo(args[1])
		}
	case "history":
		var b strings.Builder
		for i := max(s.count-10, 0); i <= s.count; i++ {
			fmt.Fprintf(&b, "%d - %s\n", i, s.history[i])
		}
		s.printOut(b.String())
	case "printwatches":
		if len(args) == 1 {
			state := "off"
			if s.printWatches.Load() {
				state = "on"
			}
			s.printOut("printwatches is " + state + "\n")
		} else {
			s.printWatches.Store(args[1] == "on")
		}
	case "connect":
		host := s.host
		if len(args) >= 2 {
			host = args[1]
		}
		if err := s.connect(host, false); err != nil {
			s.report(fail(err.Error()))
			return exitFailure, false
		}
	}
	if s.zk == nil || !s.zk.State().Alive() {
		s.printOut("Not connected\n")
		if cmd.run != nil {
			// zkCli carries on as if nothing failed; a script should not.
			return exitFailure, false
		}
		return code, false
	}
	if cmd.run == nil {
		return code, false
	}
	if err := cmd.run(s, name+" "+cmd.usage, args); err != nil {
		return s.report(err), false
	}
	return exitOK, false
}

// redo runs history entry n again, as zkCli's redo.
func (s *session) redo(n string) int {
	i, err := strconv.ParseInt(n, 0, 32)
	if err != nil || i < 0 || int(i) >= s.count {
		return s.report(fail("Command index out of range"))
	}
	args := splitLine(s.history[int(i)])
	if len(args) > 0 && args[0] == "redo" {
		return s.report(fail("No redoing redos"))
	}
	s.history[s.count] = s.history[int(i)]
	code, _ := s.process(args)
	return code
}

// report prints a failure's message on stderr and returns its exit status.
func (s *session) report(err error) int {
	f, ok := err.(*failure)
	if !ok {
		f = fail(err.Error())
	}
	if f.msg != "" {
		s.printErr(f.msg + "\n")
	}
	return f.code
}

// usage prints the command summary on stderr, as zkCli's usage().
func (s *session) usage() {
	var b strings.Builder
	b.WriteString(usageLine + "\n")
	for _, name := range commandNames() {
		fmt.Fprintf(&b, "\t%s %s\n", name, commands[name].usage)
	}
	s.printErr(b.String())
}

// usageLine heads the command summary.
const usageLine = "hutch cli [-server host:port[,host:port...]] [-timeout ms] [-r] [-keep-going] cmd args"

// commandNames lists the commands in zkCli's order (Java's String order).
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// watchState is a running watch command: it counts the events under its
// path and ends after want of them (0: never), or when stopped.
type watchState struct {
	path      string
	recursive bool
	want      int
	seen      int
	done      chan struct{}
	closeOnce sync.Once
}

func (w *watchState) stop() { w.closeOnce.Do(func() { close(w.done) }) }

// observe counts ev if the watch reports it: a node event on the path, or
// below it for a recursive watch.
func (w *watchState) observe(ev zkclient.Event) {
	if ev.Type == wire.EventNone {
		return
	}
	under := ev.Path == w.path || (w.recursive && (w.path == "/" || strings.HasPrefix(ev.Path, w.path+"/")))
	if !under {
		return
	}
	w.seen++
	if w.want > 0 && w.seen >= w.want {
		w.stop()
	}
}
