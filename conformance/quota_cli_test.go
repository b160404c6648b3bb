package conformance

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
)

// Quotas through the command line: zkCli.sh's setquota, listquota and
// delquota, and hutch cli's, against ZooKeeper 3.8 and hutch, both with
// quotas enforced (ZooKeeper from zoo.cfg's enforceQuota=true, hutch from
// --enforce-quota). Every step's output is compared: zkCli on hutch with
// zkCli on ZooKeeper (the server's conformance: the stats it keeps, the
// limits it enforces, the nodes it lists), hutch cli with zkCli on each
// server (the client's). The warnings each server logs for the limits
// passed are compared too.

// quotaScenario is the script; it leaves the tree as it found it.
func quotaScenario(addr string) []cliStep {
	A := func(cmd string, events ...string) cliStep { return cliStep{who: "A", cmd: cmd, events: events} }
	B := func(cmd string, events ...string) cliStep { return cliStep{who: "B", cmd: cmd, events: events} }
	return []cliStep{
		A("create /qc root"),
		A("stat /qc"), // the base of the zxids that follow
		A("create /qc/a hello"),
		A("create /qc/a/b xy"),
		A("setquota -n 2 /qc/a"),
		A("listquota /qc/a"),
		A("get -s /zookeeper/quota/qc/a/zookeeper_limits"),
		A("get -s /zookeeper/quota/qc/a/zookeeper_stats"),
		A("ls /zookeeper/quota/qc"),
		A("create /qc/a/c"), // past the soft count: logged, allowed
		A("listquota /qc/a"),
		A("setquota -b 10 /qc/a"), // warns: the count is past its limit
		A("listquota /qc/a"),
		A("setquota -N 5 -B 100 /qc/a"),
		A("setquota -N 4 /qc/a"),
		A("setquota -B 12 /qc/a"),
		A("listquota /qc/a"),

		// Hard limits refuse, whoever writes; quota before version.
		B("create /qc/a/d 123"),
		B("create /qc/a/e"),
		B("set /qc/a/d 123456"),
		B("set -v 7 /qc/a/d 12345678"),
		B("set -s /qc/a/d 12"),
		A("delete /qc/a/c"),
		B("create -e /qc/a/b/eph e"),
		A("listquota /qc/a"),
		A("get -s /zookeeper/quota/qc/a/zookeeper_stats"),
		// A session's ephemerals leave the stats when it ends.
		B("close", "state:Closed type:None path:null"),
		B("connect "+addr, "state:SyncConnected type:None path:null"),
		A("listquota /qc/a"),
		A("create -s /qc/a/s- s"),
		A("create -c /qc/a/cont"),
		A("deleteall /qc/a/b"),
		A("listquota /qc/a"),

		// setquota's refusals.
		A("setquota /qc/a"),
		A("setquota -n 0 /qc/a"),
		A("setquota -N -3 /qc/a"),
		A("setquota -n x /qc/a"),
		A("setquota -n 2147483648 /qc/a"),
		A("setquota -b -1 /qc/a"),
		A("setquota -x 1 /qc/a"),
		A("setquota -n 3 /qc/nope"),
		A("setquota -n 3 /zookeeper/quota/x"),
		A("setquota -n 3 qc"),
		A("setquota -n 3 /qc/"),
		A("setquota -n 3 /"),
		A("setquota -n 3"),
		A("create /qc/a/deep"),
		A("setquota -n 1 /qc/a/deep"),
		A("create /qc/x"),
		A("create /qc/x/y"),
		A("setquota -n 3 /qc/x/y"),
		A("setquota -n 3 /qc/x"),
		A("setquota -n 3 /qc"),

		// listquota, and limits and stats written by hand.
		A("listquota /qc/nope"),
		A("listquota"),
		A("listquota qc"),
		A("listquota /qc/"),
		A("listquota -x /qc/a"),
		A("set /zookeeper/quota/qc/x/y/zookeeper_limits count=x"),
		A("setquota -n 4 /qc/x/y"),
		A("listquota /qc/x/y"),
		A("set /zookeeper/quota/qc/x/y/zookeeper_limits count=1"),
		A("listquota /qc/x/y"),
		A("set /zookeeper/quota/qc/x/y/zookeeper_stats count=5,bytes=1=;extra=2"),
		A("create /qc/x/y/z zz"),
		A("listquota /qc/x/y"),
		A("setquota -B 0 /qc/x/y"),
		A("listquota /qc/x/y"),
		A("set /qc/x/y/z zz"), // the same length: no byte check
		A("set /qc/x/y/z z"),

		// delquota.
		A("delquota -n /qc/a"),
		A("listquota /qc/a"),
		A("delquota -b -N /qc/a"),
		A("delquota -B /qc/a"),
		A("listquota /qc/a"),
		A("delquota /qc/nope"),
		A("delquota -x /qc/a"),
		A("delquota"),
		A("delquota /qc/a"),
		A("listquota /qc/a"),
		A("ls /zookeeper/quota/qc"),
		A("delquota /qc/x/y"),
		A("ls /zookeeper/quota"),
		A("deleteall /qc"),
		A("ls /"),
	}
}

// quotaWarning is the text of one warning a server logs for a limit
// passed, in ZooKeeper's words and in hutch's.
var quotaWarning = regexp.MustCompile(`Quota exceeded: [^\]]*\]`)

func TestQuotaCLI(t *testing.T) {
	zkCliSaw := map[string][]string{}
	warnings := map[string][]string{}
	for _, tg := range []struct {
		name  string
		start func(testing.TB) *realzk.Server
	}{
		{"zookeeper", func(tb testing.TB) *realzk.Server { return realzk.Start(tb, realzk.Config("enforceQuota", "true")) }},
		{"hutch", func(tb testing.TB) *realzk.Server {
			return realzk.StartHutchBinary(tb, realzk.BuildHutch(tb), "--max-client-conns", "0", "--enforce-quota")
		}},
	} {
		t.Run(tg.name, func(t *testing.T) {
			srv := tg.start(t)
			runScenario := func(name string, newCmd func() *exec.Cmd, banner bool) []string {
				r := startCLIRun(t, name, newCmd, banner)
				for _, s := range quotaScenario(srv.Addr) {
					r.run(s)
				}
				r.quit()
				if last := r.blocks[len(r.blocks)-1]; !strings.HasSuffix(last, "\n[zookeeper]") {
					t.Fatalf("%s did not clean up after itself:\n%s", name, last)
				}
				return r.blocks
			}
			want := runScenario("zkCli", func() *exec.Cmd { return zkCli(t, "-server", srv.Addr) }, true)
			got := runScenario("hutch cli", func() *exec.Cmd { return hutchCLI(t, "-server", srv.Addr, "-keep-going") }, false)
			zkCliSaw[tg.name] = want
			compareTranscripts(t.Errorf, "zkCli", want, "hutch cli", got)
			log, err := os.ReadFile(srv.LogFile)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, w := range quotaWarning.FindAllString(string(log), -1) {
				if !seen[w] {
					seen[w] = true
					warnings[tg.name] = append(warnings[tg.name], w)
				}
			}
		})
	}
	zk, hutch := zkCliSaw["zookeeper"], zkCliSaw["hutch"]
	if zk == nil || hutch == nil {
		return
	}
	compareTranscripts(t.Errorf, "zkCli on zookeeper", zk, "zkCli on hutch", hutch)
	if !slices.Equal(warnings["zookeeper"], warnings["hutch"]) || len(warnings["hutch"]) == 0 {
		t.Errorf("limits passed, as logged:\nzookeeper:\n  %s\nhutch:\n  %s",
			strings.Join(warnings["zookeeper"], "\n  "), strings.Join(warnings["hutch"], "\n  "))
	}
	t.Logf("warnings both logged:\n  %s", strings.Join(warnings["hutch"], "\n  "))
}

// TestQuotaDocExample runs the worked example of docs/operations.md's
// Quotas section as it is written there: each "> command" through hutch
// cli against hutch --enforce-quota, its output compared with the lines
// below it; then the warnings the doc says the server logged must be in
// its log.
func TestQuotaDocExample(t *testing.T) {
	srv := realzk.StartHutchBinary(t, realzk.BuildHutch(t), "--enforce-quota")
	var cmd string
	var want []string
	check := func() {
		t.Helper()
		if cmd == "" {
			return
		}
		res := runCLI(t, hutchCLI(t, append([]string{"-server", srv.Addr}, splitCLILine(cmd)...)...), "")
		if exp := strings.Join(want, ""); res.out != exp {
			t.Errorf("> %s\nprinted:\n%s\nthe doc says:\n%s", cmd, res.out, exp)
		}
	}
	for _, line := range strings.SplitAfter(operationsBlock(t, "cli=quota"), "\n") {
		if c, ok := strings.CutPrefix(line, "> "); ok {
			check()
			cmd, want = strings.TrimSuffix(c, "\n"), nil
			continue
		}
		if line != "" {
			want = append(want, line)
		}
	}
	check()
	for _, w := range strings.Split(strings.TrimSpace(operationsBlock(t, "log=quota")), "\n") {
		deadline := time.Now().Add(commandTimeout)
		for !strings.Contains(srv.LogTail(1<<20), `level=WARN msg="`+w+`"`) {
			if time.Now().After(deadline) {
				t.Fatalf("the server did not log %q:\n%s", w, srv.LogTail(4096))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
