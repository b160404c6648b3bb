package watch

import (
	"slices"
	"strings"

	"github.com/hutchzk/hutch/wire"
)

// Trigger fires the watches an event of type typ on path sets off and calls
// deliver once for each session to tell, in increasing session order. The
// caller makes one call per event DataTree raises: a create is NodeCreated on
// the node and NodeChildrenChanged on its parent; a delete is NodeDeleted on
// the node and NodeChildrenChanged on its parent; a setData is
// NodeDataChanged on the node.
//
// The tables consulted are DataTree's: NodeCreated and NodeDataChanged the
// data table, NodeChildrenChanged the child table, NodeDeleted the data table
// and then the child table, where a session already told through the data
// table is not told again. Within a table, as ZooKeeper's
// WatchManager.triggerWatch:
//   - a one-shot watch on path fires and is removed;
//   - a persistent watch on path fires and stays;
//   - a recursive watch on path or on any ancestor fires and stays, except
//     for NodeChildrenChanged, which recursive watches never receive.
//
// Each session is told at most once per call. Other event types fire nothing.
// deliver may call back into the Manager.
func (m *Manager) Trigger(typ wire.EventType, path string, deliver func(session int64, ev wire.WatcherEvent)) {
	var data, child bool
	switch typ {
	case wire.EventNodeCreated, wire.EventNodeDataChanged:
		data = true
	case wire.EventNodeChildrenChanged:
		child = true
	case wire.EventNodeDeleted:
		data, child = true, true
	default:
		return
	}
	if m.count == 0 {
		return
	}
	hits := m.scratch[:0]
	if data {
		hits = m.collect(hits, dataTable, typ, path)
	}
	if child {
		hits = m.collect(hits, childTable, typ, path)
	}
	if len(hits) > 1 {
		slices.Sort(hits)
		hits = slices.Compact(hits)
	}
	// Hand the buffer over for the duration of delivery, so a deliver that
	// re-enters Trigger gets its own rather than overwriting ours.
	m.scratch = nil
	ev := wire.WatcherEvent{Type: typ, State: wire.StateSyncConnected, Path: path}
	for _, s := range hits {
		deliver(s, ev)
	}
	m.scratch = hits[:0]
}

// collect appends the sessions table t tells about typ on path, removing the
// one-shot watches that fire.
func (m *Manager) collect(hits []int64, t int, typ wire.EventType, path string) []int64 {
	childEvent := typ == wire.EventNodeChildrenChanged
	for s, md := range m.paths[path] {
		switch md[t] {
		case modeNone:
		case modeRecursive:
			if !childEvent {
				hits = append(hits, s)
			}
		case modePersistent:
			hits = append(hits, s)
		case modeStandard:
			hits = append(hits, s)
			m.set(path, s, t, modeNone)
		}
	}
	if m.recursive[t] == 0 || childEvent {
		return hits
	}
	for p, ok := parent(path); ok; p, ok = parent(p) {
		for s, md := range m.paths[p] {
			if md[t] == modeRecursive {
				hits = append(hits, s)
			}
		}
	}
	return hits
}

// parent returns the parent of path as ZooKeeper's PathParentIterator walks
// it: "/a/b" → "/a" → "/", and nothing above "/".
func parent(path string) (string, bool) {
	if path == "/" {
		return "", false
	}
	i := strings.LastIndexByte(path, '/')
	switch {
	case i < 0:
		return "", false
	case i == 0:
		return "/", true
	}
	return path[:i], true
}

// SetWatches re-arms a reconnecting client's watches as ZooKeeper's
// DataTree.setWatches does, judging each against the tree through lookup and
// the last zxid the client saw, relativeZxid. A one-shot watch whose event
// the client missed is not armed; the event is delivered now instead:
//   - data: node gone → NodeDeleted; node's mzxid > relativeZxid →
//     NodeDataChanged; otherwise armed;
//   - exist: node present → NodeCreated (even if it was there all along);
//     otherwise armed as a data watch;
//   - child: node gone → NodeDeleted; node's pzxid > relativeZxid →
//     NodeChildrenChanged; otherwise armed;
//   - persistent and recursive: armed, never fired.
//
// Lists are handled in that order and events are not merged: a path missing
// from both the data and child lists yields two NodeDeleted events.
func (m *Manager) SetWatches(relativeZxid int64, data, exist, child, persistent, recursive []string, session int64,
	lookup func(path string) (wire.Stat, bool), deliver func(session int64, ev wire.WatcherEvent)) {
	tell := func(typ wire.EventType, path string) {
		deliver(session, wire.WatcherEvent{Type: typ, State: wire.StateSyncConnected, Path: path})
	}
	for _, p := range data {
		switch st, ok := lookup(p); {
		case !ok:
			tell(wire.EventNodeDeleted, p)
		case st.Mzxid > relativeZxid:
			tell(wire.EventNodeDataChanged, p)
		default:
			m.AddData(p, session)
		}
	}
	for _, p := range exist {
		if _, ok := lookup(p); ok {
			tell(wire.EventNodeCreated, p)
		} else {
			m.AddData(p, session)
		}
	}
	for _, p := range child {
		switch st, ok := lookup(p); {
		case !ok:
			tell(wire.EventNodeDeleted, p)
		case st.Pzxid > relativeZxid:
			tell(wire.EventNodeChildrenChanged, p)
		default:
			m.AddChild(p, session)
		}
	}
	for _, p := range persistent {
		m.AddPersistent(p, session, false)
	}
	for _, p := range recursive {
		m.AddPersistent(p, session, true)
	}
}
