package watch

import "github.com/hutchzk/hutch/wire"

// mode is how a watcher watches one path in one table, as ZooKeeper's
// WatcherMode, plus modeNone for "not watching".
type mode uint8

const (
	modeNone       mode = iota
	modeStandard        // one-shot: removed when it fires
	modePersistent      // fires on every event for the path, stays
	modeRecursive       // persistent, and also for every descendant, but never for NodeChildrenChanged
)

// The two tables ZooKeeper's DataTree keeps. Which table an event consults
// decides who hears of it, so they are modelled separately even though a
// persistent watch always sits in both.
const (
	dataTable  = 0
	childTable = 1
)

// modes holds a watcher's mode on one path in each table.
type modes [2]mode

// Manager holds every watch and fires them. The zero value is not usable; call
// NewManager. It is not safe for concurrent use.
type Manager struct {
	paths    map[string]map[int64]modes
	sessions map[int64]map[string]struct{} // every path a session has an entry on, for RemoveSession
	count    int                           // entries over both tables, as ZooKeeper's getWatchCount
	// recursive counts recursive entries per table; while it is zero a
	// trigger need not look at ancestors, as ZooKeeper's recursiveQty.
	recursive [2]int
	// scratch collects one Trigger's recipients; kept between calls so a
	// write that fires a watch does not allocate.
	scratch []int64
}

// NewManager returns a Manager with no watches.
func NewManager() *Manager {
	return &Manager{
		paths:    make(map[string]map[int64]modes),
		sessions: make(map[int64]map[string]struct{}),
	}
}

// AddData sets a one-shot data watch, as getData and exists with watch=true
// do; exists sets it whether or not the node exists, and it fires on the
// node's creation, data change or deletion.
//
// As in ZooKeeper 3.8 it replaces whatever the session had in the data table
// for path, so a one-shot watch set on a path the session watches
// persistently turns the data half of that persistent watch into a one-shot
// one (ZooKeeper 3.9 keeps both; see ZOOKEEPER-4466).
func (m *Manager) AddData(path string, session int64) {
	m.set(path, session, dataTable, modeStandard)
}

// AddChild sets a one-shot child watch, as getChildren with watch=true does;
// it fires on NodeChildrenChanged for path and on path's deletion. Like
// AddData it replaces the session's mode in the child table for path.
func (m *Manager) AddChild(path string, session int64) {
	m.set(path, session, childTable, modeStandard)
}

// AddPersistent sets a persistent watch (addWatch mode PERSISTENT) or, with
// recursive, a persistent-recursive one (PERSISTENT_RECURSIVE) on path. As
// ZooKeeper's DataTree.addWatch it goes into both tables, replacing any
// one-shot data or child watch the session had on path: the persistent watch
// fires for the same events, so nothing is lost but the one-shot-ness.
func (m *Manager) AddPersistent(path string, session int64, recursive bool) {
	md := modePersistent
	if recursive {
		md = modeRecursive
	}
	m.set(path, session, childTable, md)
	m.set(path, session, dataTable, md)
}

// RemoveSession drops every watch of a session, as ZooKeeper's removeCnxn
// does when a connection closes. The caller must call it for every watcher
// id that goes away: the manager keeps a little bookkeeping per id until then.
func (m *Manager) RemoveSession(session int64) {
	for path := range m.sessions[session] {
		w := m.paths[path]
		md, ok := w[session]
		if !ok {
			continue
		}
		for t, k := range md {
			if k == modeRecursive {
				m.recursive[t]--
			}
			if k != modeNone {
				m.count--
			}
		}
		delete(w, session)
		if len(w) == 0 {
			delete(m.paths, path)
		}
	}
	delete(m.sessions, session)
}

// Has answers checkWatches: whether the session has a watch on exactly path
// in the table watcherType names (wire.WatcherTypeChildren, Data or Any). A
// persistent or recursive watch on path counts for every type, because it
// sits in both tables; one on an ancestor does not count, as in ZooKeeper
// 3.8, whose containsWatcher looks only at path itself.
//
// ZooKeeper 3.8 answers true when any session watches path (its
// containsWatcher ignores which watcher asked); this looks only at the
// asking session, as ZooKeeper 3.9 does. Clients cannot tell the difference,
// since they check their own watches before asking, and the 3.8 answer
// leaks other sessions' watches.
func (m *Manager) Has(path string, session int64, watcherType int32) bool {
	md := m.paths[path][session]
	switch watcherType {
	case wire.WatcherTypeChildren:
		return md[childTable] != modeNone
	case wire.WatcherTypeData:
		return md[dataTable] != modeNone
	case wire.WatcherTypeAny:
		return md != modes{}
	}
	return false
}

// Remove answers removeWatches: it drops the session's entry for path from
// the child table (wire.WatcherTypeChildren), the data table (Data) or both
// (Any), whatever its mode, as ZooKeeper 3.8's DataTree.removeWatch does. So
// removing type Data from a persistent watch leaves its child-table half,
// which still delivers NodeChildrenChanged and NodeDeleted for path.
//
// It returns the kinds of watch removed, in the order ChildWatchRemoved,
// DataWatchRemoved, PersistentWatchRemoved, each at most once; an empty
// result means there was nothing to remove and the reply is NoWatcher. These
// are for the caller's bookkeeping only: a ZooKeeper server never sends them.
// The Java client makes its *WatchRemoved events itself when the reply comes
// back, and throws on receiving one as a notification.
func (m *Manager) Remove(path string, session int64, watcherType int32) []wire.EventType {
	var tables []int
	switch watcherType {
	case wire.WatcherTypeChildren:
		tables = []int{childTable}
	case wire.WatcherTypeData:
		tables = []int{dataTable}
	case wire.WatcherTypeAny:
		tables = []int{childTable, dataTable}
	default:
		return nil
	}
	md := m.paths[path][session]
	var child, data, pers bool
	for _, t := range tables {
		switch md[t] {
		case modeNone:
			continue
		case modeStandard:
			if t == childTable {
				child = true
			} else {
				data = true
			}
		default:
			pers = true
		}
		m.set(path, session, t, modeNone)
	}
	var out []wire.EventType
	if child {
		out = append(out, wire.EventChildWatchRemoved)
	}
	if data {
		out = append(out, wire.EventDataWatchRemoved)
	}
	if pers {
		out = append(out, wire.EventPersistentWatchRemoved)
	}
	return out
}

// Count returns the number of watches over both tables, ZooKeeper's
// zk_watch_count. A persistent watch counts twice, once per table, as it does
// in ZooKeeper.
func (m *Manager) Count() int { return m.count }

// SessionCount returns the number of watches a session holds, counted as
// Count counts them.
func (m *Manager) SessionCount(session int64) int {
	n := 0
	for path := range m.sessions[session] {
		for _, k := range m.paths[path][session] {
			if k != modeNone {
				n++
			}
		}
	}
	return n
}

// set puts session's mode for path in table t to md, keeping the counters
// and the per-session index in step. It is safe to call while ranging over
// m.paths[path]: it only overwrites or deletes the current key.
func (m *Manager) set(path string, session int64, t int, md mode) {
	w := m.paths[path]
	cur := w[session]
	prev := cur[t]
	if prev == md {
		return
	}
	switch {
	case prev == modeNone:
		m.count++
	case md == modeNone:
		m.count--
	}
	if prev == modeRecursive {
		m.recursive[t]--
	}
	if md == modeRecursive {
		m.recursive[t]++
	}
	wasWatching := cur != modes{}
	cur[t] = md
	if cur == (modes{}) {
		delete(w, session)
		if len(w) == 0 {
			delete(m.paths, path)
		}
		// The session's index entry goes, but not its (possibly now empty)
		// index map: a client re-arming one watch per event would otherwise
		// allocate it afresh each time. RemoveSession frees it.
		delete(m.sessions[session], path)
		return
	}
	if w == nil {
		w = make(map[int64]modes, 1)
		m.paths[path] = w
	}
	w[session] = cur
	if !wasWatching {
		idx := m.sessions[session]
		if idx == nil {
			idx = make(map[string]struct{})
			m.sessions[session] = idx
		}
		idx[path] = struct{}{}
	}
}

// Entry is one watch as the operator views list it: a watcher's entry on
// a path in one of the two tables. A persistent watch has one in each.
type Entry struct {
	Path    string
	Watcher int64
	// Child is set for an entry in the child table (it hears of
	// NodeChildrenChanged); otherwise it is in the data table, the only
	// one ZooKeeper's wchc, wchp and wchs report.
	Child bool
	// Mode is ZooKeeper's WatcherMode: "standard" (one-shot),
	// "persistent" or "persistentRecursive".
	Mode string
}

// Entries lists every watch, in no particular order.
func (m *Manager) Entries() []Entry { return m.EntriesOf(m.Watchers()) }

// Watchers lists every watcher that holds a watch, in no particular order.
func (m *Manager) Watchers() []int64 {
	out := make([]int64, 0, len(m.sessions))
	for w, paths := range m.sessions {
		if len(paths) > 0 {
			out = append(out, w)
		}
	}
	return out
}

// EntriesOf lists the watches of the watchers named, as Entries does:
// listing a few watchers at a time lets a caller list every watch without
// holding its lock for them all.
func (m *Manager) EntriesOf(watchers []int64) []Entry {
	var out []Entry
	for _, watcher := range watchers {
		for path := range m.sessions[watcher] {
			for t, k := range m.paths[path][watcher] {
				if k != modeNone {
					out = append(out, Entry{Path: path, Watcher: watcher, Child: t == childTable, Mode: k.String()})
				}
			}
		}
	}
	return out
}

// String names the mode as ZooKeeper's WatcherMode does.
func (md mode) String() string {
	switch md {
	case modeStandard:
		return "standard"
	case modePersistent:
		return "persistent"
	case modeRecursive:
		return "persistentRecursive"
	}
	return "none"
}
