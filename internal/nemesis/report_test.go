package nemesis

import (
	"strings"
	"testing"
	"time"
)

func TestOverlaps(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name  string
		holds []hold
		want  int
	}{
		{"one after another", []hold{{client: 0, enter: at(0), exit: at(10)}, {client: 1, enter: at(10), exit: at(20)}, {client: 2, enter: at(25), exit: at(30)}}, 0},
		{"second enters before the first leaves", []hold{{client: 0, enter: at(0), exit: at(10)}, {client: 1, enter: at(9), exit: at(20)}}, 1},
		{"one inside another, in any order", []hold{{client: 1, enter: at(2), exit: at(3)}, {client: 0, enter: at(0), exit: at(10)}}, 1},
		{"three at once", []hold{{client: 0, enter: at(0), exit: at(10)}, {client: 1, enter: at(1), exit: at(10)}, {client: 2, enter: at(2), exit: at(10)}}, 3},
		{"the first's session ended while it held", []hold{{client: 0, enter: at(0), exit: at(10), lost: true}, {client: 1, enter: at(1), exit: at(3)}, {client: 2, enter: at(4), exit: at(6)}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := overlaps(tc.holds); len(got) != tc.want {
				t.Fatalf("overlaps = %q, want %d", got, tc.want)
			}
		})
	}
}

func TestReportErr(t *testing.T) {
	clean := func() *Report {
		return &Report{FaultsPlanned: 1, Faults: map[Kind]int{KillLeader: 1}, SessionsExpired: map[string]int{},
			AckedWrites: 10, LiveSessions: 3, LockAcquisitions: 2, FenceValue: 5, FenceAcked: 4, FenceUnknown: 1,
			Linearizability: "legal", RegisterOps: 7, DigestsEqual: true, Digests: []string{"d@1", "d@1", "d@1"}}
	}
	tests := []struct {
		name  string
		spoil func(*Report)
		want  string // in the error; "" for none
	}{
		{"clean", func(*Report) {}, ""},
		{"lost write", func(r *Report) { r.AckedLost = 1 }, "acknowledged writes lost: 1"},
		{"live session expired", func(r *Report) { r.LiveWronglyExpired = 2 }, "live sessions wrongly expired: 2 of 3"},
		{"expiry elsewhere", func(r *Report) { r.SessionsExpired["lock"] = 1 }, "lock 1"},
		{"order", func(r *Report) { r.OrderViolations = 1 }, "session order violations: 1"},
		{"double holder", func(r *Report) { r.DoubleHolders = 1 }, "two clients at once"},
		{"fence too high", func(r *Report) { r.FenceValue = 6 }, "fence counter is 6"},
		{"fence too low", func(r *Report) { r.FenceValue = 3 }, "fence counter is 3"},
		{"illegal", func(r *Report) { r.Linearizability = "illegal" }, "register history: illegal"},
		{"digests", func(r *Report) { r.DigestsEqual = false }, "digests differ"},
		{"problem", func(r *Report) { r.Problems = []string{"node 2 did not restart"} }, "node 2 did not restart"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := clean()
			tc.spoil(r)
			err := r.Err()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Err() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Err() = %v, want it to say %q", err, tc.want)
			}
			if s := r.String(); !strings.Contains(s, "linearizability") {
				t.Fatalf("String() has no linearizability row:\n%s", s)
			}
		})
	}
}
