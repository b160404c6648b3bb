package zkdb

import (
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/watch"
	"github.com/hutchzk/hutch/wire"
)

// View is the state as a read sees it, inside Read.
type View struct {
	d *DB
	// Tree is the znode tree, for reading only.
	Tree *tree.Tree
}

// Read runs f with the state read-locked. No command applies while f
// runs, so a reply f queues follows the notifications of every write it
// sees, and a watch f sets cannot miss the next write.
func (d *DB) Read(f func(v *View)) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	f(&View{d: d, Tree: d.tree})
}

// AddDataWatch sets a one-shot data watch for watcher (getData, exists).
func (v *View) AddDataWatch(path string, watcher int64) {
	v.d.watchMu.Lock()
	v.d.watches.AddData(path, watcher)
	v.d.watchMu.Unlock()
}

// AddChildWatch sets a one-shot child watch for watcher (getChildren).
func (v *View) AddChildWatch(path string, watcher int64) {
	v.d.watchMu.Lock()
	v.d.watches.AddChild(path, watcher)
	v.d.watchMu.Unlock()
}

// AddPersistentWatch sets a persistent, or persistent-recursive, watch.
func (v *View) AddPersistentWatch(path string, watcher int64, recursive bool) {
	v.d.watchMu.Lock()
	v.d.watches.AddPersistent(path, watcher, recursive)
	v.d.watchMu.Unlock()
}

// HasWatch answers checkWatches (watch.Manager.Has).
func (v *View) HasWatch(path string, watcher int64, watcherType int32) bool {
	v.d.watchMu.Lock()
	defer v.d.watchMu.Unlock()
	return v.d.watches.Has(path, watcher, watcherType)
}

// RemoveWatch answers removeWatches; false means there was none.
func (v *View) RemoveWatch(path string, watcher int64, watcherType int32) bool {
	v.d.watchMu.Lock()
	defer v.d.watchMu.Unlock()
	return len(v.d.watches.Remove(path, watcher, watcherType)) > 0
}

// SetWatches re-arms a reconnecting client's watches, calling deliver for
// each event it missed since relativeZxid (watch.Manager.SetWatches).
func (v *View) SetWatches(r *wire.SetWatches2Request, watcher int64, deliver func(ev wire.WatcherEvent)) {
	v.d.watchMu.Lock()
	defer v.d.watchMu.Unlock()
	v.d.watches.SetWatches(r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches,
		r.PersistentWatches, r.PersistentRecursiveWatches, watcher, v.Tree.Stat,
		func(_ int64, ev wire.WatcherEvent) { deliver(ev) })
}

// RemoveWatcher drops every watch of a connection that closed.
func (d *DB) RemoveWatcher(watcher int64) {
	d.watchMu.Lock()
	d.watches.RemoveSession(watcher)
	d.watchMu.Unlock()
}

// WatchCount is the number of watches a connection holds.
func (d *DB) WatchCount(watcher int64) int {
	d.watchMu.Lock()
	defer d.watchMu.Unlock()
	return d.watches.SessionCount(watcher)
}

// Watchers lists the connections that hold watches: the first step of a
// listing of every watch read in pieces (WatchesOf).
func (d *DB) Watchers() []int64 {
	d.watchMu.Lock()
	defer d.watchMu.Unlock()
	return d.watches.Watchers()
}

// WatchesOf lists the watches the connections named hold, under one hold
// of the watch lock: a caller listing every watch reads them a bounded
// piece of connections at a time, so that no write waits for the whole.
func (d *DB) WatchesOf(watchers []int64) []watch.Entry {
	d.watchMu.Lock()
	defer d.watchMu.Unlock()
	return d.watches.EntriesOf(watchers)
}
