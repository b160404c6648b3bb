package monitor

import (
	"reflect"
	"testing"
)

// TestLockQueues: queues come from ephemeral sequential children, in
// sequence order whatever their names' prefixes, and each contender's
// wait is read from its session's watches: the fair chain, a herd on the
// parent or on the holder, a session on another member, one with no
// connection.
func TestLockQueues(t *testing.T) {
	const self = 1
	here := func(id int64, eph ...string) Session {
		return Session{ID: id, Remote: "127.0.0.1:1", Node: self, Ephemerals: eph}
	}
	data := func(id int64, path string) Watch { return Watch{Path: path, Session: id, Mode: "standard"} }
	child := func(id int64, path string) Watch {
		return Watch{Path: path, Session: id, Child: true, Mode: "standard"}
	}
	type entry struct {
		name    string
		session int64
		wait    waitKind
		watched string
	}
	type queue struct {
		parent  string
		herd    int
		entries []entry
	}
	tests := []struct {
		name     string
		sessions []Session
		watches  []Watch
		want     []queue
	}{
		{"fair chain, Curator's names sorted by sequence",
			[]Session{
				here(3, "/lock/_c_b-lock-0000000002"),
				here(1, "/lock/_c_z-lock-0000000000", "/plain"),
				here(2, "/lock/_c_a-lock-0000000001"),
			},
			[]Watch{data(2, "/lock/_c_z-lock-0000000000"), data(3, "/lock/_c_a-lock-0000000001"), data(0, "/lock/x")},
			[]queue{{"/lock", 0, []entry{
				{"_c_z-lock-0000000000", 1, waitNone, ""},
				{"_c_a-lock-0000000001", 2, waitPredecessor, "/lock/_c_z-lock-0000000000"},
				{"_c_b-lock-0000000002", 3, waitPredecessor, "/lock/_c_a-lock-0000000001"},
			}}}},
		{"herd on the parent, by child watch or a recursive watch above it",
			[]Session{here(1, "/a/l/n-0000000005"), here(2, "/a/l/n-0000000006"), here(3, "/a/l/n-0000000007")},
			[]Watch{child(2, "/a/l"), {Path: "/a", Session: 3, Mode: "persistentRecursive"}, {Path: "/a", Session: 3, Child: true, Mode: "persistentRecursive"}},
			[]queue{{"/a/l", 2, []entry{
				{"n-0000000005", 1, waitNone, ""},
				{"n-0000000006", 2, waitParent, "/a/l"},
				{"n-0000000007", 3, waitParent, "/a/l"},
			}}}},
		{"herd on the holder: only the second's is its predecessor",
			[]Session{here(1, "/q/x0000000001"), here(2, "/q/x0000000002"), here(3, "/q/x0000000003")},
			[]Watch{data(2, "/q/x0000000001"), data(3, "/q/x0000000001"), data(3, "/q/x0000000003")},
			[]queue{{"/q", 1, []entry{
				{"x0000000001", 1, waitNone, ""},
				{"x0000000002", 2, waitPredecessor, "/q/x0000000001"},
				{"x0000000003", 3, waitOther, "/q/x0000000001"},
			}}}},
		{"sessions elsewhere and without a connection; queues by parent",
			[]Session{
				{ID: 4, Node: 2, Ephemerals: []string{"/z/n0000000002"}},
				{ID: 5, Node: self, Ephemerals: []string{"/z/n0000000003"}},
				here(6, "/b/n0000000001", "/b/not-sequential", "/b/n000000000x"),
			},
			nil,
			[]queue{
				{"/b", 0, []entry{{"n0000000001", 6, waitNone, ""}}},
				{"/z", 0, []entry{{"n0000000002", 4, waitElsewhere, ""}, {"n0000000003", 5, waitDisconnected, ""}}},
			}},
		{"no sequential ephemerals, no queue", []Session{here(1, "/e", "/f/short1")}, nil, []queue{}},
	}
	for _, tc := range tests {
		var got []queue
		for _, q := range lockQueues(self, tc.sessions, tc.watches) {
			gq := queue{parent: q.Parent, herd: q.Herd, entries: []entry{}}
			for _, e := range q.Entries {
				gq.entries = append(gq.entries, entry{e.Name, e.Session, e.Wait, e.Watched})
			}
			got = append(got, gq)
		}
		if got == nil {
			got = []queue{}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// TestSequenceOf reads the last ten digits, and nothing else.
func TestSequenceOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		seq  int64
		ok   bool
	}{
		{"lock-0000000042", 42, true},
		{"0000000000", 0, true},
		{"2147483647", 2147483647, true},
		{"x000000001", 0, false},
		{"000000001", 0, false},
		{"lock-00000000-1", 0, false},
	} {
		if seq, ok := sequenceOf(tc.name); seq != tc.seq || ok != tc.ok {
			t.Errorf("sequenceOf(%q) = %d %v, want %d %v", tc.name, seq, ok, tc.seq, tc.ok)
		}
	}
}
