package monitor

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/membership"
)

// consLine is the cons line of the fixture's first connection.
func consLines() string {
	return fmt.Sprintf(" /127.0.0.1:50001[1](queued=0,recved=6,sent=6,sid=0x100000000000001,lop=GETD,est=%d,to=30000,lcxid=0x5,lzxid=0x1e,lresp=2500,llat=1,minlat=0,avglat=0,maxlat=1)\n"+
		" /127.0.0.1:50002[1](queued=0,recved=2,sent=2,sid=0x100000000000002,lop=CREA,est=%d,to=10000,lzxid=0x1f,lresp=3000,llat=0,minlat=0,avglat=0,maxlat=0)\n"+
		" /127.0.0.1:50003[0](queued=0,recved=1,sent=0)\n\n", at(time.Second).UnixMilli(), at(2*time.Second).UnixMilli())
}

const srvrStandalone = `Zookeeper version: 3.8.0-hutch, built on BUILT
Latency min/avg/max: 0/0.3333/1
Received: 12
Sent: 11
Connections: 3
Outstanding: 0
Zxid: 0x1f
Mode: standalone
Node count: 7
`

const ephemeralsDump = `ephemeral nodes dump:
Sessions with Ephemerals (2):
0x100000000000001:
	/a/e
0x100000000000002:
	/b/e1
	/b/e2
`

const mntrStandalone = `zk_version	3.8.0-hutch, built on BUILT
zk_server_state	standalone
zk_ephemerals_count	3
zk_num_alive_connections	3
zk_avg_latency	0.3333
zk_outstanding_requests	0
zk_znode_count	7
zk_global_sessions	3
zk_packets_sent	11
zk_packets_received	12
zk_watch_count	3
zk_auth_failed_count	1
zk_min_latency	0
zk_max_file_descriptor_count	FDS
zk_approximate_data_size	40
zk_open_file_descriptor_count	FDS
zk_local_sessions	0
zk_uptime	90000
zk_max_latency	1
zk_bytes_received_count	300
`

const confStandalone = `clientPort=2181
secureClientPort=-1
dataDir=
dataDirSize=0
dataLogDir=
dataLogSize=0
tickTime=2000
maxClientCnxns=60
minSessionTimeout=4000
maxSessionTimeout=40000
clientPortListenBacklog=-1
`

var fds = regexp.MustCompile(`(file_descriptor_count\t)\d+`)

// builtOn is the build date ZooKeeper prints after its version, in its
// format: "built on 2024-12-29 17:54 UTC".
var builtOn = regexp.MustCompile(`built on \d{4}-\d\d-\d\d \d\d:\d\d UTC`)

// TestFourLetterWords holds every word's answer, in each role, to
// ZooKeeper 3.8's text for the fixture's state.
func TestFourLetterWords(t *testing.T) {
	tests := []struct {
		mode       membership.State
		word, want string
	}{
		{Standalone, "ruok", "imok"},
		{Standalone, "isro", "rw"},
		{Standalone, "srvr", srvrStandalone},
		{Standalone, "stat", "Zookeeper version: 3.8.0-hutch, built on BUILT\nClients:\n" +
			" /127.0.0.1:50001[1](queued=0,recved=6,sent=6)\n /127.0.0.1:50002[1](queued=0,recved=2,sent=2)\n /127.0.0.1:50003[0](queued=0,recved=1,sent=0)\n\n" +
			strings.TrimPrefix(srvrStandalone, "Zookeeper version: 3.8.0-hutch, built on BUILT\n")},
		{Standalone, "cons", consLines()},
		{Standalone, "conf", confStandalone + "serverId=0\n"},
		{Standalone, "dump", "SessionTracker dump:\nSession Sets (2)/(3):\n" +
			"2 expire at Mon Nov 23 14:02:00 UTC 2026:\n\t0x100000000000001\n\t0x100000000000002\n" +
			"1 expire at Mon Nov 23 14:02:02 UTC 2026:\n\t0x100000000000003\n" +
			ephemeralsDump +
			"Connections dump:\nConnections Sets (2)/(3):\n" +
			"2 expire at Mon Nov 23 14:02:00 UTC 2026:\n\tip: /127.0.0.1:50001 sessionId: 0x100000000000001\n\tip: /127.0.0.1:50002 sessionId: 0x100000000000002\n" +
			"1 expire at Mon Nov 23 14:02:08 UTC 2026:\n\tip: /127.0.0.1:50003 sessionId: 0x0\n"},
		{Standalone, "wchs", "3 connections watching 2 paths\nTotal watches:3\n"},
		{Standalone, "wchc", "0x0\n\t/a\n0x100000000000001\n\t/a\n0x100000000000002\n\t/b\n\n"},
		{Standalone, "wchp", "/a\n\t0x0\n\t0x100000000000001\n/b\n\t0x100000000000002\n\n"},
		{Standalone, "mntr", mntrStandalone},
		{Standalone, "hash", "80: 123\n100: 456\n"},
		{Standalone, "dirs", "datadir_size: 0\nlogdir_size: 0\n"},

		{Leader, "srvr", strings.Replace(srvrStandalone, "standalone", "leader", 1) + "Proposal sizes last/min/max: 50/40/60\n"},
		{Leader, "mntr", strings.Replace(mntrStandalone, "standalone", "leader", 1) +
			"zk_learners\t2\nzk_synced_followers\t1\nzk_synced_non_voting_followers\t0\nzk_synced_observers\t1\nzk_pending_syncs\t0\n" +
			"zk_last_proposal_size\t50\nzk_max_proposal_size\t60\nzk_min_proposal_size\t40\n"},
		{Leader, "conf", confStandalone + "serverId=2\ninitLimit=10\nsyncLimit=5\nelectionAlg=3\nelectionPort=7102\nquorumPort=7002\npeerType=0\n" +
			"membership: \nserver.1=127.0.0.1:7001:7101:participant\nserver.2=127.0.0.1:7002:7102:participant;127.0.0.1:2182\nserver.3=127.0.0.1:7003:7103:observer\nversion=100000000\n"},
		{Follower, "srvr", strings.Replace(srvrStandalone, "standalone", "follower", 1)},
		{Follower, "dump", "SessionTracker dump:\nGlobal Sessions(2):\n0x100000000000001\t30000ms\n0x100000000000002\t10000ms\n" +
			ephemeralsDump +
			"Connections dump:\nConnections Sets (3)/(3):\n" +
			"1 expire at Mon Nov 23 14:00:40 UTC 2026:\n\tip: /127.0.0.1:50001 sessionId: 0x100000000000001\n" +
			"1 expire at Mon Nov 23 14:00:42 UTC 2026:\n\tip: /127.0.0.1:50002 sessionId: 0x100000000000002\n" +
			"1 expire at Mon Nov 23 14:02:08 UTC 2026:\n\tip: /127.0.0.1:50003 sessionId: 0x0\n"},
	}
	for _, tc := range tests {
		t.Run(tc.mode.String()+"/"+tc.word, func(t *testing.T) {
			src := standalone()
			if tc.mode != Standalone {
				src = ensemble(tc.mode)
			}
			got := newMonitor(t, src, Config{}).Answer(tc.word)
			got = fds.ReplaceAllString(got, "${1}FDS")
			got = builtOn.ReplaceAllString(got, "built on BUILT")
			if got != tc.want {
				t.Errorf("%s answers\n%s\nwant\n%s", tc.word, got, tc.want)
			}
			if src.calls != 1 {
				t.Errorf("%s took %d snapshots, want 1", tc.word, src.calls)
			}
		})
	}
}

// TestFourLetterResets: crst and srst clear what ZooKeeper's clear, and
// the next answers show it.
func TestFourLetterResets(t *testing.T) {
	src := standalone()
	m := newMonitor(t, src, Config{})
	if got := m.Answer("crst"); got != "Connection stats reset.\n" {
		t.Fatalf("crst = %q", got)
	}
	want := " /127.0.0.1:50001[1](queued=0,recved=0,sent=0,sid=0x100000000000001,lop=NA,est=%d,to=30000,lzxid=0xffffffffffffffff,lresp=0,llat=0,minlat=0,avglat=0,maxlat=0)\n"
	if got := m.Answer("cons"); !strings.HasPrefix(got, fmt.Sprintf(want, at(time.Second).UnixMilli())) {
		t.Errorf("cons after crst:\n%s", got)
	}
	if got := m.Answer("srst"); got != "Server stats reset.\n" {
		t.Fatalf("srst = %q", got)
	}
	if got := m.Answer("srvr"); !strings.Contains(got, "Latency min/avg/max: 0/0.0/0\nReceived: 0\nSent: 0\n") {
		t.Errorf("srvr after srst:\n%s", got)
	}
}

// TestFourLetterDirs: dirs and conf add up the bytes under the data and
// log directories.
func TestFourLetterDirs(t *testing.T) {
	src := standalone()
	data, log := t.TempDir(), t.TempDir()
	for path, size := range map[string]int{filepath.Join(data, "a"): 100, filepath.Join(data, "sub", "b"): 20, filepath.Join(log, "c"): 7} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src.state.Server.DataDir, src.state.Server.DataLogDir = data, log
	m := newMonitor(t, src, Config{})
	if got := m.Answer("dirs"); got != "datadir_size: 120\nlogdir_size: 7\n" {
		t.Errorf("dirs = %q", got)
	}
	if got, want := m.Answer("conf"), fmt.Sprintf("dataDir=%s\ndataDirSize=120\ndataLogDir=%s\ndataLogSize=7\n", data, log); !strings.Contains(got, want) {
		t.Errorf("conf lacks %q:\n%s", want, got)
	}
}

// TestFourLetterNotServing: while the server serves no clients, ruok and
// envi still answer, isro says null, and every other word says it does
// not serve.
func TestFourLetterNotServing(t *testing.T) {
	src := ensemble(Follower)
	src.state.Serving = false
	m := newMonitor(t, src, Config{})
	for word, cmd := range m.byWord {
		got := m.Answer(word)
		switch word {
		case "ruok":
			if got != "imok" {
				t.Errorf("ruok = %q", got)
			}
		case "envi":
			if !strings.HasPrefix(builtOn.ReplaceAllString(got, "built on BUILT"), "Environment:\nzookeeper.version=3.8.0-hutch, built on BUILT\n") {
				t.Errorf("envi = %q", got)
			}
		case "isro":
			if got != "null" {
				t.Errorf("isro = %q", got)
			}
		default:
			if !cmd.serving || got != notServingText {
				t.Errorf("%s = %q while not serving", word, got)
			}
		}
	}
	if src.state.Stats.PacketsReceived == 0 || src.state.Connections[0].Received == 0 {
		t.Error("srst or crst reset the statistics while not serving")
	}
}

// TestFourLetterWhitelistDefault: every word on a loopback-only client
// port; on any other address only the safe ones, srvr always; a word off
// the list gets ZooKeeper's refusal.
func TestFourLetterWhitelistDefault(t *testing.T) {
	for _, tc := range []struct {
		listen string
		words  []string
		on     []string
		off    []string
	}{
		{"127.0.0.1:2181", nil, []string{"ruok", "srvr", "mntr", "dump", "envi", "wchc", "crst"}, nil},
		{"localhost:2181", nil, []string{"dump", "envi"}, nil},
		{"[::1]:2181", nil, []string{"dump"}, nil},
		{":2181", nil, []string{"ruok", "srvr", "isro"}, []string{"mntr", "dump", "envi", "wchc", "wchp", "cons", "crst", "srst", "conf"}},
		{"0.0.0.0:2181", nil, []string{"srvr"}, []string{"dump"}},
		{"10.1.2.3:2181", nil, []string{"ruok"}, []string{"envi"}},
		{"127.0.0.1:1", []string{"ruok"}, []string{"ruok", "srvr"}, []string{"mntr"}},
		{"10.1.2.3:2181", []string{" mntr ", "*"}, []string{"mntr", "dump", "hash", "dirs"}, nil},
	} {
		m := newMonitor(t, standalone(), Config{ListenAddr: tc.listen, FourLetterWords: tc.words})
		for _, w := range tc.on {
			if got := m.Answer(w); strings.Contains(got, "not in the whitelist") {
				t.Errorf("%s %v: %s is off", tc.listen, tc.words, w)
			}
		}
		for _, w := range tc.off {
			if got, want := m.Answer(w), w+" is not executed because it is not in the whitelist.\n"; got != want {
				t.Errorf("%s %v: %s = %q, want %q", tc.listen, tc.words, w, got, want)
			}
		}
	}
}

// TestRegistry: the registry holds ZooKeeper 3.8's sixteen words, each
// once, every name once, and a token on every membership change.
func TestRegistry(t *testing.T) {
	m := newMonitor(t, standalone(), Config{})
	words := []string{"conf", "cons", "crst", "dirs", "dump", "envi", "hash", "isro", "mntr", "ruok", "srst", "srvr", "stat", "wchc", "wchp", "wchs"}
	if len(m.byWord) != len(words) {
		t.Errorf("%d four-letter words, want %d", len(m.byWord), len(words))
	}
	for _, w := range words {
		if c := m.byWord[w]; c == nil || c.text == nil || !slices.Contains(c.names, w) {
			t.Errorf("word %s: %+v", w, c)
		}
	}
	seen := map[string]bool{}
	for _, c := range registry {
		for _, n := range c.names {
			if seen[n] && c.change == nil {
				t.Errorf("name %s twice", n)
			}
			seen[n] = true
		}
		if c.change != nil && (!c.token || c.valid == nil || c.method == "" || c.path == "") {
			t.Errorf("membership change %s is not guarded: %+v", c.names[0], c)
		}
	}
}

func TestJavaFormats(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0.0"}, {1, "1.0"}, {4, "4.0"}, {1.5, "1.5"}, {0.3333, "0.3333"}, {5.5, "5.5"}, {2.5, "2.5"},
		{1234567, "1234567.0"}, {1e7, "1.0E7"}, {0.0001, "1.0E-4"}, {math.Round(10.0/3*1e4) / 1e4, "3.3333"},
	} {
		if got := javaDouble(tc.f); got != tc.want {
			t.Errorf("javaDouble(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
	// Java's HashMap of 16 buckets puts these in this order (bucket
	// index (h ^ h>>>16) & 15 of String.hashCode).
	got := javaHashOrder([]string{"/b", "/a", "/zookeeper", "/c"})
	want := []string{"/a", "/b", "/c", "/zookeeper"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("javaHashOrder = %v, want %v", got, want)
	}
	if s := javaDate(time.Date(2026, 11, 23, 14, 14, 28, 0, time.UTC)); s != "Mon Nov 23 14:14:28 UTC 2026" {
		t.Errorf("javaDate = %q", s)
	}
}
