package conformance

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hutchzk/hutch/internal/realzk"
)

// clientJVMFlags keep zkCli's JVM small and quick to start; it needs
// neither a big heap nor the optimising compiler for a few commands.
const clientJVMFlags = "-Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData"

// zkCli returns the command running Debian's zkCli.sh with args, or skips
// the test (fails it under CI) when zkCli.sh or java is missing. Without
// jline on the classpath zkCli reads commands from a piped stdin with no
// prompt, and with slf4j's no-op logger it prints only command output,
// WATCHER:: events and slf4j's start-up warning.
func zkCli(tb testing.TB, args ...string) *exec.Cmd {
	tb.Helper()
	if _, err := os.Stat(realzk.ZkCli); err != nil || !realzk.Installed() {
		realzk.Unavailable(tb, "zkCli.sh (Debian's zookeeper package)")
	}
	cmd := exec.Command(realzk.ZkCli, args...)
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS="+clientJVMFlags)
	cmd.Dir = tb.TempDir()
	return cmd
}

// Lines zkCli prints, matched whole.
var (
	cliConnected = regexp.MustCompile(`^WatchedEvent state:SyncConnected type:None path:null$`)
	cliWatcher   = regexp.MustCompile(`^WATCHER::$`)
	cliStatLast  = regexp.MustCompile(`^numChildren = \d+$`)
	cliStatLine  = regexp.MustCompile(`^(\w+) = (.*)$`)
	cliList      = regexp.MustCompile(`^\[(.*)\]$`)
)

// cliLine matches a whole line: format's verbs take args quoted literally.
func cliLine(format string, args ...string) *regexp.Regexp {
	quoted := make([]any, len(args))
	for i, a := range args {
		quoted[i] = regexp.QuoteMeta(a)
	}
	return regexp.MustCompile("^" + fmt.Sprintf(format, quoted...) + "$")
}

func cliEvent(typ, path string) *regexp.Regexp {
	return cliLine("WatchedEvent state:SyncConnected type:%s path:%s", typ, path)
}

// TestZkCli drives each target with ZooKeeper's own CLI: interactive
// session A creates ephemeral sequential nodes, lists, stats and watches
// them while session C changes them and watches A's nodes go when A quits;
// a one-shot invocation checks the tree is back to a fresh server's.
func TestZkCli(t *testing.T) {
	forEachTarget(t, func(t *testing.T, addr string, l *ledger) {
		a := startConsole(t, "zkCli A", zkCli(t, "-server", addr))
		a.expect(cliConnected, commandTimeout)
		// C connects second, so both servers number the sessions' zxids alike.
		c := startConsole(t, "zkCli C", zkCli(t, "-server", addr))
		c.expect(cliConnected, commandTimeout)

		a.send("create /zkcli parent")
		a.expect(cliLine("Created /zkcli"), eventTimeout)
		a.send("create -s -e /zkcli/n- data")
		m := a.expect(regexp.MustCompile(`^Created /zkcli/n-(\d+)$`), eventTimeout)
		if len(m[1]) != 10 || m[1] != "0000000000" {
			t.Errorf("first sequential child suffix = %q, want 10 digits 0000000000", m[1])
		}
		first := "/zkcli/n-" + m[1]
		a.send("create -s -e /zkcli/n- more")
		m = a.expect(regexp.MustCompile(`^Created /zkcli/n-(\d+)$`), eventTimeout)
		if m[1] != "0000000001" {
			t.Errorf("second sequential child suffix = %q, want 0000000001", m[1])
		}
		second := "/zkcli/n-" + m[1]

		a.send("ls /zkcli")
		if got := cliChildren(a); !slices.Equal(got, []string{"n-0000000000", "n-0000000001"}) {
			t.Errorf("ls /zkcli = %v, want [n-0000000000 n-0000000001]", got)
		}

		a.send("stat " + first)
		st := cliStat(t, a)
		wantStat(t, "stat "+first, st, map[string]string{
			"dataLength": "4", "numChildren": "0", "dataVersion": "0",
			"cversion": "0", "aclVersion": "0",
		})
		owner := st["ephemeralOwner"]
		if owner == "0x0" || !strings.HasPrefix(owner, "0x") {
			t.Errorf("ephemeralOwner of %s = %q, want the session id in hex", first, owner)
		}
		record := func(what string, st map[string]string) {
			who := "other session"
			switch st["ephemeralOwner"] {
			case owner:
				who = "A"
			case "0x0":
				who = "none"
			}
			l.record("%s: cZxid=%s mZxid=%s pZxid=%s cversion=%s dataVersion=%s aclVersion=%s dataLength=%s numChildren=%s owner=%s",
				what, st["cZxid"], st["mZxid"], st["pZxid"], st["cversion"], st["dataVersion"], st["aclVersion"], st["dataLength"], st["numChildren"], who)
		}
		record("stat "+first, st)
		if st["cZxid"] != st["mZxid"] || st["cZxid"] != st["pZxid"] {
			t.Errorf("new node %s: cZxid %s, mZxid %s, pZxid %s; want all equal", first, st["cZxid"], st["mZxid"], st["pZxid"])
		}
		a.send("stat " + second)
		if st2 := cliStat(t, a); st2["ephemeralOwner"] != owner {
			t.Errorf("ephemeralOwner of %s = %q, want %q (same session as %s)", second, st2["ephemeralOwner"], owner, first)
		} else if hexZxid(t, st2["cZxid"]) != hexZxid(t, st["cZxid"])+1 {
			t.Errorf("cZxid of %s = %s, want %s + 1", second, st2["cZxid"], st["cZxid"])
		}
		a.send("stat /zkcli")
		pst := cliStat(t, a)
		record("stat /zkcli", pst)
		wantStat(t, "stat /zkcli", pst, map[string]string{"numChildren": "2", "cversion": "2", "dataLength": "6"})

		// Errors come back as codes and zkCli words them itself.
		for cmd, want := range map[string]string{
			"create /zkcli again":           "Node already exists: /zkcli",
			"create " + first + "/child x":  "Ephemerals cannot have children: " + first + "/child",
			"set -v 7 " + first + " x":      "version No is not valid : " + first,
			"delete /zkcli":                 "Node not empty: /zkcli",
			"stat /zkcli/nope":              "Node does not exist: /zkcli/nope",
			"delete -v 9 " + first:          "version No is not valid : " + first,
			"create /zkcli/nope/deeper x":   "Node does not exist: /zkcli/nope/deeper",
			"get " + first + "/not-a-child": "Node does not exist: " + first + "/not-a-child",
		} {
			a.send(cmd)
			a.expect(cliLine("%s", want), eventTimeout)
		}

		// A data watch set by get -w fires when another session sets.
		a.send("get -w " + first)
		a.expect(cliLine("data"), eventTimeout)
		c.send("set " + first + " changed")
		a.expect(cliWatcher, eventTimeout)
		a.expect(cliEvent("NodeDataChanged", first), eventTimeout)

		a.send("get -s " + first)
		a.expect(cliLine("changed"), eventTimeout)
		st3 := cliStat(t, a)
		record("get -s "+first, st3)
		wantStat(t, "get -s "+first, st3, map[string]string{"dataVersion": "1", "dataLength": "7", "cZxid": st["cZxid"]})
		if hexZxid(t, st3["mZxid"]) <= hexZxid(t, st3["cZxid"]) {
			t.Errorf("after set: mZxid %s, want > cZxid %s", st3["mZxid"], st3["cZxid"])
		}

		// An exists watch set by stat -w fires on delete.
		a.send("stat -w " + first)
		cliStat(t, a)
		a.send("delete " + first)
		a.expect(cliWatcher, eventTimeout)
		a.expect(cliEvent("NodeDeleted", first), eventTimeout)
		a.send("stat " + first)
		a.expect(cliLine("Node does not exist: %s", first), eventTimeout)

		// C watches A's remaining ephemeral node and sees it go when A quits.
		c.send("create -e /zkcli/c-owned")
		c.expect(cliLine("Created /zkcli/c-owned"), eventTimeout)
		c.send("stat /zkcli/c-owned")
		cst := cliStat(t, c)
		record("stat /zkcli/c-owned", cst)
		if other := cst["ephemeralOwner"]; other == owner || other == "0x0" {
			t.Errorf("ephemeralOwner of C's node = %q, want a session id other than A's %q", other, owner)
		}
		c.send("ls -w /zkcli")
		if got := cliChildren(c); !slices.Equal(got, []string{"c-owned", "n-0000000001"}) {
			t.Errorf("ls -w /zkcli = %v, want [c-owned n-0000000001]", got)
		}
		c.send("stat -w " + second)
		cliStat(t, c)

		a.send("quit")
		a.waitExit(commandTimeout)
		expectAll(t, c, cliEvent("NodeDeleted", second), cliEvent("NodeChildrenChanged", "/zkcli"))

		c.send("ls /zkcli")
		if got := cliChildren(c); !slices.Equal(got, []string{"c-owned"}) {
			t.Errorf("ls /zkcli after A quit = %v, want [c-owned]", got)
		}
		// pZxid is the zxid of A's closeSession, which deleted its node.
		c.send("stat /zkcli")
		record("stat /zkcli after A quit", cliStat(t, c))
		c.send("delete /zkcli/c-owned")
		c.send("delete /zkcli")
		c.send("stat /zkcli")
		c.expect(cliLine("Node does not exist: /zkcli"), eventTimeout)
		c.send("quit")
		c.waitExit(commandTimeout)

		// One command per invocation, as scripts use zkCli: the tree is
		// back to a fresh server's.
		out := runCommand(t, "zkCli ls /", zkCli(t, "-server", addr, "ls", "/"))
		if !slices.Contains(strings.Split(out, "\n"), "[zookeeper]") {
			t.Errorf("zkCli ls / printed no [zookeeper] line:\n%s", out)
		}
	})
}

// cliChildren reads the [a, b] line of an ls and returns the names sorted:
// ZooKeeper does not promise an order.
func cliChildren(c *console) []string {
	c.tb.Helper()
	m := c.expect(cliList, eventTimeout)
	if m[1] == "" {
		return []string{}
	}
	names := strings.Split(m[1], ", ")
	slices.Sort(names)
	return names
}

// cliStat reads a stat block, up to its numChildren line, as key → value.
func cliStat(t *testing.T, c *console) map[string]string {
	t.Helper()
	_, lines := c.expectLines(cliStatLast, eventTimeout)
	st := make(map[string]string)
	for _, l := range lines {
		if m := cliStatLine.FindStringSubmatch(l); m != nil {
			st[m[1]] = m[2]
		}
	}
	for _, k := range []string{"cZxid", "ctime", "mZxid", "mtime", "pZxid", "cversion", "dataVersion", "aclVersion", "ephemeralOwner", "dataLength", "numChildren"} {
		if _, ok := st[k]; !ok {
			t.Errorf("stat output lacks %s:\n%s", k, strings.Join(lines, "\n"))
		}
	}
	return st
}

func wantStat(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got[k], v)
		}
	}
}

func hexZxid(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil || !strings.HasPrefix(s, "0x") {
		t.Fatalf("zxid %q is not 0x-prefixed hex", s)
	}
	return n
}

// expectAll reads lines until every pattern has matched one, in any order:
// ZooKeeper does not order the events one change fires on different paths.
func expectAll(t *testing.T, c *console, res ...*regexp.Regexp) {
	t.Helper()
	either := regexp.MustCompile(joinAlternatives(res))
	pending := slices.Clone(res)
	for len(pending) > 0 {
		m := c.expect(either, eventTimeout)
		pending = slices.DeleteFunc(pending, func(re *regexp.Regexp) bool { return re.MatchString(m[0]) })
	}
}

func joinAlternatives(res []*regexp.Regexp) string {
	parts := make([]string, len(res))
	for i, re := range res {
		parts[i] = "(?:" + re.String() + ")"
	}
	return strings.Join(parts, "|")
}
