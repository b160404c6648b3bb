package watch

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/hutchzk/hutch/wire"
)

const (
	created  = wire.EventNodeCreated
	deleted  = wire.EventNodeDeleted
	changed  = wire.EventNodeDataChanged
	children = wire.EventNodeChildrenChanged
)

// op is one step of a scenario: set a watch, or fire an event and expect the
// sessions told.
type op struct {
	do   string // data, child, persistent, recursive, fire, drop
	path string
	sess int64
	typ  wire.EventType
	want []int64 // fire: sessions told, in order
}

func data(path string, s int64) op      { return op{do: "data", path: path, sess: s} }
func child(path string, s int64) op     { return op{do: "child", path: path, sess: s} }
func persist(path string, s int64) op   { return op{do: "persistent", path: path, sess: s} }
func recursive(path string, s int64) op { return op{do: "recursive", path: path, sess: s} }
func drop(s int64) op                   { return op{do: "drop", sess: s} }
func fire(typ wire.EventType, path string, want ...int64) op {
	return op{do: "fire", typ: typ, path: path, want: want}
}

func run(t *testing.T, m *Manager, ops []op) {
	t.Helper()
	for i, o := range ops {
		switch o.do {
		case "data":
			m.AddData(o.path, o.sess)
		case "child":
			m.AddChild(o.path, o.sess)
		case "persistent":
			m.AddPersistent(o.path, o.sess, false)
		case "recursive":
			m.AddPersistent(o.path, o.sess, true)
		case "drop":
			m.RemoveSession(o.sess)
		case "fire":
			var got []int64
			m.Trigger(o.typ, o.path, func(s int64, ev wire.WatcherEvent) {
				want := wire.WatcherEvent{Type: o.typ, State: wire.StateSyncConnected, Path: o.path}
				if ev != want {
					t.Errorf("op %d: event %+v, want %+v", i, ev, want)
				}
				got = append(got, s)
			})
			if !slices.Equal(got, o.want) {
				t.Fatalf("op %d: %v on %s told %v, want %v", i, o.typ, o.path, got, o.want)
			}
		default:
			t.Fatalf("op %d: unknown %q", i, o.do)
		}
	}
}

func TestTrigger(t *testing.T) {
	tests := []struct {
		name  string
		ops   []op
		count int // watches left
	}{
		// One-shot data watches: getData and exists.
		{"data fires on create", []op{data("/a", 1), fire(created, "/a", 1), fire(created, "/a")}, 0},
		{"data fires on change", []op{data("/a", 1), fire(changed, "/a", 1), fire(changed, "/a")}, 0},
		{"data fires on delete", []op{data("/a", 1), fire(deleted, "/a", 1), fire(deleted, "/a")}, 0},
		{"data ignores children", []op{data("/a", 1), fire(children, "/a")}, 1},
		{"data ignores other paths", []op{data("/a", 1), fire(changed, "/b"), fire(changed, "/a/b"), fire(created, "/"), fire(changed, "/ab")}, 1},
		// One-shot child watches: getChildren.
		{"child fires on children", []op{child("/a", 1), fire(children, "/a", 1), fire(children, "/a")}, 0},
		{"child fires on delete", []op{child("/a", 1), fire(deleted, "/a", 1)}, 0},
		{"child ignores create and change", []op{child("/a", 1), fire(created, "/a"), fire(changed, "/a")}, 1},
		{"child ignores the child's own events", []op{child("/a", 1), fire(created, "/a/b"), fire(deleted, "/a/b")}, 1},
		// Delete consults both tables but tells each session once, and
		// clears the one-shot watch in both.
		{"delete with data and child watch tells once", []op{data("/a", 1), child("/a", 1), fire(deleted, "/a", 1), fire(deleted, "/a")}, 0},
		{"delete tells data and child watchers", []op{child("/a", 2), data("/a", 1), child("/a", 3), fire(deleted, "/a", 1, 2, 3)}, 0},
		{"several sessions in order", []op{data("/a", 30), data("/a", 10), data("/a", 20), data("/b", 5), fire(changed, "/a", 10, 20, 30)}, 1},
		{"same watch twice is one", []op{data("/a", 1), data("/a", 1), fire(changed, "/a", 1), fire(changed, "/a")}, 0},
		// Persistent watches fire on every event for the path and stay.
		{"persistent all types", []op{persist("/a", 1),
			fire(created, "/a", 1), fire(changed, "/a", 1), fire(children, "/a", 1), fire(deleted, "/a", 1), fire(created, "/a", 1)}, 2},
		{"persistent not for descendants", []op{persist("/a", 1),
			fire(created, "/a/b"), fire(changed, "/a/b"), fire(deleted, "/a/b"), fire(children, "/a/b")}, 2},
		// Recursive watches: path and descendants, never NodeChildrenChanged.
		{"recursive on path", []op{recursive("/a", 1),
			fire(created, "/a", 1), fire(changed, "/a", 1), fire(deleted, "/a", 1), fire(children, "/a")}, 2},
		{"recursive on descendants", []op{recursive("/a", 1),
			fire(created, "/a/b", 1), fire(changed, "/a/b/c", 1), fire(deleted, "/a/b", 1), fire(children, "/a/b")}, 2},
		{"recursive not for parent or sibling", []op{recursive("/a", 1),
			fire(changed, "/"), fire(changed, "/ab"), fire(created, "/b/a"), fire(changed, "/b")}, 2},
		{"recursive at root sees everything", []op{recursive("/", 1),
			fire(created, "/x", 1), fire(changed, "/", 1), fire(deleted, "/x/y/z", 1), fire(children, "/")}, 2},
		{"recursive at several ancestors tells once", []op{recursive("/", 1), recursive("/a", 1), recursive("/a/b", 1),
			fire(changed, "/a/b/c", 1)}, 6},
		// Mixed modes and sessions.
		{"one-shot plus recursive ancestor tells once", []op{recursive("/", 1), data("/a", 1), child("/a", 1),
			fire(deleted, "/a", 1), fire(changed, "/a", 1)}, 2},
		{"one-shot plus persistent from another session", []op{persist("/a", 2), data("/a", 1),
			fire(changed, "/a", 1, 2), fire(changed, "/a", 2)}, 2},
		{"children event: persistent yes, recursive no", []op{persist("/a", 1), recursive("/a", 2), recursive("/", 3), child("/a", 4),
			fire(children, "/a", 1, 4)}, 6},
		// Adding a persistent watch over a one-shot replaces it in both
		// tables: it keeps firing.
		{"persistent over one-shot", []op{data("/a", 1), child("/a", 1), persist("/a", 1),
			fire(changed, "/a", 1), fire(changed, "/a", 1), fire(children, "/a", 1)}, 2},
		// ZooKeeper 3.8: adding a one-shot over a persistent watch replaces
		// the persistent mode in that table only. The data half becomes
		// one-shot, the child half stays persistent.
		{"one-shot data over persistent (last wins)", []op{persist("/a", 1), data("/a", 1),
			fire(changed, "/a", 1), fire(changed, "/a"), fire(created, "/a"), fire(children, "/a", 1), fire(deleted, "/a", 1), fire(children, "/a", 1)}, 1},
		{"one-shot child over persistent (last wins)", []op{persist("/a", 1), child("/a", 1),
			fire(children, "/a", 1), fire(children, "/a"), fire(changed, "/a", 1)}, 1},
		// Recursive data half downgraded: descendants' creates and changes
		// are no longer seen (they go only to the data table), but their
		// deletes still are, through the child table's recursive half.
		{"one-shot data over recursive (last wins)", []op{recursive("/a", 1), data("/a", 1),
			fire(changed, "/a", 1), fire(changed, "/a/b"), fire(created, "/a/b"), fire(deleted, "/a/b", 1)}, 1},
		{"recursive over persistent", []op{persist("/a", 1), recursive("/a", 1),
			fire(children, "/a"), fire(changed, "/a/b", 1)}, 2},
		// Sessions going away.
		{"drop session", []op{data("/a", 1), child("/a", 1), recursive("/", 1), persist("/b", 1), data("/a", 2), drop(1),
			fire(changed, "/a", 2), fire(changed, "/b"), fire(children, "/a")}, 0},
		{"drop unknown session", []op{data("/a", 1), drop(7), fire(changed, "/a", 1)}, 0},
		{"re-watch after drop", []op{recursive("/", 1), drop(1), data("/a", 1), fire(changed, "/a", 1), fire(changed, "/a/b")}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewManager()
			run(t, m, tc.ops)
			if got := m.Count(); got != tc.count {
				t.Errorf("Count = %d, want %d", got, tc.count)
			}
			checkInvariants(t, m)
		})
	}
}

func TestTriggerIgnoresOtherTypes(t *testing.T) {
	m := NewManager()
	m.AddData("/a", 1)
	m.AddChild("/a", 1)
	m.AddPersistent("/a", 2, true)
	for _, typ := range []wire.EventType{wire.EventNone, wire.EventDataWatchRemoved, wire.EventChildWatchRemoved, wire.EventPersistentWatchRemoved, 99} {
		m.Trigger(typ, "/a", func(s int64, ev wire.WatcherEvent) { t.Errorf("%v told %d", typ, s) })
	}
	if m.Count() != 4 {
		t.Fatalf("Count = %d", m.Count())
	}
}

// A client typically re-arms its watch from the callback; doing that inside
// deliver must not disturb the trigger in progress.
func TestTriggerReentrant(t *testing.T) {
	m := NewManager()
	m.AddData("/a", 1)
	m.AddData("/a", 2)
	var got []int64
	m.Trigger(changed, "/a", func(s int64, ev wire.WatcherEvent) {
		got = append(got, s)
		m.AddData("/a", s)
		m.Trigger(created, "/other", func(int64, wire.WatcherEvent) { t.Error("nested trigger told someone") })
	})
	if !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("told %v", got)
	}
	if m.Count() != 2 {
		t.Fatalf("Count = %d after re-arm", m.Count())
	}
}

func TestHas(t *testing.T) {
	const (
		ch   = wire.WatcherTypeChildren
		dt   = wire.WatcherTypeData
		anyT = wire.WatcherTypeAny
	)
	tests := []struct {
		name  string
		setup []op
		path  string
		sess  int64
		want  [3]bool // children, data, any
	}{
		{"nothing", nil, "/a", 1, [3]bool{}},
		{"data", []op{data("/a", 1)}, "/a", 1, [3]bool{false, true, true}},
		{"child", []op{child("/a", 1)}, "/a", 1, [3]bool{true, false, true}},
		{"both", []op{data("/a", 1), child("/a", 1)}, "/a", 1, [3]bool{true, true, true}},
		{"persistent counts as both", []op{persist("/a", 1)}, "/a", 1, [3]bool{true, true, true}},
		{"recursive counts as both", []op{recursive("/a", 1)}, "/a", 1, [3]bool{true, true, true}},
		{"recursive ancestor does not count", []op{recursive("/", 1)}, "/a", 1, [3]bool{}},
		{"other session's watch does not count", []op{data("/a", 2), persist("/a", 3)}, "/a", 1, [3]bool{}},
		{"other path", []op{data("/a/b", 1)}, "/a", 1, [3]bool{}},
		{"fired watch is gone", []op{data("/a", 1), fire(changed, "/a", 1)}, "/a", 1, [3]bool{}},
		{"persistent data half downgraded and fired", []op{persist("/a", 1), data("/a", 1), fire(changed, "/a", 1)}, "/a", 1, [3]bool{true, false, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewManager()
			run(t, m, tc.setup)
			for i, wt := range []int32{ch, dt, anyT} {
				if got := m.Has(tc.path, tc.sess, wt); got != tc.want[i] {
					t.Errorf("Has(%s, %d, %d) = %v, want %v", tc.path, tc.sess, wt, got, tc.want[i])
				}
			}
			if m.Has(tc.path, tc.sess, 0) || m.Has(tc.path, tc.sess, 4) {
				t.Error("Has with an unknown watcher type reported true")
			}
		})
	}
}

func TestRemove(t *testing.T) {
	var (
		cw = wire.EventChildWatchRemoved
		dw = wire.EventDataWatchRemoved
		pw = wire.EventPersistentWatchRemoved
	)
	tests := []struct {
		name  string
		setup []op
		typ   int32
		want  []wire.EventType
		after []op // what still fires for session 1 on /a
		count int
	}{
		{"nothing", nil, wire.WatcherTypeAny, nil, nil, 0},
		{"data by data", []op{data("/a", 1)}, wire.WatcherTypeData, []wire.EventType{dw},
			[]op{fire(changed, "/a")}, 0},
		{"data by children: no watcher", []op{data("/a", 1)}, wire.WatcherTypeChildren, nil,
			[]op{fire(changed, "/a", 1)}, 0},
		{"child by children", []op{child("/a", 1)}, wire.WatcherTypeChildren, []wire.EventType{cw},
			[]op{fire(children, "/a")}, 0},
		{"child by data: no watcher", []op{child("/a", 1)}, wire.WatcherTypeData, nil,
			[]op{fire(children, "/a", 1)}, 0},
		{"both by any", []op{data("/a", 1), child("/a", 1)}, wire.WatcherTypeAny, []wire.EventType{cw, dw},
			[]op{fire(deleted, "/a")}, 0},
		{"data by any", []op{data("/a", 1)}, wire.WatcherTypeAny, []wire.EventType{dw}, nil, 0},
		{"persistent by any", []op{persist("/a", 1)}, wire.WatcherTypeAny, []wire.EventType{pw},
			[]op{fire(changed, "/a"), fire(children, "/a"), fire(deleted, "/a")}, 0},
		{"recursive by any", []op{recursive("/a", 1)}, wire.WatcherTypeAny, []wire.EventType{pw},
			[]op{fire(changed, "/a/b")}, 0},
		// Removing one type of a persistent watch removes that table's half.
		{"persistent by data leaves child half", []op{persist("/a", 1)}, wire.WatcherTypeData, []wire.EventType{pw},
			[]op{fire(changed, "/a"), fire(created, "/a"), fire(children, "/a", 1), fire(deleted, "/a", 1)}, 1},
		{"persistent by children leaves data half", []op{persist("/a", 1)}, wire.WatcherTypeChildren, []wire.EventType{pw},
			[]op{fire(children, "/a"), fire(changed, "/a", 1)}, 1},
		{"recursive by children leaves data half", []op{recursive("/a", 1)}, wire.WatcherTypeChildren, []wire.EventType{pw},
			[]op{fire(created, "/a/b", 1), fire(deleted, "/a/b", 1)}, 1},
		{"downgraded persistent by any", []op{persist("/a", 1), data("/a", 1)}, wire.WatcherTypeAny, []wire.EventType{dw, pw}, nil, 0},
		{"only this session", []op{data("/a", 1), data("/a", 2)}, wire.WatcherTypeData, []wire.EventType{dw},
			[]op{fire(changed, "/a", 2)}, 0},
		{"ancestor recursive not removed", []op{recursive("/", 1)}, wire.WatcherTypeAny, nil,
			[]op{fire(changed, "/a", 1)}, 2},
		{"unknown type", []op{data("/a", 1)}, 9, nil, []op{fire(changed, "/a", 1)}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewManager()
			run(t, m, tc.setup)
			got := m.Remove("/a", 1, tc.typ)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Remove = %v, want %v", got, tc.want)
			}
			run(t, m, tc.after)
			if m.Count() != tc.count {
				t.Errorf("Count = %d, want %d", m.Count(), tc.count)
			}
			checkInvariants(t, m)
		})
	}
}

type told struct {
	typ  wire.EventType
	path string
}

func TestSetWatches(t *testing.T) {
	nodes := map[string]wire.Stat{
		"/old":     {Mzxid: 5, Pzxid: 5},
		"/newdata": {Mzxid: 11, Pzxid: 5},
		"/newkids": {Mzxid: 5, Pzxid: 11},
		"/at":      {Mzxid: 10, Pzxid: 10},
	}
	lookup := func(p string) (wire.Stat, bool) { st, ok := nodes[p]; return st, ok }
	const rel = 10
	type lists struct{ data, exist, child, persistent, recursive []string }
	tests := []struct {
		name  string
		in    lists
		told  []told
		after []op // checks on what got armed, for session 1
		count int
	}{
		{"data on missing node", lists{data: []string{"/gone"}}, []told{{deleted, "/gone"}},
			[]op{fire(created, "/gone")}, 0},
		{"data on changed node", lists{data: []string{"/newdata"}}, []told{{changed, "/newdata"}},
			[]op{fire(changed, "/newdata")}, 0},
		{"data on unchanged node", lists{data: []string{"/old", "/at"}}, nil,
			[]op{fire(changed, "/old", 1), fire(deleted, "/at", 1)}, 0},
		{"data ignores pzxid", lists{data: []string{"/newkids"}}, nil, []op{fire(changed, "/newkids", 1)}, 0},
		{"exist on present node", lists{exist: []string{"/old"}}, []told{{created, "/old"}},
			[]op{fire(changed, "/old")}, 0},
		{"exist on missing node", lists{exist: []string{"/gone"}}, nil,
			[]op{fire(created, "/gone", 1)}, 0},
		{"child on missing node", lists{child: []string{"/gone"}}, []told{{deleted, "/gone"}},
			[]op{fire(children, "/gone")}, 0},
		{"child on node with new children", lists{child: []string{"/newkids"}}, []told{{children, "/newkids"}},
			[]op{fire(children, "/newkids")}, 0},
		{"child on unchanged node", lists{child: []string{"/old", "/at", "/newdata"}}, nil,
			[]op{fire(children, "/old", 1), fire(children, "/at", 1), fire(children, "/newdata", 1)}, 0},
		{"persistent armed even on missing node", lists{persistent: []string{"/gone", "/newdata"}}, nil,
			[]op{fire(created, "/gone", 1), fire(changed, "/newdata", 1), fire(children, "/gone", 1)}, 4},
		{"recursive armed", lists{recursive: []string{"/gone"}}, nil,
			[]op{fire(created, "/gone/x", 1), fire(children, "/gone")}, 2},
		{"events are not merged", lists{data: []string{"/gone"}, exist: []string{"/old"}, child: []string{"/gone"}},
			[]told{{deleted, "/gone"}, {created, "/old"}, {deleted, "/gone"}}, nil, 0},
		{"order is data, exist, child", lists{child: []string{"/newkids"}, exist: []string{"/at"}, data: []string{"/newdata"}},
			[]told{{changed, "/newdata"}, {created, "/at"}, {children, "/newkids"}}, nil, 0},
		{"persistent after one-shot on the same path wins", lists{data: []string{"/old"}, persistent: []string{"/old"}}, nil,
			[]op{fire(changed, "/old", 1), fire(changed, "/old", 1)}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewManager()
			var got []told
			m.SetWatches(rel, tc.in.data, tc.in.exist, tc.in.child, tc.in.persistent, tc.in.recursive, 1, lookup,
				func(s int64, ev wire.WatcherEvent) {
					if s != 1 || ev.State != wire.StateSyncConnected {
						t.Errorf("delivered %+v to %d", ev, s)
					}
					got = append(got, told{ev.Type, ev.Path})
				})
			if !slices.Equal(got, tc.told) {
				t.Fatalf("told %v, want %v", got, tc.told)
			}
			run(t, m, tc.after)
			if m.Count() != tc.count {
				t.Errorf("Count = %d, want %d", m.Count(), tc.count)
			}
			checkInvariants(t, m)
		})
	}
}

func TestCounts(t *testing.T) {
	m := NewManager()
	m.AddData("/a", 1)
	m.AddChild("/a", 1)
	m.AddData("/b", 1)
	m.AddPersistent("/c", 1, false)
	m.AddPersistent("/d", 2, true)
	m.AddData("/a", 2)
	if m.Count() != 8 || m.SessionCount(1) != 5 || m.SessionCount(2) != 3 || m.SessionCount(3) != 0 {
		t.Fatalf("Count %d, SessionCount(1) %d, (2) %d", m.Count(), m.SessionCount(1), m.SessionCount(2))
	}
	m.Trigger(deleted, "/a", func(int64, wire.WatcherEvent) {})
	if m.Count() != 5 || m.SessionCount(1) != 3 || m.SessionCount(2) != 2 {
		t.Fatalf("after delete: Count %d, SessionCount(1) %d, (2) %d", m.Count(), m.SessionCount(1), m.SessionCount(2))
	}
	m.RemoveSession(1)
	if m.Count() != 2 || m.SessionCount(1) != 0 {
		t.Fatalf("after RemoveSession: Count %d, SessionCount(1) %d", m.Count(), m.SessionCount(1))
	}
	checkInvariants(t, m)
}

// checkInvariants recomputes the bookkeeping from the tables.
func checkInvariants(t *testing.T, m *Manager) {
	t.Helper()
	count, rec := 0, [2]int{}
	for path, w := range m.paths {
		if len(w) == 0 {
			t.Errorf("empty watcher map kept for %s", path)
		}
		for s, md := range w {
			if md == (modes{}) {
				t.Errorf("empty entry for %d on %s", s, path)
			}
			if _, ok := m.sessions[s][path]; !ok {
				t.Errorf("session index misses %d on %s", s, path)
			}
			for tb, k := range md {
				if k != modeNone {
					count++
				}
				if k == modeRecursive {
					rec[tb]++
				}
			}
		}
	}
	for s, idx := range m.sessions {
		for path := range idx {
			if _, ok := m.paths[path][s]; !ok {
				t.Errorf("session index has stale %d on %s", s, path)
			}
		}
	}
	if count != m.count || rec != m.recursive {
		t.Errorf("count %d recursive %v, recomputed %d %v", m.count, m.recursive, count, rec)
	}
}

func TestParent(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"/", nil},
		{"/a", []string{"/"}},
		{"/a/b/c", []string{"/a/b", "/a", "/"}},
		{"a", nil},
	}
	for _, tc := range tests {
		var got []string
		for p, ok := parent(tc.in); ok; p, ok = parent(p) {
			got = append(got, p)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("parents of %q = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func benchManager(n int) *Manager {
	m := NewManager()
	for i := range n {
		m.AddData(fmt.Sprintf("/other/%d", i), int64(i))
		m.AddChild(fmt.Sprintf("/other/%d", i), int64(i))
	}
	return m
}

func BenchmarkTrigger(b *testing.B) {
	nop := func(int64, wire.WatcherEvent) {}
	b.Run("none", func(b *testing.B) {
		m := benchManager(1000)
		b.ReportAllocs()
		for b.Loop() {
			m.Trigger(changed, "/app/node", nop)
			m.Trigger(children, "/app", nop)
		}
	})
	b.Run("none-with-recursive-elsewhere", func(b *testing.B) {
		m := benchManager(1000)
		m.AddPersistent("/other/1", 1, true)
		b.ReportAllocs()
		for b.Loop() {
			m.Trigger(changed, "/app/deep/er/node", nop)
		}
	})
	b.Run("one-persistent", func(b *testing.B) {
		m := benchManager(1000)
		m.AddPersistent("/app/node", 7, false)
		b.ReportAllocs()
		for b.Loop() {
			m.Trigger(changed, "/app/node", nop)
		}
	})
	b.Run("one-recursive-ancestor", func(b *testing.B) {
		m := benchManager(1000)
		m.AddPersistent("/app", 7, true)
		b.ReportAllocs()
		for b.Loop() {
			m.Trigger(changed, "/app/deep/er/node", nop)
		}
	})
	b.Run("one-shot-rearmed", func(b *testing.B) {
		m := benchManager(1000)
		m.AddChild("/app/node", 8) // keeps the path's watcher map alive
		b.ReportAllocs()
		for b.Loop() {
			m.AddData("/app/node", 7)
			m.Trigger(changed, "/app/node", nop)
		}
	})
}

func TestEntries(t *testing.T) {
	m := NewManager()
	m.AddData("/a", 1)
	m.AddChild("/a", 1)
	m.AddChild("/c", 2)
	m.AddPersistent("/b", 2, true)
	m.AddPersistent("/d", 3, false)
	m.AddData("/d", 3) // turns the data half into a one-shot watch (3.8)
	got := m.Entries()
	slices.SortFunc(got, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Watcher, b.Watcher), cmp.Compare(fmt.Sprint(a.Child), fmt.Sprint(b.Child)))
	})
	want := []Entry{
		{"/a", 1, false, "standard"},
		{"/a", 1, true, "standard"},
		{"/b", 2, false, "persistentRecursive"},
		{"/b", 2, true, "persistentRecursive"},
		{"/c", 2, true, "standard"},
		{"/d", 3, false, "standard"},
		{"/d", 3, true, "persistent"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Entries =\n%v\nwant\n%v", got, want)
	}
	if len(got) != m.Count() {
		t.Errorf("%d entries, Count %d", len(got), m.Count())
	}
}
