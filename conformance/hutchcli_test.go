package conformance

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
)

// hutch cli is checked side by side with zkCli.sh: the same commands go to
// both against the same server (real ZooKeeper, then hutch), and their
// output, normalised for what legitimately differs between two runs
// (zxids, times, session ids), must be the same line for line.
//
// Deliberate differences, which these checks therefore avoid or assert
// separately: hutch cli prints no start-up banner nor the first connection's
// event; where zkCli numbers an error (sync's rc=) it names it; it exits 1
// for "Not connected" and a refused addauth, which zkCli treats as success;
// its usage lists only the commands it offers; "version" is its own.

// hutchCLI returns the command running hutch cli from the hutch binary.
func hutchCLI(tb testing.TB, args ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(realzk.BuildHutch(tb), append([]string{"cli"}, args...)...)
	cmd.Dir = tb.TempDir()
	return cmd
}

// cliTargets are the servers the CLIs are compared on.
func cliTargets() []target {
	return []target{
		{name: "zookeeper", start: func(tb testing.TB) string { return realzk.Start(tb).Addr }},
		{name: "hutch", start: startHutch},
	}
}

// cliSentinel ends every step: zkCli and hutch cli both answer
// printwatches with its state, so a step's output is everything before it.
// A command that ends without a newline (setAcl -R's errors) leaves its
// text in front of it.
var cliSentinel = regexp.MustCompile(`^(.*)printwatches is (?:on|off)$`)

// cliEventLine is an event as zkCli prints it, after "WATCHER::".
var cliEventLine = regexp.MustCompile(`^WatchedEvent state:(\w+) type:(\w+) path:(.*)$`)

// cliStep is one command sent to one of the two sessions, A or B. events
// lists the ends of the events ("type:NodeCreated path:/x") that the command, or
// another session's earlier change, makes A or B print in this step; the
// step waits for them before ending.
type cliStep struct {
	who    string
	cmd    string
	events []string
}

// cliRun drives the sessions A and B of one client against one server.
type cliRun struct {
	t        *testing.T
	name     string
	consoles map[string]*console
	blocks   []string // the transcript, one block per step
}

// startCLIRun starts sessions A then B with newCmd and waits until each
// has a session, dropping what zkCli prints before its first command.
func startCLIRun(t *testing.T, name string, newCmd func() *exec.Cmd, banner bool) *cliRun {
	t.Helper()
	r := &cliRun{t: t, name: name, consoles: map[string]*console{}}
	for _, who := range []string{"A", "B"} {
		c := startConsole(t, name+" "+who, newCmd())
		if banner {
			c.expect(cliConnected, commandTimeout)
		}
		r.consoles[who] = c
		// A request waits for the session, which hutch cli opens without
		// saying so: B's must be open before A's first write, on both
		// runs, for the zxids to line up.
		c.send("sync /")
		r.sync(who, commandTimeout)
	}
	return r
}

// sync sends the sentinel to who and returns the lines printed before it.
func (r *cliRun) sync(who string, timeout time.Duration) []string {
	r.t.Helper()
	c := r.consoles[who]
	c.send("printwatches")
	m, lines := c.expectLines(cliSentinel, timeout)
	lines = lines[:len(lines)-1]
	if m[1] != "" {
		lines = append(lines, m[1])
	}
	return lines
}

// run sends a step and records its output in the transcript.
func (r *cliRun) run(s cliStep) {
	r.t.Helper()
	c := r.consoles[s.who]
	var lines []string
	if s.cmd != "" {
		c.send(s.cmd)
	}
	for range s.events {
		_, got := c.expectLines(cliEventLine, eventTimeout)
		lines = append(lines, got...)
	}
	lines = append(lines, r.sync(s.who, commandTimeout)...)
	for _, want := range s.events {
		if !slices.ContainsFunc(lines, func(l string) bool {
			return cliEventLine.MatchString(l) && strings.HasSuffix(l, " "+want)
		}) {
			r.t.Errorf("%s: %s> %s: no event %s in:\n%s", r.name, s.who, s.cmd, want, strings.Join(lines, "\n"))
		}
	}
	r.blocks = append(r.blocks, s.who+"> "+s.cmd+"\n"+strings.Join(lines, "\n"))
}

// quit ends both sessions.
func (r *cliRun) quit() {
	r.t.Helper()
	for _, who := range []string{"A", "B"} {
		r.consoles[who].send("quit")
		r.consoles[who].waitExit(commandTimeout)
	}
}

// cliNormaliser rewrites what differs between two runs of one script:
// zxids become offsets from the first one printed (the run's base), times
// "<time>", session ids S1, S2... in order of appearance. Events are
// sorted within their step, since a client prints them from another
// thread than the command's output.
type cliNormaliser struct {
	base     int64
	sessions map[string]string
}

var (
	cliZxidLine   = regexp.MustCompile(`^(cZxid|mZxid|pZxid) = 0x([0-9a-f]+)$`)
	cliTimeLine   = regexp.MustCompile(`^(ctime|mtime) = (.*)$`)
	cliJavaDate   = regexp.MustCompile(`^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d\d \d\d:\d\d:\d\d \S+ (\d{4})$`)
	cliOwnerLine  = regexp.MustCompile(`^ephemeralOwner = 0x([0-9a-f]+)$`)
	cliConnectArg = regexp.MustCompile(`connect \S+$`)
)

func (n *cliNormaliser) block(b string) string {
	header, body, _ := strings.Cut(b, "\n")
	header = cliConnectArg.ReplaceAllString(header, "connect <server>")
	var out, events []string
	for _, l := range strings.Split(body, "\n") {
		switch {
		case l == "WATCHER::" || cliEventLine.MatchString(l):
			// Each comes after an empty line of its own.
			for i := len(out) - 1; i >= 0; i-- {
				if out[i] == "" {
					out = slices.Delete(out, i, i+1)
					break
				}
			}
			if l != "WATCHER::" {
				events = append(events, l)
			}
			continue
		case cliZxidLine.MatchString(l):
			m := cliZxidLine.FindStringSubmatch(l)
			z, _ := strconv.ParseInt(m[2], 16, 64)
			if z != 0 && n.base == 0 {
				n.base = z
			}
			if z != 0 {
				l = fmt.Sprintf("%s = base%+d", m[1], z-n.base)
			}
		case cliTimeLine.MatchString(l):
			m := cliTimeLine.FindStringSubmatch(l)
			if d := cliJavaDate.FindStringSubmatch(m[2]); d != nil && d[3] != "1970" {
				l = m[1] + " = <time>"
			}
		case cliOwnerLine.MatchString(l):
			owner := cliOwnerLine.FindStringSubmatch(l)[1]
			// Containers (0x8000...) and TTL nodes (0xff...) carry no session.
			if owner != "0" && owner != "8000000000000000" && !strings.HasPrefix(owner, "ff") {
				if n.sessions[owner] == "" {
					n.sessions[owner] = fmt.Sprintf("S%d", len(n.sessions)+1)
				}
				l = "ephemeralOwner = " + n.sessions[owner]
			}
		}
		out = append(out, l)
	}
	for len(out) > 0 && out[len(out)-1] == "" && len(events) > 0 {
		out = out[:len(out)-1]
	}
	slices.Sort(events)
	return header + "\n" + strings.Join(append(out, events...), "\n")
}

func normaliseTranscript(blocks []string) []string {
	n := &cliNormaliser{sessions: map[string]string{}}
	out := make([]string, len(blocks))
	for i, b := range blocks {
		out[i] = n.block(b)
	}
	return out
}

// compareTranscripts calls report for each step whose normalised output
// differs, up to ten.
func compareTranscripts(report func(string, ...any), wantName string, want []string, gotName string, got []string) {
	want, got = normaliseTranscript(want), normaliseTranscript(got)
	reported := 0
	for i := range max(len(want), len(got)) {
		w, g := "(nothing)", "(nothing)"
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w == g {
			continue
		}
		if reported++; reported > 10 {
			report("more steps differ; first 10 shown")
			return
		}
		report("step %d differs:\n--- %s:\n%s\n--- %s:\n%s", i+1, wantName, w, gotName, g)
	}
}

// cliScenario is the script both clients run. It covers every command
// hutch cli shares with zkCli, their errors and the watches they leave.
func cliScenario(addr string) []cliStep {
	A := func(cmd string, events ...string) cliStep { return cliStep{who: "A", cmd: cmd, events: events} }
	B := func(cmd string, events ...string) cliStep { return cliStep{who: "B", cmd: cmd, events: events} }
	steps := []cliStep{
		A("create /cli root"),
		A("stat /cli"), // its cZxid is the base of the zxids that follow
		A("ls /"),
		A("create /cli/a hello"),
		A("get -s /cli/a"),
		A("ls -s /cli"),
		A("getAcl -s /cli/a"),
		A("create /cli/n"),
		A("get /cli/n"),
		A(`set /cli/n "two words"`),
		A("get /cli/n"),
		A("set -s -v 1 /cli/n 'single quoted'"),
		A("get /cli/n"),

		// Errors, as the server answers them and as the client refuses them.
		A("create /cli/a again"),
		A("get /cli/nope"),
		A("stat /cli/nope"),
		A("set -v 5 /cli/a x"),
		A("delete -v 5 /cli/a"),
		A("delete /cli"),
		A("delete /cli/nope 3"),
		A("ls cli"),
		A("get /cli/"),
		A("create /cli//x"),
		A("stat /cli/./x"),
		A("sync nope"),
		A("getEphemerals nope"),
		A("create /cli/bad x world:anyone"),
		A("create /cli/bad x ,"),
		A("create /cli/bad x auth::cdrwa"),
		A("create /cli/bad x digest:nocolon:cdrwa"),
		A("create /cli/bad x world:anyone:rxq"),
		A("getAcl /cli/bad"),
		A("create /cli/nope/deeper x"),
		A("ls -x /cli"),
		A("set -v"),
		A("ls"),
		A("get"),
		A("getAllChildrenNumber"),
		A("addWatch -m sometimes /cli"),
		A("addWatch /cli /extra"),
		A("create -c -e /cli/bad"),
		A("create -t 0 /cli/bad"),
		A("create -t soon /cli/bad"),
		A("create -t 5000 -e /cli/bad"),
		A("create -t 5000 -c /cli/bad"),
		A("ls -?"),
		A("stat /zookeeper watch"),
		A("ls /zookeeper watch"),

		// Every kind of node.
		A("create -e /cli/eph e"),
		A("create /cli/eph/child x"),
		A("stat /cli/eph"),
		A("create -s /cli/seq- s"),
		A("create -s -e /cli/seq- s"),
		A("create -s /cli/seq- s"),
		A("create -c /cli/cont"),
		A("create /cli/cont/child"),
		A("stat /cli/cont"),
		A("create -t 600000 /cli/ttl t"),
		A("stat /cli/ttl"),
		A("create -s -t 600000 /cli/ttls- t"),
		A("getEphemerals /cli"),
		A("getEphemerals"),
		B("getEphemerals"),
		A("getAllChildrenNumber /cli"),
		A("ls -R /cli"),
		A("ls -R /cli/nope"),

		// One-shot watches fire once, whoever makes the change.
		A("get -w /cli/a"),
		B("set /cli/a changed"),
		A("", "type:NodeDataChanged path:/cli/a"),
		B("set /cli/a again"),
		A("ls -w /cli"),
		B("create /cli/b bee"),
		A("", "type:NodeChildrenChanged path:/cli"),
		A("stat -w /cli/late"),
		B("create /cli/late"),
		A("", "type:NodeCreated path:/cli/late"),
		A("get -w /cli/b"),
		A("set /cli/b bee2", "type:NodeDataChanged path:/cli/b"),
		// Persistent watches fire every time: recursive for the subtree,
		// plain for the node and its children list.
		A("create /cli/r"),
		A("addWatch /cli/r"),
		B("create /cli/r/x"),
		A("", "type:NodeCreated path:/cli/r/x"),
		B("set /cli/r/x d"),
		A("", "type:NodeDataChanged path:/cli/r/x"),
		A("create /cli/p"),
		A("addWatch -m PERSISTENT /cli/p"),
		B("create /cli/p/c"),
		A("", "type:NodeChildrenChanged path:/cli/p"),
		B("set /cli/p d"),
		A("", "type:NodeDataChanged path:/cli/p"),
		B("delete /cli/p/c"),
		A("", "type:NodeChildrenChanged path:/cli/p"),

		// ACLs and authentication.
		A("create /cli/secret s digest:" + digestID("u:p") + ":cdrwa"),
		A("get /cli/secret"),
		A("getAcl /cli/secret"),
		B("get /cli/secret"),
		B("whoami"),
		B("addauth digest u:p"),
		B("whoami"),
		B("get /cli/secret"),
		B("getAcl /cli/secret"),
		A("create /cli/mine m auth::cdrwa"),
		B("create /cli/mine m auth::cdrwa"),
		B("getAcl /cli/mine"),
		A("setAcl /cli/a world:anyone:r"),
		A("set /cli/a x"),
		A("getAcl /cli/a"),
		A("setAcl -s /cli/b world:anyone:cdrwa"),
		A("setAcl -v 5 /cli/b world:anyone:cdrwa"),
		A("setAcl /cli/b ,"),
		A("setAcl /cli/b"),
		A("setAcl -R /cli/r world:anyone:cdr"),
		A("getAcl /cli/r/x"),
		A("setAcl -R /cli/r world:anyone:cdr"),
		A("setAcl -R /cli/nope world:anyone:cdr"),

		// The rest of the commands.
		A("sync /cli"),
		A("config"),
		A("config -c"),
		A("config -s"),
		A("whoami"),
		A("history"),
		A("redo"), // filled in below
		A("redo 9999"),
		A("deleteall /cli/nope"),
		A("deleteall /cli/r -b x"),
		A("deleteall /cli/r", "type:NodeDeleted path:/cli/r/x", "type:NodeDeleted path:/cli/r"),
		A("ls /cli"),
		A("delete /cli/b"),
		A("close", "state:Closed type:None path:null"),
		A("ls /cli"),
		A("connect "+addr, "state:SyncConnected type:None path:null"),
		A("ls /cli"),
		A("getEphemerals"),
		A("printwatches off"),
		// B holds the digest identity that can read every node left.
		B("deleteall /cli"),
		B("ls /"),
	}
	for i := range steps {
		if steps[i].cmd == "redo" {
			steps[i].cmd = "redo " + strconv.Itoa(cliHistoryIndex(steps, "ls /"))
		}
	}
	return steps
}

// cliHistoryIndex is the number zkCli's history gives to A's first run of
// cmd in steps: A ran "sync /" and the sentinel on starting, then each
// step's command and a sentinel.
func cliHistoryIndex(steps []cliStep, cmd string) int {
	n := 2
	for _, s := range steps {
		if s.who != "A" {
			continue
		}
		if s.cmd == cmd {
			return n
		}
		if s.cmd != "" {
			n++
		}
		n++
	}
	return -1
}

// TestHutchCLI runs the scenario through zkCli.sh and then through hutch
// cli against the same server, for ZooKeeper and for hutch, and compares
// the two transcripts step by step. How zkCli's transcripts differ between
// the two servers is logged: that is the server's conformance, checked
// elsewhere, not the client's.
func TestHutchCLI(t *testing.T) {
	zkCliSaw := map[string][]string{}
	defer func() {
		if zk, hutch := zkCliSaw["zookeeper"], zkCliSaw["hutch"]; zk != nil && hutch != nil {
			compareTranscripts(t.Logf, "zkCli on zookeeper", zk, "zkCli on hutch", hutch)
		}
	}()
	for _, tg := range cliTargets() {
		t.Run(tg.name, func(t *testing.T) {
			addr := tg.start(t)
			runScenario := func(name string, newCmd func() *exec.Cmd, banner bool) []string {
				r := startCLIRun(t, name, newCmd, banner)
				for _, s := range cliScenario(addr) {
					r.run(s)
				}
				r.quit()
				// The next run needs the tree as this one found it.
				if last := r.blocks[len(r.blocks)-1]; !strings.HasSuffix(last, "\n[zookeeper]") {
					t.Fatalf("%s did not clean up after itself:\n%s", name, last)
				}
				return r.blocks
			}
			want := runScenario("zkCli", func() *exec.Cmd { return zkCli(t, "-server", addr) }, true)
			got := runScenario("hutch cli", func() *exec.Cmd { return hutchCLI(t, "-server", addr, "-keep-going") }, false)
			zkCliSaw[tg.name] = want
			compareTranscripts(t.Errorf, "zkCli", want, "hutch cli", got)
		})
	}
}

// cliResult is what a one-shot or script run printed and its exit status.
type cliResult struct {
	out  string
	code int
}

// runCLI runs cmd with stdin to completion, bounded by commandTimeout.
func runCLI(tb testing.TB, cmd *exec.Cmd, stdin string) cliResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	run := groupCommand(ctx, cmd.Path, cmd.Args[1:]...)
	run.Env, run.Dir = cmd.Env, cmd.Dir
	run.Stdin = strings.NewReader(stdin)
	out, err := run.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return cliResult{out: string(out), code: exit.ExitCode()}
	case err != nil:
		tb.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return cliResult{out: string(out)}
}

// zkCliNoise matches what zkCli prints besides command output: slf4j's
// warnings, its banner and the connection events of its session.
var zkCliNoise = regexp.MustCompile(`^(SLF4J: .*|Connecting to .*|Welcome to ZooKeeper!|JLine support is (en|dis)abled|WATCHER::|WatchedEvent state:(SyncConnected|Closed) type:None path:null|)$`)

// cliOutput drops zkCli's noise (and blank lines, which hutch cli's
// commands here do not print) from out.
func cliOutput(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if !zkCliNoise.MatchString(l) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestHutchCLIOneShot runs single commands given on the command line, as
// scripts use zkCli, and compares output and exit status.
func TestHutchCLIOneShot(t *testing.T) {
	for _, tg := range cliTargets() {
		t.Run(tg.name, func(t *testing.T) {
			addr := tg.start(t)
			cases := []struct {
				args []string
				code int // zkCli's exit status
			}{
				{[]string{"create", "/oneshot", "data"}, 0},
				{[]string{"create", "/oneshot", "data"}, 1},
				{[]string{"get", "-s", "/oneshot"}, 0},
				{[]string{"ls", "/"}, 0},
				{[]string{"ls", "/nope"}, 1},
				{[]string{"set", "-v", "3", "/oneshot", "x"}, 1},
				{[]string{"get"}, 1},
				{[]string{"ls", "nope"}, 1},
				{[]string{"delete", "/oneshot"}, 0},
				{[]string{"stat", "/oneshot"}, 1},
			}
			// Each client runs them all in turn; zkCli leaves the tree as
			// it found it.
			run := func(client func(tb testing.TB, args ...string) *exec.Cmd) ([]string, []int) {
				var blocks []string
				var codes []int
				for _, c := range cases {
					r := runCLI(t, client(t, append([]string{"-server", addr}, c.args...)...), "")
					blocks = append(blocks, strings.Join(c.args, " ")+"\n"+cliOutput(r.out))
					codes = append(codes, r.code)
				}
				return blocks, codes
			}
			want, wantCodes := run(zkCli)
			got, gotCodes := run(hutchCLI)
			for i, c := range cases {
				what := strings.Join(c.args, " ")
				if wantCodes[i] != c.code {
					t.Errorf("zkCli %s: exit status %d, want %d", what, wantCodes[i], c.code)
				}
				if gotCodes[i] != wantCodes[i] {
					t.Errorf("hutch cli %s: exit status %d, zkCli's %d", what, gotCodes[i], wantCodes[i])
				}
			}
			compareTranscripts(t.Errorf, "zkCli", want, "hutch cli", got)

			// An unknown command lists the commands (each client its own)
			// and exits 127 with zkCli's doubled message.
			zk := runCLI(t, zkCli(t, "-server", addr, "nosuch"), "")
			hc := runCLI(t, hutchCLI(t, "-server", addr, "nosuch"), "")
			const msg = "Command not found: Command not found nosuch"
			if zk.code != 127 || hc.code != 127 {
				t.Errorf("unknown command: exit status zkCli %d, hutch cli %d, want 127", zk.code, hc.code)
			}
			if !strings.Contains(zk.out, msg) || !strings.Contains(hc.out, msg) {
				t.Errorf("unknown command: want %q from both\nzkCli:\n%s\nhutch cli:\n%s", msg, zk.out, hc.out)
			}
			// No server: both report the connection loss and exit 1.
			dead := "127.0.0.1:" + strconv.Itoa(realzk.FreePort(t))
			zk = runCLI(t, zkCli(t, "-server", dead, "-timeout", "3000", "ls", "/"), "")
			hc = runCLI(t, hutchCLI(t, "-server", dead, "-timeout", "3000", "ls", "/"), "")
			if hc.code != 1 || zk.code != hc.code || cliOutput(zk.out) != cliOutput(hc.out) {
				t.Errorf("no server: zkCli exit %d:\n%s\nhutch cli exit %d:\n%s", zk.code, zk.out, hc.code, hc.out)
			}
		})
	}
}

// TestHutchCLIScript feeds a script on stdin. hutch cli stops at the first
// failing command with its status, which is what zkCli (which carries on)
// prints and returns for the script cut after that command; with
// -keep-going it runs to the end as zkCli does, with the last command's
// status.
func TestHutchCLIScript(t *testing.T) {
	for _, tg := range cliTargets() {
		t.Run(tg.name, func(t *testing.T) {
			addr := tg.start(t)
			script := []string{"create /script one", "get /script", "create /script two", "ls /script", "quit"}
			cleanup := "deleteall /script\n"

			got := runCLI(t, hutchCLI(t, "-server", addr), strings.Join(script, "\n")+"\n")
			runCLI(t, hutchCLI(t, "-server", addr), cleanup)
			want := runCLI(t, zkCli(t, "-server", addr), strings.Join(script[:3], "\n")+"\n")
			runCLI(t, hutchCLI(t, "-server", addr), cleanup)
			if got.code != 1 || want.code != 1 {
				t.Errorf("script failing at line 3: exit status hutch cli %d, zkCli %d; want 1", got.code, want.code)
			}
			if w, g := cliOutput(want.out), cliOutput(got.out); w != g || !strings.HasSuffix(g, "Node already exists: /script") {
				t.Errorf("script failing at line 3: hutch cli printed\n%s\nzkCli (first 3 lines) printed\n%s", g, w)
			}

			got = runCLI(t, hutchCLI(t, "-server", addr, "-keep-going"), strings.Join(script, "\n")+"\n")
			runCLI(t, hutchCLI(t, "-server", addr), cleanup)
			want = runCLI(t, zkCli(t, "-server", addr), strings.Join(script, "\n")+"\n")
			runCLI(t, hutchCLI(t, "-server", addr), cleanup)
			if got.code != 0 || want.code != 0 {
				t.Errorf("-keep-going: exit status hutch cli %d, zkCli %d; want 0 (the last command's)", got.code, want.code)
			}
			if w, g := cliOutput(want.out), cliOutput(got.out); w != g || !strings.HasSuffix(g, "[]") {
				t.Errorf("-keep-going: hutch cli printed\n%s\nzkCli printed\n%s", g, w)
			}
		})
	}
}

// TestHutchCLIWatch checks hutch cli's watch command, which zkCli lacks,
// against what zkCli prints for the persistent recursive watch addWatch
// sets: the same events, and hutch cli then exits 0 after -n of them.
func TestHutchCLIWatch(t *testing.T) {
	for _, tg := range cliTargets() {
		t.Run(tg.name, func(t *testing.T) {
			addr := tg.start(t)
			changes := "create /w/a\nset /w/a x\ncreate /w/a/b\ndelete /w/a/b\n"
			const events = 4
			runCLI(t, hutchCLI(t, "-server", addr), "create /w\n")

			z := startConsole(t, "zkCli", zkCli(t, "-server", addr))
			z.expect(cliConnected, commandTimeout)
			z.send("addWatch /w")
			waitWatched(t, addr, "/w")
			runCLI(t, hutchCLI(t, "-server", addr), changes)
			var want []string
			for range events {
				want = append(want, z.expect(cliEventLine, eventTimeout)[0])
			}
			z.send("quit")
			z.waitExit(commandTimeout)
			runCLI(t, hutchCLI(t, "-server", addr), "deleteall /w/a\n")
			waitWatched(t, addr, "") // zkCli's session and watch are gone

			ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
			defer cancel()
			w := groupCommand(ctx, realzk.BuildHutch(t), "cli", "-server", addr, "watch", "-R", "-n", strconv.Itoa(events), "/w")
			var out strings.Builder
			w.Stdout, w.Stderr = &out, &out
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			waitWatched(t, addr, "/w")
			runCLI(t, hutchCLI(t, "-server", addr), changes)
			if err := w.Wait(); err != nil {
				t.Fatalf("hutch cli watch -n %d: %v\n%s", events, err, out.String())
			}
			var got []string
			for _, l := range strings.Split(out.String(), "\n") {
				if cliEventLine.MatchString(l) {
					got = append(got, l)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("hutch cli watch -R printed events\n%s\nzkCli addWatch printed\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if want := "\nWATCHER::\n\n"; !strings.HasPrefix(out.String(), want) {
				t.Errorf("hutch cli watch output does not start as zkCli's events do (%q):\n%s", want, out.String())
			}
			waitWatched(t, addr, "") // the watch was removed and the session closed
		})
	}
}

// waitWatched waits until the server's wchp lists path as watched, or
// lists nothing when path is empty.
func waitWatched(tb testing.TB, addr, path string) {
	tb.Helper()
	deadline := time.Now().Add(eventTimeout)
	for {
		out, err := realzk.FourLetterWord(addr, "wchp", 5*time.Second)
		if err == nil {
			lines := strings.Fields(out)
			if path == "" && !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "/") }) {
				return
			}
			if path != "" && slices.Contains(lines, path) {
				return
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("wchp on %s: waited %v for %q (last: %q, %v)", addr, eventTimeout, path, out, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
