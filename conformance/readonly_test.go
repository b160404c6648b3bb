package conformance

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/docblock"
	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/wire"
)

// Read-only mode side by side: a three-member ensemble with
// readonlymode.enabled (ZooKeeper 3.8 from the system property, with
// local sessions, which its read-only mode needs; hutch from zoo.cfg)
// loses two members; what the one left answers, byte for byte in the
// fields that matter, and what it does when a member comes back, must be
// the same. The transcript is in the server's words: codes, flags,
// whether a connection was refused, zxids as offsets from the last one
// written.

// startZooKeeperReadOnly starts ZooKeeper's ensemble.
func startZooKeeperReadOnly(tb testing.TB) []*realzk.Server {
	return realzk.StartEnsemble(tb, 3,
		realzk.SystemProperty("readonlymode.enabled", "true"),
		realzk.Config("localSessionsEnabled", "true"),
		realzk.Config("localSessionsUpgradingEnabled", "true"))
}

// startHutchReadOnly starts hutch's, one zoo.cfg per member.
func startHutchReadOnly(tb testing.TB) []*realzk.Server {
	tb.Helper()
	base := tb.TempDir()
	secret := filepath.Join(base, "secret")
	if err := os.WriteFile(secret, []byte("read-only mode conformance secret"), 0o600); err != nil {
		tb.Fatal(err)
	}
	var members strings.Builder
	clients := make([]int, 3)
	for i := range 3 {
		clients[i] = realzk.FreePort(tb)
		fmt.Fprintf(&members, "server.%d=127.0.0.1:%d:%d\n", i+1, realzk.FreePort(tb), realzk.FreePort(tb))
	}
	var procs []realzk.ConfigProcess
	for i := range 3 {
		dir := filepath.Join(base, strconv.Itoa(i+1))
		data := filepath.Join(dir, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(i+1)), 0o644); err != nil {
			tb.Fatal(err)
		}
		cfg := fmt.Sprintf("tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"+
			"admin.enableServer=false\n4lw.commands.whitelist=*\nreadonlymode.enabled=true\nhutch.peerSecretFile=%s\n%s",
			data, clients[i], secret, members.String())
		file := filepath.Join(dir, "zoo.cfg")
		if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
			tb.Fatal(err)
		}
		procs = append(procs, realzk.ConfigProcess{ConfigFile: file, ClientAddr: "127.0.0.1:" + strconv.Itoa(clients[i])})
	}
	servers := realzk.StartHutchConfigs(tb, realzk.BuildHutch(tb), procs)
	deadline := time.Now().Add(60 * time.Second)
	for {
		formed := true
		for _, s := range servers {
			if m := realzk.Mode(s.Addr, time.Second); m != "leader" && m != "follower" {
				formed = false
			}
		}
		if formed {
			return servers
		}
		if time.Now().After(deadline) {
			tb.Fatal("hutch ensemble not formed")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// roConn is a raw client connection for the read-only transcript.
type roConn struct {
	*diffClient
	resp wire.ConnectResponse
}

// dialRO connects with req; refused is true when the server closed the
// connection instead of answering.
func dialRO(addr string, req wire.ConnectRequest) (c *roConn, refused bool, err error) {
	nc, err := net.DialTimeout("tcp", addr, diffIOTimeout)
	if err != nil {
		return nil, false, err
	}
	dc := &diffClient{nc: nc, r: bufio.NewReader(nc)}
	if req.Passwd == nil {
		req.Passwd = make([]byte, 16)
	}
	_ = nc.SetDeadline(time.Now().Add(diffIOTimeout))
	resp, err := wire.Handshake(nc, dc.r, &req)
	if err != nil {
		nc.Close()
		return nil, true, nil
	}
	_ = nc.SetDeadline(time.Time{})
	dc.session, dc.passwd, dc.timeout = resp.SessionID, resp.Passwd, resp.Timeout
	return &roConn{diffClient: dc, resp: resp}, false, nil
}

// closedWithin reports whether the server closes c within d.
func (c *roConn) closedWithin(d time.Duration) bool {
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	_, err := c.readFrame()
	for err == nil {
		_, err = c.readFrame()
	}
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// waitFourLetter polls word on addr until it answers want.
func waitFourLetter(tb testing.TB, addr, word, want string, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		if got, _ := realzk.FourLetterWord(addr, word, time.Second); got == want {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s on %s did not answer %q within %v", word, addr, want, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readOnlyTranscript runs the scenario on an ensemble and returns what
// the member left answered.
func readOnlyTranscript(t *testing.T, servers []*realzk.Server) []string {
	var lines []string
	rec := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	survivor := -1
	for i, s := range servers {
		if realzk.Mode(s.Addr, 2*time.Second) == "follower" {
			survivor = i
			break
		}
	}
	if survivor < 0 {
		t.Fatal("no follower")
	}
	addr := servers[survivor].Addr

	// A session of the ensemble with an ephemeral (which makes a local
	// session global in ZooKeeper) on the member that will be left.
	g, _, err := dialRO(addr, wire.ConnectRequest{Timeout: 30000})
	if err != nil || g == nil {
		t.Fatalf("connect: %v", err)
	}
	h, _, _ := g.call(wire.OpCreate, &wire.CreateRequest{Path: "/ro", Data: []byte("data"), ACL: diffACLs[0]})
	rec("create /ro: %v", h.Err)
	h, _, _ = g.call(wire.OpCreate, &wire.CreateRequest{Path: "/ro/e", Data: []byte("e"), ACL: diffACLs[0], Flags: wire.ModeEphemeral})
	rec("create /ro/e: %v", h.Err)
	h, _, _ = g.call(wire.OpSync, &wire.PathRequest{Path: "/"})
	last := h.Zxid
	zx := func(z int64) string {
		if z == last {
			return "last"
		}
		return fmt.Sprintf("last%+d", z-last)
	}
	for i, s := range servers {
		if i != survivor {
			if err := s.Kill(); err != nil {
				t.Fatal(err)
			}
		}
	}
	rec("read-write connection closed: %v", g.closedWithin(20*time.Second))
	waitFourLetter(t, addr, "isro", "ro", 30*time.Second)
	rec("isro: ro")
	srvr, _ := realzk.FourLetterWord(addr, "srvr", 5*time.Second)
	rec("srvr says read-only mode: %v, Mode: read-only: %v",
		strings.Contains(srvr, "\nREAD-ONLY mode; serving only read-only clients\n"), strings.Contains(srvr, "\nMode: read-only\n"))
	mntr, _ := realzk.FourLetterWord(addr, "mntr", 5*time.Second)
	rec("mntr server state read-only: %v", strings.Contains(mntr, "zk_server_state\tread-only\n"))

	for _, r := range []struct {
		what string
		req  wire.ConnectRequest
	}{
		{"read-write client", wire.ConnectRequest{Timeout: 30000}},
		{"the ensemble's session", wire.ConnectRequest{Timeout: 30000, ReadOnly: true, SessionID: g.session, Passwd: g.passwd}},
		{"a client that saw a newer zxid", wire.ConnectRequest{Timeout: 30000, ReadOnly: true, LastZxidSeen: last + 1}},
	} {
		c, refused, err := dialRO(addr, r.req)
		if err != nil {
			t.Fatal(err)
		}
		if refused {
			rec("%s: refused", r.what)
		} else {
			rec("%s: answered readOnly=%v timeout=%d", r.what, c.resp.ReadOnly, c.resp.Timeout)
		}
	}
	c, refused, err := dialRO(addr, wire.ConnectRequest{Timeout: 30000, ReadOnly: true, LastZxidSeen: last})
	if err != nil || refused {
		t.Fatalf("read-only client refused: %v", err)
	}
	rec("read-only client: readOnly=%v timeout=%d new session=%v", c.resp.ReadOnly, c.resp.Timeout, c.resp.SessionID != 0 && c.resp.SessionID != g.session)
	for _, op := range []struct {
		code wire.OpCode
		body wire.Message
	}{
		{wire.OpGetData, &wire.PathWatchRequest{Path: "/ro", Watch: true}},
		{wire.OpGetChildren2, &wire.PathWatchRequest{Path: "/ro"}},
		{wire.OpExists, &wire.PathWatchRequest{Path: "/nope", Watch: true}},
		{wire.OpGetACL, &wire.PathRequest{Path: "/ro"}},
		{wire.OpGetAllChildrenNumber, &wire.PathRequest{Path: "/"}},
		{wire.OpAddWatch, &wire.AddWatchRequest{Path: "/", Mode: 1}},
		{wire.OpCreate, &wire.CreateRequest{Path: "/w", ACL: diffACLs[0]}},
		{wire.OpCreate2, &wire.CreateRequest{Path: "/w", ACL: diffACLs[0]}},
		{wire.OpCreateContainer, &wire.CreateRequest{Path: "/w", ACL: diffACLs[0], Flags: wire.ModeContainer}},
		{wire.OpSetData, &wire.SetDataRequest{Path: "/ro", Data: []byte("x"), Version: -1}},
		{wire.OpDelete, &wire.DeleteRequest{Path: "/ro/e", Version: -1}},
		{wire.OpSetACL, &wire.SetACLRequest{Path: "/ro", ACL: diffACLs[0], Version: -1}},
		{wire.OpCheck, &wire.CheckVersionRequest{Path: "/ro", Version: -1}},
		{wire.OpSync, &wire.PathRequest{Path: "/"}},
		{wire.OpMulti, &diffMulti{ops: nil}},
	} {
		h, d, err := c.call(op.code, op.body)
		if err != nil {
			t.Fatalf("%v: %v", op.code, err)
		}
		rec("%v: %v at %s, %d bytes", op.code, h.Err, zx(h.Zxid), d.Remaining())
	}
	c2, refused, _ := dialRO(addr, wire.ConnectRequest{Timeout: 30000, ReadOnly: true, SessionID: c.session, Passwd: c.passwd})
	rec("read-only session again, elsewhere: refused=%v", refused)
	if !refused {
		rec("  readOnly=%v same session=%v; first connection closed: %v", c2.resp.ReadOnly, c2.resp.SessionID == c.session, c.closedWithin(3*time.Second))
		h, err := c2.closeSession()
		rec("closeSession: %v at %s, err %v; closed: %v", h.Err, zx(h.Zxid), err, c2.closedWithin(3*time.Second))
	}
	c3, refused, _ := dialRO(addr, wire.ConnectRequest{Timeout: 30000, ReadOnly: true})
	if refused {
		t.Fatal("second read-only client refused")
	}

	// A member comes back: the quorum with it.
	back := (survivor + 1) % 3
	servers[back].Relaunch(t, func(a string, d time.Duration) error {
		_, err := realzk.FourLetterWord(a, "ruok", d)
		return err
	})
	rec("read-only connection closed when the quorum came back: %v", c3.closedWithin(60*time.Second))
	waitFourLetter(t, addr, "isro", "rw", 60*time.Second)
	rec("isro: rw")
	c4, refused, _ := dialRO(addr, wire.ConnectRequest{Timeout: 30000, ReadOnly: true, SessionID: c3.session, Passwd: c3.passwd})
	if refused {
		rec("the read-only session afterwards: refused")
	} else {
		rec("the read-only session afterwards: timeout=%d readOnly=%v", c4.resp.Timeout, c4.resp.ReadOnly)
	}
	g2, refused, _ := dialRO(addr, wire.ConnectRequest{Timeout: 30000, ReadOnly: true, SessionID: g.session, Passwd: g.passwd})
	if refused {
		rec("the ensemble's session afterwards: refused")
	} else {
		rec("the ensemble's session afterwards: same=%v timeout=%d readOnly=%v", g2.resp.SessionID == g.session, g2.resp.Timeout, g2.resp.ReadOnly)
		h, _, _ := g2.call(wire.OpExists, &wire.PathWatchRequest{Path: "/ro/e"})
		rec("its ephemeral: %v", h.Err)
	}
	return lines
}

// TestReadOnlyModeSideBySide runs the scenario on ZooKeeper 3.8 and on
// hutch and compares the transcripts line by line.
func TestReadOnlyModeSideBySide(t *testing.T) {
	got := map[string][]string{}
	for _, tg := range []struct {
		name  string
		start func(testing.TB) []*realzk.Server
	}{{"zookeeper", startZooKeeperReadOnly}, {"hutch", startHutchReadOnly}} {
		t.Run(tg.name, func(t *testing.T) { got[tg.name] = readOnlyTranscript(t, tg.start(t)) })
	}
	zk, hutch := got["zookeeper"], got["hutch"]
	if zk == nil || hutch == nil {
		return
	}
	compareTranscripts(t.Errorf, "zookeeper", zk, "hutch", hutch)
	t.Logf("transcript:\n  %s", strings.Join(hutch, "\n  "))
}

// operationsBlock returns the fenced block of docs/operations.md opened
// with "```text <tag>".
func operationsBlock(tb testing.TB, tag string) string {
	tb.Helper()
	return docblock.Text(tb, "../docs/operations.md", tag)
}

// TestReadOnlyDocExample runs docs/operations.md's read-only example as
// written: the commands before the second "#" line through hutch cli on
// any member, the rest with -r on the member left once two are killed,
// each one's output compared with the lines below it; then srvr must say
// what the doc says.
func TestReadOnlyDocExample(t *testing.T) {
	servers := startHutchReadOnly(t)
	survivor := 0
	for i, s := range servers {
		if realzk.Mode(s.Addr, 2*time.Second) == "follower" {
			survivor = i
		}
	}
	phase := 0
	var cmd string
	var want []string
	check := func() {
		t.Helper()
		if cmd == "" {
			return
		}
		args := []string{"-server", servers[survivor].Addr}
		if phase == 2 {
			args = append(args, "-r")
		}
		res := runCLI(t, hutchCLI(t, append(args, splitCLILine(cmd)...)...), "")
		if exp := strings.Join(want, ""); res.out != exp {
			t.Errorf("> %s\nprinted:\n%s\nthe doc says:\n%s", cmd, res.out, exp)
		}
		cmd, want = "", nil
	}
	for _, line := range strings.SplitAfter(operationsBlock(t, "cli=readonly"), "\n") {
		switch {
		case strings.HasPrefix(line, "# "):
			check()
			phase++
			if phase == 2 {
				for i, s := range servers {
					if i != survivor {
						if err := s.Kill(); err != nil {
							t.Fatal(err)
						}
					}
				}
				waitFourLetter(t, servers[survivor].Addr, "isro", "ro", 30*time.Second)
			}
		case strings.HasPrefix(line, "> "):
			check()
			cmd = strings.TrimSuffix(strings.TrimPrefix(line, "> "), "\n")
		case line != "":
			want = append(want, line)
		}
	}
	check()
	if phase != 2 {
		t.Fatalf("the example has %d phases, want 2", phase)
	}
	srvr, err := realzk.FourLetterWord(servers[survivor].Addr, "srvr", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(operationsBlock(t, "srvr=readonly")), "\n") {
		if !strings.Contains(srvr, "\n"+line+"\n") {
			t.Errorf("srvr lacks %q:\n%s", line, srvr)
		}
	}
}

// splitCLILine splits a doc command on spaces (the examples quote nothing).
func splitCLILine(s string) []string { return strings.Fields(s) }
