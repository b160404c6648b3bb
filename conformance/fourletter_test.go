package conformance

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/server"
)

// TestFourLetterWords runs every four-letter word of ZooKeeper 3.8 against
// ZooKeeper and hutch after the same session activity, and holds hutch to
// ZooKeeper's text: the same lines, keys and order, and the same values
// wherever the values are not ports, times, ids or directories.
func TestFourLetterWords(t *testing.T) {
	forEachTarget(t, func(t *testing.T, addr string, l *ledger) {
		conn, events, err := zk.Connect([]string{addr}, 30*time.Second, zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		waitSession(t, events)
		must := func(_ any, err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(conn.Create("/a", []byte("x"), 0, zk.WorldACL(zk.PermAll)))
		must(conn.Create("/a/e", []byte("x"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)))
		_, _, _, err = conn.GetW("/a")
		must(nil, err)
		_, _, _, err = conn.ExistsW("/b")
		must(nil, err)
		_, _, _, err = conn.ChildrenW("/a")
		must(nil, err)

		for _, word := range []string{"ruok", "isro", "srvr", "stat", "cons", "conf", "envi", "dump", "wchs", "wchc", "wchp", "mntr", "hash", "dirs", "crst", "cons", "srst", "srvr"} {
			out, err := realzk.FourLetterWord(addr, word, 10*time.Second)
			if err != nil {
				t.Fatalf("%s: %v", word, err)
			}
			for _, line := range fourLetterShape(t, word, out) {
				l.record("%s: %s", word, line)
			}
		}
	})
}

// waitSession waits for the session to be established.
func waitSession(t *testing.T, events <-chan zk.Event) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return
			}
		case <-deadline:
			t.Fatal("no session within 20s")
		}
	}
}

var (
	hexID     = regexp.MustCompile(`0x[0-9a-f]{9,}`)
	remote    = regexp.MustCompile(`/127\.0\.0\.1:\d+`)
	javaDate  = regexp.MustCompile(`[A-Z][a-z]{2} [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d [A-Z]+ \d{4}`)
	latencyRe = regexp.MustCompile(`^Latency min/avg/max: \d+/\d+\.\d+(E-?\d+)?/\d+$`)
	consFull  = regexp.MustCompile(`^ /127\.0\.0\.1:\d+\[1\]\(queued=(\d+),recved=\d+,sent=\d+,sid=0x[0-9a-f]+,lop=([A-Z]+),est=\d{13},to=(\d+),lcxid=(0x[0-9a-f]+),lzxid=(0x[0-9a-f]+),lresp=\d+,llat=\d+,minlat=\d+,avglat=\d+,maxlat=\d+\)$`)
	consReset = regexp.MustCompile(`^ /127\.0\.0\.1:\d+\[1\]\(queued=(\d+),recved=\d+,sent=\d+,sid=0x[0-9a-f]+,lop=NA,est=\d{13},to=(\d+),lzxid=0xffffffffffffffff,lresp=0,llat=0,minlat=0,avglat=0,maxlat=0\)$`)
	briefConn = regexp.MustCompile(`^ /127\.0\.0\.1:\d+\[([01])\]\(queued=\d+,recved=\d+,sent=\d+\)$`)
)

// fullVersionLine is srvr's and stat's first line as ZooKeeper 3.8 prints
// it: "Zookeeper version: 3.8.0-<commit>, built on 2024-12-29 17:54 UTC".
var fullVersionLine = regexp.MustCompile(`^Zookeeper version: 3\.8\.0-\S+, built on \d{4}-\d\d-\d\d \d\d:\d\d UTC$`)

// fourLetterShape reduces a word's answer to what must match ZooKeeper
// exactly, failing the test on a line of the wrong form.
func fourLetterShape(t *testing.T, word, out string) []string {
	t.Helper()
	lines := strings.Split(out, "\n")
	var shape []string
	add := func(s string) { shape = append(shape, s) }
	switch word {
	case "ruok", "isro", "hash", "crst", "srst", "wchs":
		return lines
	case "srvr", "stat":
		sessions := 0
		for _, ln := range lines {
			key, val, _ := strings.Cut(ln, ": ")
			switch {
			case strings.HasPrefix(ln, "Zookeeper version: 3.8.0-"):
				// ZooKeeper's full version: tools parse the ", built
				// on" part.
				if !fullVersionLine.MatchString(ln) {
					t.Errorf("%s: bad version line %q", word, ln)
				}
				add("Zookeeper version: 3.8.0-*, built on *")
			case strings.HasPrefix(ln, "Latency"):
				if !latencyRe.MatchString(ln) {
					t.Errorf("%s: bad latency line %q", word, ln)
				}
				add("Latency min/avg/max: L")
			case key == "Received" || key == "Sent" || key == "Connections":
				add(key + ": N") // the probes' own connections come and go
			case strings.HasPrefix(ln, " /"):
				m := briefConn.FindStringSubmatch(ln)
				if m == nil {
					t.Errorf("%s: bad client line %q", word, ln)
				} else if m[1] == "1" {
					sessions++
				}
			default:
				add(ln)
				_ = val
			}
		}
		if word == "stat" {
			add("client sessions: " + string(rune('0'+sessions)))
		}
		return shape
	case "cons":
		var sessions []string
		asker := false
		for _, ln := range lines {
			switch {
			case ln == "":
				continue
			case briefConn.MatchString(ln):
				asker = true // the connection asking, which has no session
			case consFull.MatchString(ln):
				m := consFull.FindStringSubmatch(ln)
				sessions = append(sessions, "queued="+m[1]+" lop="+m[2]+" to="+m[3]+" lcxid="+m[4]+" lzxid="+m[5])
			case consReset.MatchString(ln):
				m := consReset.FindStringSubmatch(ln)
				sessions = append(sessions, "reset queued="+m[1]+" to="+m[2])
			default:
				t.Errorf("cons: bad line %q", ln)
			}
		}
		if !asker {
			t.Errorf("cons does not list the asking connection:\n%s", out)
		}
		slices.Sort(sessions)
		return append(sessions, "ends with an empty line: "+boolWord(strings.HasSuffix(out, ")\n\n")))
	case "conf":
		for _, ln := range lines {
			key, val, _ := strings.Cut(ln, "=")
			switch key {
			case "clientPort", "dataDir", "dataDirSize", "dataLogDir", "dataLogSize", "maxClientCnxns":
				add(key + "=*")
			default:
				add(key + "=" + val)
			}
		}
		return shape
	case "envi", "dirs":
		for _, ln := range lines {
			key, _, ok := strings.Cut(ln, "=")
			if !ok {
				key, _, _ = strings.Cut(ln, ": ")
			}
			add(key)
		}
		return shape
	case "dump", "wchc", "wchp":
		for _, ln := range lines {
			ln = hexID.ReplaceAllString(ln, "SESSION")
			ln = remote.ReplaceAllString(ln, "/ADDR")
			ln = javaDate.ReplaceAllString(ln, "DATE")
			add(ln)
		}
		if word == "dump" {
			// ZooKeeper's expiry queue keeps the bucket a session left
			// when it was touched until that bucket's time passes, so it
			// may or may not list an empty bucket (and count it in
			// "Session Sets (n)"), depending on whether a request crossed
			// a tick boundary: compare the buckets that hold sessions.
			shape = slices.DeleteFunc(shape, func(ln string) bool { return strings.HasPrefix(ln, "0 expire at ") })
			for j, ln := range shape {
				if strings.HasPrefix(ln, "Session Sets (") {
					if _, total, ok := strings.Cut(ln, ")/"); ok {
						shape[j] = "Session Sets (BUCKETS)/" + total
					}
				}
			}
			// The connection part lists the asking connection and the
			// probes' connections, which come and go: keep the sessions.
			i := slices.Index(shape, "Connections dump:")
			if i < 0 {
				t.Fatalf("dump without a connections part:\n%s", out)
			}
			rest := []string{}
			for _, ln := range shape[i:] {
				if strings.Contains(ln, "sessionId: SESSION") {
					rest = append(rest, ln)
				}
			}
			shape = append(shape[:i+1], rest...)
		}
		return shape
	case "mntr":
		// ZooKeeper prints hundreds of metrics; hutch prints the ones it
		// keeps. Each hutch key must be one of ZooKeeper's, in the same
		// relative order, with the same value where the value is a count
		// both servers must agree on.
		exact := map[string]bool{"zk_server_state": true, "zk_ephemerals_count": true, "zk_outstanding_requests": true,
			"zk_znode_count": true, "zk_global_sessions": true, "zk_watch_count": true, "zk_approximate_data_size": true,
			"zk_auth_failed_count": true, "zk_local_sessions": true}
		for _, ln := range lines {
			if ln == "" {
				continue
			}
			key, val, ok := strings.Cut(ln, "\t")
			if !ok {
				t.Errorf("mntr: bad line %q", ln)
				continue
			}
			if !slices.Contains(hutchMonitorKeys, key) {
				continue
			}
			if exact[key] {
				add(key + "\t" + val)
			} else {
				add(key)
			}
		}
		return shape
	}
	t.Fatalf("no shape for %s", word)
	return nil
}

// hutchMonitorKeys are the mntr keys hutch prints on a standalone node.
var hutchMonitorKeys = []string{"zk_version", "zk_server_state", "zk_ephemerals_count", "zk_num_alive_connections",
	"zk_avg_latency", "zk_outstanding_requests", "zk_znode_count", "zk_global_sessions", "zk_packets_sent",
	"zk_packets_received", "zk_watch_count", "zk_auth_failed_count", "zk_min_latency", "zk_max_file_descriptor_count",
	"zk_approximate_data_size", "zk_open_file_descriptor_count", "zk_local_sessions", "zk_uptime", "zk_max_latency",
	"zk_bytes_received_count"}

func boolWord(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// TestFourLetterWhitelist checks a word left off 4lw.commands.whitelist:
// ZooKeeper's refusal text, srvr answered whatever the list says.
func TestFourLetterWhitelist(t *testing.T) {
	for _, tg := range []target{
		{name: "zookeeper", start: func(tb testing.TB) string {
			return realzk.Start(tb, realzk.Config("4lw.commands.whitelist", "ruok,conf")).Addr
		}},
		{name: "hutch", start: func(tb testing.TB) string {
			return startHutchConfig(tb, server.Config{FourLetterWords: []string{"ruok", "conf"}}, 0)
		}},
		{name: "hutch-binary", start: func(tb testing.TB) string {
			return realzk.StartHutchBinary(tb, realzk.BuildHutch(tb), "--four-letter-words", "ruok,conf").Addr
		}},
	} {
		t.Run(tg.name, func(t *testing.T) {
			addr := tg.start(t)
			for _, tc := range []struct{ word, want string }{
				{"ruok", "imok"},
				{"mntr", "mntr is not executed because it is not in the whitelist.\n"},
				{"envi", "envi is not executed because it is not in the whitelist.\n"},
				{"dump", "dump is not executed because it is not in the whitelist.\n"},
			} {
				got, err := realzk.FourLetterWord(addr, tc.word, 10*time.Second)
				if err != nil || got != tc.want {
					t.Errorf("%s = %q, %v; want %q", tc.word, got, err, tc.want)
				}
			}
			for _, word := range []string{"srvr", "conf"} {
				got, err := realzk.FourLetterWord(addr, word, 10*time.Second)
				if err != nil || strings.Contains(got, "whitelist") || got == "" {
					t.Errorf("%s = %q, %v; want it answered", word, got, err)
				}
			}
		})
	}
}
