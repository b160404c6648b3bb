package hutchtest

import (
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMemberNumbering: member n is the same member everywhere a test
// meets it: its address (127.0.0.n, in Addrs and the connect string at
// place n), its Raft node id, and its name in the log (hutch-n: every
// line where a member votes for itself names id n, and the member that
// entered the leader state last is the one Leader returns).
func TestMemberNumbering(t *testing.T) {
	lt := &logTB{TB: t}
	e := StartEnsemble(lt, 3, LogLevel(slog.LevelDebug))
	lead := e.WaitLeader() // every member names it
	for n := 1; n <= 3; n++ {
		want := fmt.Sprintf("127.0.0.%d:0", n)
		if e.Addrs()[n-1] != want || e.Member(n).Addr() != want || strings.Split(e.ConnectString(), ",")[n-1] != want {
			t.Errorf("member %d: Addrs %v, Addr %s, connect string %s", n, e.Addrs(), e.Member(n).Addr(), e.ConnectString())
		}
		if id := e.Member(n).Server().Replication().LeaderID; id != uint64(lead) {
			t.Errorf("member %d names Raft node %d as its leader; Leader() = %d", n, id, lead)
		}
	}
	selfVote := regexp.MustCompile(`^hutch-(\d+): .*msg="raft: (?:pre-)?voting for self" .*\bid=(\d+)`)
	leaderState := regexp.MustCompile(`^hutch-(\d+): .*msg="raft: entering leader state"`)
	votes, lastLeader := 0, ""
	for _, line := range strings.Split(lt.all(), "\n") {
		if m := selfVote.FindStringSubmatch(line); m != nil {
			votes++
			if m[1] != m[2] {
				t.Errorf("hutch-%s votes for itself as Raft node %s: %s", m[1], m[2], line)
			}
		}
		if m := leaderState.FindStringSubmatch(line); m != nil {
			lastLeader = m[1]
		}
	}
	if votes == 0 || lastLeader != strconv.Itoa(lead) {
		t.Errorf("%d self-votes logged; the log's last leader is hutch-%s, Leader() = %d:\n%s", votes, lastLeader, lead, lt.all())
	}
}
