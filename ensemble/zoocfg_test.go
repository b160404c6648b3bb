package ensemble

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/zoocfg"
)

// zooCfgNode is one member of an ensemble described by zoo.cfg files.
type zooCfgNode struct {
	cfgFile    string
	clientAddr string
	adminAddr  string
}

// writeZooCfgEnsemble writes one zoo.cfg per member of an n-server
// ensemble on loopback, each with its own dataDir holding myid, as an
// operator would for ZooKeeper. The only key for hutch is
// hutch.peerSecretFile, which ZooKeeper ignores.
func writeZooCfgEnsemble(tb testing.TB, n int) []zooCfgNode {
	tb.Helper()
	base := tb.TempDir()
	secretFile := filepath.Join(base, "peer-secret")
	if err := os.WriteFile(secretFile, []byte(rand.Text()), 0o600); err != nil {
		tb.Fatal(err)
	}
	port := func() string { return strconv.Itoa(realzk.FreePort(tb)) }
	var members strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&members, "server.%d=127.0.0.1:%s:%s\n", i, port(), port())
	}
	nodes := make([]zooCfgNode, n)
	for i := range nodes {
		dir := filepath.Join(base, fmt.Sprintf("zk%d", i+1))
		data := filepath.Join(dir, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
		client, admin := port(), port()
		cfg := "# written once; real ZooKeeper and hutch both run it unchanged\n" +
			"tickTime=1000\ninitLimit=10\nsyncLimit=5\n" +
			"dataDir=" + data + "\n" +
			"clientPort=" + client + "\nclientPortAddress=127.0.0.1\n" +
			"maxClientCnxns=0\n4lw.commands.whitelist=*\n" +
			"admin.serverAddress=127.0.0.1\nadmin.serverPort=" + admin + "\n" +
			"autopurge.snapRetainCount=3\nautopurge.purgeInterval=0\n" +
			members.String() +
			"hutch.peerSecretFile=" + secretFile + "\n"
		nodes[i] = zooCfgNode{
			cfgFile:    filepath.Join(dir, "zoo.cfg"),
			clientAddr: "127.0.0.1:" + client,
			adminAddr:  "127.0.0.1:" + admin,
		}
		if err := os.WriteFile(nodes[i].cfgFile, []byte(cfg), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return nodes
}

func configProcesses(nodes []zooCfgNode) []realzk.ConfigProcess {
	procs := make([]realzk.ConfigProcess, len(nodes))
	for i, nd := range nodes {
		procs[i] = realzk.ConfigProcess{ConfigFile: nd.cfgFile, ClientAddr: nd.clientAddr}
	}
	return procs
}

// TestZooCfgEnsembleSideBySide runs the same three zoo.cfg files first
// under real ZooKeeper and then under hutch, and checks the same things of
// both: srvr shows one leader and two followers, a write through one
// member is read through another, and the admin server listens where
// admin.serverAddress:admin.serverPort say.
func TestZooCfgEnsembleSideBySide(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three ZooKeeper JVMs and three hutch processes")
	}
	bin := realzk.BuildHutch(t)
	nodes := writeZooCfgEnsemble(t, 3)
	before := readFiles(t, nodes)
	reports := map[string][]string{}
	for _, target := range []struct {
		name  string
		start func(t *testing.T)
	}{
		{"zookeeper", func(t *testing.T) { realzk.StartZooKeeperConfigs(t, configProcesses(nodes)) }},
		{"hutch", func(t *testing.T) { realzk.StartHutchConfigs(t, bin, configProcesses(nodes)) }},
	} {
		// Each subtest stops its servers when it ends, freeing the ports
		// for the next.
		t.Run(target.name, func(t *testing.T) {
			start := time.Now()
			target.start(t)
			modes := waitModes(t, nodes, []string{"follower", "follower", "leader"}, 60*time.Second)
			t.Logf("%s: quorum (%q) %v after start", target.name, modes, time.Since(start).Round(time.Millisecond))
			if target.name == "zookeeper" {
				// What zoocfg decodes is what ZooKeeper runs with.
				for _, nd := range nodes {
					checkConf(t, nd)
				}
			}

			value := []byte("written through server 1 to " + target.name)
			first := dialOne(t, nodes[0].clientAddr)
			if err := createRetrying(first, "/zoocfg", value, 30*time.Second); err != nil {
				t.Fatalf("create through server 1: %v", err)
			}
			third := dialOne(t, nodes[2].clientAddr)
			if err := within(opTimeout, func() error { _, err := third.Sync("/zoocfg"); return err }); err != nil {
				t.Fatalf("sync through server 3: %v", err)
			}
			var got []byte
			if err := within(opTimeout, func() (err error) { got, _, err = third.Get("/zoocfg"); return err }); err != nil {
				t.Fatalf("get through server 3: %v", err)
			}
			if string(got) != string(value) {
				t.Fatalf("server 3 reads %q, want %q", got, value)
			}
			reports[target.name] = ensembleWordsReport(t, nodes, modes, target.name != "zookeeper" || realzk.AdminServerInstalled())
			if target.name == "zookeeper" && !realzk.AdminServerInstalled() {
				t.Log("jetty is not installed: ZooKeeper's admin server is not checked")
				return
			}
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + nodes[1].adminAddr + "/commands/ruok")
			if err != nil {
				t.Fatalf("admin server of member 2: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("admin ruok of member 2: %s", resp.Status)
			}
			t.Logf("%s: checks done %v after start", target.name, time.Since(start).Round(time.Millisecond))
		})
	}
	// What the leader and a follower answer matches, line for line.
	if want, got := reports["zookeeper"], reports["hutch"]; want != nil && got != nil {
		for i := range max(len(want), len(got)) {
			w, g := "(nothing)", "(nothing)"
			if i < len(want) {
				w = want[i]
			}
			if i < len(got) {
				g = got[i]
			}
			if w != g {
				t.Errorf("ensemble answers differ:\n zookeeper: %s\n     hutch: %s", w, g)
			}
		}
	}
	// Neither server rewrote the files (ZooKeeper does only with
	// reconfigEnabled, which this file leaves off).
	if after := readFiles(t, nodes); !slices.Equal(before, after) {
		t.Error("a zoo.cfg changed while the servers ran")
	}
}

// TestZooCfgStandaloneRestart: hutch run from a standalone zoo.cfg keeps
// its znodes in dataDir, so restarting it with the same file finds them.
func TestZooCfgStandaloneRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the hutch binary")
	}
	bin := realzk.BuildHutch(t)
	dir := t.TempDir()
	addr := "127.0.0.1:" + strconv.Itoa(realzk.FreePort(t))
	_, port, _ := strings.Cut(addr, ":")
	cfgFile := filepath.Join(dir, "zoo.cfg")
	// No tickTime, session bounds or maxClientCnxns: ZooKeeper's defaults.
	cfg := "dataDir=" + filepath.Join(dir, "data") + "\nclientPort=" + port +
		"\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=conf, srvr\n"
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	procs := []realzk.ConfigProcess{{ConfigFile: cfgFile, ClientAddr: addr}}

	// The file runs real ZooKeeper standalone with the defaults zoocfg
	// fills in.
	zkServer := realzk.StartZooKeeperConfigs(t, procs)[0]
	checkConf(t, zooCfgNode{cfgFile: cfgFile, clientAddr: addr})
	if err := zkServer.Stop(); err != nil {
		t.Fatal(err)
	}

	first := realzk.StartHutchConfigs(t, bin, procs)[0]
	c := dialOne(t, addr)
	if err := createRetrying(c, "/kept", []byte("across restarts"), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := within(opTimeout, func() error {
		_, err := c.Create("/kept/seq-", []byte("child"), zk.FlagSequence, openACL)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	realzk.StartHutchConfigs(t, bin, procs)
	c = dialOne(t, addr)
	var data []byte
	var children []string
	if err := within(opTimeout, func() (err error) {
		if data, _, err = c.Get("/kept"); err != nil {
			return err
		}
		children, _, err = c.Children("/kept")
		return err
	}); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if string(data) != "across restarts" || !slices.Equal(children, []string{"seq-0000000000"}) {
		t.Fatalf("after restart /kept = %q with children %q", data, children)
	}
}

// checkConf compares ZooKeeper's conf four-letter word with what
// zoocfg.Load reads from the member's zoo.cfg.
func checkConf(tb testing.TB, nd zooCfgNode) {
	tb.Helper()
	zc, err := zoocfg.Load(nd.cfgFile)
	if err != nil {
		tb.Fatal(err)
	}
	var reply string
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(reply, "tickTime=") {
		if time.Now().After(deadline) {
			tb.Fatalf("conf on %s: %q, %v", nd.clientAddr, reply, err)
		}
		reply, err = realzk.FourLetterWord(nd.clientAddr, "conf", 5*time.Second)
	}
	conf := map[string]string{}
	for line := range strings.SplitSeq(reply, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			conf[k] = v
		}
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	want := map[string]string{
		"clientPort":        strconv.Itoa(zc.ClientPort),
		"dataDir":           filepath.Join(zc.DataDir, "version-2"),
		"dataLogDir":        filepath.Join(zc.DataLogDir, "version-2"),
		"tickTime":          ms(zc.TickTime),
		"maxClientCnxns":    strconv.Itoa(zc.MaxClientCnxns),
		"minSessionTimeout": ms(zc.MinSessionTimeout),
		"maxSessionTimeout": ms(zc.MaxSessionTimeout),
	}
	if zc.Distributed() {
		self := zc.Servers[zc.MyID]
		want["serverId"] = strconv.FormatUint(zc.MyID, 10)
		want["initLimit"] = strconv.Itoa(zc.InitLimit)
		want["syncLimit"] = strconv.Itoa(zc.SyncLimit)
		want["quorumPort"] = strconv.Itoa(self.QuorumPort)
		want["electionPort"] = strconv.Itoa(self.ElectionPort)
	}
	for k, v := range want {
		if conf[k] != v {
			tb.Errorf("%s: ZooKeeper's conf says %s=%q, zoocfg read %q", nd.cfgFile, k, conf[k], v)
		}
	}
}

func readFiles(tb testing.TB, nodes []zooCfgNode) []string {
	tb.Helper()
	var out []string
	for _, nd := range nodes {
		b, err := os.ReadFile(nd.cfgFile)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// waitModes polls srvr on every member until the sorted modes are want.
func waitModes(tb testing.TB, nodes []zooCfgNode, want []string, limit time.Duration) []string {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for {
		modes := make([]string, len(nodes))
		for i, nd := range nodes {
			modes[i] = realzk.Mode(nd.clientAddr, 2*time.Second)
		}
		sorted := slices.Sorted(slices.Values(modes))
		if slices.Equal(sorted, want) {
			return modes
		}
		if time.Now().After(deadline) {
			tb.Fatalf("srvr modes %q after %v, want %q", modes, limit, want)
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
}

// dialOne opens a go-zookeeper session to one server only.
func dialOne(tb testing.TB, addr string) *zk.Conn {
	tb.Helper()
	return dialSession(tb, 10*time.Second, addr)
}

// createRetrying creates p with data, retrying while the server is not
// yet ready to take writes; an existing node is an error.
func createRetrying(c *zk.Conn, p string, data []byte, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		err := within(time.Until(deadline), func() error {
			_, err := c.Create(p, data, 0, openACL)
			return err
		})
		if err == nil || errors.Is(err, zk.ErrNodeExists) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond) // back off between failed attempts
	}
}
