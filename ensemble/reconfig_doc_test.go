package ensemble

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/docblock"
	"github.com/hutchzk/hutch/internal/realzk"
)

// docPorts are the ports docs/operations.md's reconfig example shows for
// server N (1 to 4): client 218N, quorum 288N, election 388N; the test
// runs on free ports and maps them.
func docPorts(n int) [3]int { return [3]int{2180 + n, 2880 + n, 3880 + n} }

// operationsBlock returns the fenced block of docs/operations.md opened
// with "```text <tag>".
func operationsBlock(tb testing.TB, tag string) string {
	tb.Helper()
	return docblock.Text(tb, "../docs/operations.md", tag)
}

// TestReconfigDocExample runs docs/operations.md's reconfig example as
// written: three members from zoo.cfg files with reconfigEnabled=true and
// a fourth server started as an observer from the members' lines and its
// own; the "> " lines go, as one script, to hutch cli on server 1, and
// what it prints must be the lines the doc shows under them (ports
// mapped; the configuration's version and its Stat's mZxid, mtime and
// dataLength masked). Then srvr
// on each server must say what the doc's srvr block says.
func TestReconfigDocExample(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four hutch processes")
	}
	bin := realzk.BuildHutch(t)
	ports := distinctPorts(t, 4)
	secretFile := filepath.Join(t.TempDir(), "peer-secret")
	if err := os.WriteFile(secretFile, []byte(rand.Text()), 0o600); err != nil {
		t.Fatal(err)
	}
	nodes := reconfigCfgs(t, t.TempDir(), ports[:3], secretFile, "")
	all := reconfigCfgs(t, t.TempDir(), ports, secretFile, "peerType=observer\n")
	participant := fmt.Sprintf("server.4=127.0.0.1:%d:%d;", ports[3][1], ports[3][2])
	cfg, err := os.ReadFile(all[3].cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	observer := strings.Replace(string(cfg), participant, strings.TrimSuffix(participant, ";")+":observer;", 1)
	if err := os.WriteFile(all[3].cfgFile, []byte(observer), 0o644); err != nil {
		t.Fatal(err)
	}
	realzk.StartHutchConfigs(t, bin, configProcesses(nodes))
	waitModes(t, nodes, []string{"follower", "follower", "leader"}, 60*time.Second)
	realzk.StartHutchConfigs(t, bin, configProcesses(all[3:]))

	// The doc's ports to the run's, and back.
	var toRun, toDoc []string
	for i, p := range ports {
		for j, port := range p {
			toRun = append(toRun, strconv.Itoa(docPorts(i + 1)[j]), strconv.Itoa(port))
			toDoc = append(toDoc, strconv.Itoa(port), strconv.Itoa(docPorts(i + 1)[j]))
		}
	}
	run, doc := strings.NewReplacer(toRun...), strings.NewReplacer(toDoc...)
	var script, want []string
	for _, line := range strings.Split(operationsBlock(t, "cli=reconfig"), "\n") {
		switch {
		case strings.HasPrefix(line, "> "):
			script = append(script, run.Replace(strings.TrimPrefix(line, "> ")))
		case line != "" && !strings.HasPrefix(line, "# "):
			want = append(want, maskCliLine(line))
		}
	}
	got := runCliScript(t, strings.Join(script, "\n")+"\nquit\n", bin, "cli", "-keep-going", "-server", nodes[0].clientAddr)
	for i := range max(len(got), len(want)) {
		g, w := "(nothing)", "(nothing)"
		if i < len(got) {
			g = doc.Replace(got[i])
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("line %d: hutch cli printed %q, the doc says %q", i+1, g, w)
		}
	}
	if t.Failed() {
		t.Logf("hutch cli printed:\n%s", doc.Replace(strings.Join(got, "\n")))
	}
	for _, line := range strings.Split(strings.TrimSpace(operationsBlock(t, "srvr=reconfig")), "\n") {
		n, wantWord, _ := strings.Cut(line, ": ")
		i, _ := strconv.Atoi(strings.TrimPrefix(n, "server "))
		addr := "127.0.0.1:" + strconv.Itoa(ports[i-1][0])
		var srvr string
		deadline := time.Now().Add(30 * time.Second)
		for {
			srvr, _ = realzk.FourLetterWord(addr, "srvr", 2*time.Second)
			if strings.Contains(srvr, wantWord) || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond) // poll interval
		}
		if !strings.Contains(srvr, wantWord) {
			t.Errorf("srvr of server %d: %q, the doc says %q", i, srvr, wantWord)
		}
	}
}
