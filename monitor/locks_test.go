package monitor

import (
	"errors"
	"reflect"
	"strings"
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
		v := &view{Snapshot: &Snapshot{Mode: Leader, Replication: Replication{NodeID: self}, Sessions: tc.sessions, Watches: tc.watches}}
		markLocal(v)
		for _, q := range lockQueues(v.Sessions, v.Watches) {
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

// TestLockQueuesSingleNode: on a single node a waiter whose client went is
// waiting with no connection, not "unknown here" on another member (the
// view once said its watches were on node 1).
func TestLockQueuesSingleNode(t *testing.T) {
	v := &view{Snapshot: &Snapshot{Mode: Standalone, Replication: Replication{NodeID: 1}, Sessions: []Session{
		{ID: 1, Node: 1, Remote: "127.0.0.1:1", Ephemerals: []string{"/l/n0000000001"}},
		{ID: 2, Node: 1, Ephemerals: []string{"/l/n0000000002"}},
	}}}
	markLocal(v)
	qs := lockQueues(v.Sessions, v.Watches)
	if len(qs) != 1 || qs[0].Entries[1].Wait != waitDisconnected {
		t.Fatalf("queues %+v", qs)
	}
}

// TestLockQueuesMerged: in a view of the whole ensemble, a waiter
// connected through another member shows the watch that member reports,
// and one whose member did not answer is unknown, naming it.
func TestLockQueuesMerged(t *testing.T) {
	v := &view{Snapshot: &Snapshot{Mode: Leader, Replication: Replication{NodeID: 1}, Sessions: []Session{
		{ID: 1, Node: 1, Remote: "127.0.0.1:1", Ephemerals: []string{"/l/n0000000001"}},
		{ID: 2, Node: 2, Ephemerals: []string{"/l/n0000000002"}},
		{ID: 3, Node: 3, Ephemerals: []string{"/l/n0000000003"}},
	}}}
	markLocal(v)
	two := &memberReport{NodeID: 2, Sessions: []reportedSession{{ID: 2, Remote: "127.0.0.1:2"}},
		Watches: []Watch{{Path: "/l/n0000000001", Session: 2, Mode: "standard", Watcher: 99}}}
	ens := merge(v, &memberReport{NodeID: 1}, []memberAnswer{{Member: Member{ID: 2}, Report: two}, {Member: Member{ID: 3}, Err: errors.New("refused")}})
	qs := lockQueues(v.Sessions, v.Watches)
	if len(qs) != 1 {
		t.Fatalf("queues %+v", qs)
	}
	e := qs[0].Entries
	if e[1].Wait != waitPredecessor || e[1].Attached != 2 || e[2].Wait != waitElsewhere || e[2].Node != 3 {
		t.Fatalf("entries %+v", e)
	}
	if silent := ens.Silent(); len(silent) != 1 || silent[0].Member.ID != 3 {
		t.Fatalf("silent %+v", silent)
	}
	if v.Watches[0].Member != 2 {
		t.Fatalf("the merged watch is not marked as member 2's: %+v", v.Watches)
	}
}

func TestFitWidth(t *testing.T) {
	for _, c := range []struct {
		name, in string
		cut      bool
	}{
		{"a short name stays whole", "worker-1", false},
		{"an address stays whole", "10.0.0.1:8080", false},
		{"markup of wide letters is cut", `<svg onload="window.pwned=4"></svg>`, true},
		{"wide script is cut", strings.Repeat("锁", 20), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := fitLabel(c.in)
			if cut := got != c.in; cut != c.cut {
				t.Fatalf("fitLabel(%q) = %q: cut %v, want %v", c.in, got, cut, c.cut)
			}
			w := 0.0
			for _, r := range got {
				w += boldEm(r)
			}
			if w > boxTextW/labelPx {
				t.Errorf("fitLabel(%q) = %q is %.1f ems wide, more than the box's %.1f", c.in, got, w, float64(boxTextW)/labelPx)
			}
			if c.cut && !strings.HasSuffix(got, "…") {
				t.Errorf("fitLabel(%q) = %q: a cut without its ellipsis", c.in, got)
			}
		})
	}
}
