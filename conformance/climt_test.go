package conformance

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hutchzk/hutch/internal/realzk"
)

// cliMT returns the command running ZooKeeper's C client shell against
// addr, or skips the test (fails it under CI) when it is not installed. It
// prints everything on stderr, a line at a time.
func cliMT(tb testing.TB, addr string) *exec.Cmd {
	tb.Helper()
	if _, err := os.Stat(realzk.CliMT); err != nil {
		realzk.Unavailable(tb, "cli_mt (Debian's zookeeper-bin package)")
	}
	cmd := exec.Command(realzk.CliMT, addr)
	cmd.Dir = tb.TempDir()
	return cmd
}

var (
	cSession  = regexp.MustCompile(`^Got a new session id: 0x([0-9a-f]+)$`)
	cStatLine = regexp.MustCompile(`^\t(\w+) ?= ?(.*)$`)
	cListEnd  = regexp.MustCompile(`^time = \d+ msec$`)
)

// TestCliMT drives each target with the C client, libzookeeper_mt, through
// its shell: create (plain, ephemeral, ephemeral sequential), get with its
// watch, ls, set, exists watches, delete and error codes.
func TestCliMT(t *testing.T) {
	forEachTarget(t, func(t *testing.T, addr string, l *ledger) {
		c := startConsole(t, "cli_mt", cliMT(t, addr))
		sid := c.expect(cSession, commandTimeout)[1]

		c.send("create /climt")
		c.expect(cliLine(`\[/climt\]: rc = 0`), eventTimeout)
		c.expect(cliLine(`\tname = /climt`), eventTimeout)
		c.send("create +e /climt/e")
		c.expect(cliLine(`\[/climt/e\]: rc = 0`), eventTimeout)
		c.send("create +es /climt/n-")
		c.expect(cliLine(`\[/climt/n-\]: rc = 0`), eventTimeout)
		// The parent's cversion is 1 after /climt/e: the counter is shared
		// by all children, not per prefix.
		c.expect(cliLine(`\tname = /climt/n-0000000001`), eventTimeout)

		// The shell's get sets a data watch and creates nodes with "new".
		c.send("get /climt/e")
		c.expect(cliLine(`/climt/e: rc = 0`), eventTimeout)
		c.expect(cliLine(` value_len = 3`), eventTimeout)
		c.expect(cliLine(`new`), eventTimeout)
		st := cStat(c)
		record := func(what string, st map[string]string) {
			owner := "other session"
			switch st["ephemeralOwner"] {
			case sid:
				owner = "self"
			case "0":
				owner = "none"
			}
			l.record("%s: czxid=%s mzxid=%s version=%s aversion=%s owner=%s", what, st["czxid"], st["mzxid"], st["version"], st["aversion"], owner)
		}
		record("get /climt/e", st)
		if st["ephemeralOwner"] != sid {
			t.Errorf("ephemeralOwner of /climt/e = %q, want the session id %q", st["ephemeralOwner"], sid)
		}
		if st["czxid"] != st["mzxid"] || st["version"] != "0" || st["aversion"] != "0" {
			t.Errorf("new node /climt/e: %v; want czxid = mzxid, version 0, aversion 0", st)
		}

		c.send("ls /climt")
		c.expect(cliLine(`/climt: rc = 0`), eventTimeout)
		if got := cList(c); !slices.Equal(got, []string{"e", "n-0000000001"}) {
			t.Errorf("ls /climt = %v, want [e n-0000000001]", got)
		}

		c.send("set /climt/e hello")
		expectAll(t, c,
			cliLine(`Watcher CHANGED_EVENT state = CONNECTED_STATE for path /climt/e`),
			cliLine(`/climt/e: rc = 0 Stat:`))
		st = cStat(c)
		record("set /climt/e", st)
		if st["version"] != "1" || st["czxid"] == st["mzxid"] {
			t.Errorf("stat after set: %v; want version 1 and mzxid != czxid", st)
		}
		c.send("get /climt/e")
		c.expect(cliLine(` value_len = 5`), eventTimeout)
		c.expect(cliLine(`hello`), eventTimeout)
		record("get /climt/e after set", cStat(c))

		// ls left a child watch on /climt.
		c.send("delete /climt/n-0000000001")
		expectAll(t, c,
			cliLine(`Watcher CHILD_EVENT state = CONNECTED_STATE for path /climt`),
			cliLine(`/climt/n-0000000001: rc = 0`))

		// Error codes as the C library reports them.
		c.send("create /climt")
		c.expect(cliLine(`\[/climt\]: rc = -110`), eventTimeout) // ZNODEEXISTS
		c.send("delete /climt")
		c.expect(cliLine(`/climt: rc = -111`), eventTimeout) // ZNOTEMPTY
		c.send("exists /climt/nope")
		c.expect(cliLine(`Error -101 for /climt/nope`), eventTimeout) // ZNONODE
		c.send("create /climt/e/child")
		c.expect(cliLine(`\[/climt/e/child\]: rc = -108`), eventTimeout) // ZNOCHILDRENFOREPHEMERALS

		c.send("wexists /climt/e")
		c.send("delete /climt/e")
		expectAll(t, c,
			cliLine(`Watcher DELETED_EVENT state = CONNECTED_STATE for path /climt/e`),
			cliLine(`/climt/e: rc = 0`))
		c.send("delete /climt")
		c.expect(cliLine(`/climt: rc = 0`), eventTimeout)
		c.send("exists /climt")
		c.expect(cliLine(`Error -101 for /climt`), eventTimeout)

		c.send("quit")
		c.expect(cliLine(`Quitting...`), eventTimeout)
		c.waitExit(commandTimeout)
	})
}

// cStat reads the shell's Stat: block, up to ephemeralOwner, as key →
// value. "version=0\taversion=0" share a line.
func cStat(c *console) map[string]string {
	c.tb.Helper()
	_, lines := c.expectLines(regexp.MustCompile(`^\tephemeralOwner = `), eventTimeout)
	st := make(map[string]string)
	for _, l := range lines {
		for _, part := range strings.Split(l, "\t") {
			if m := cStatLine.FindStringSubmatch("\t" + part); m != nil {
				st[m[1]] = m[2]
			}
		}
	}
	return st
}

// cList reads the tab-indented children of an ls, sorted.
func cList(c *console) []string {
	c.tb.Helper()
	_, lines := c.expectLines(cListEnd, eventTimeout)
	names := []string{}
	for _, l := range lines[:len(lines)-1] {
		if name, ok := strings.CutPrefix(l, "\t"); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
