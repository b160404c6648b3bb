// Package watch keeps the watches clients have set and decides who is told
// about each change to the tree, with the semantics of ZooKeeper 3.8's
// server-side WatchManager and DataTree: one-shot data and child watches,
// persistent and persistent-recursive watches, re-arming after a reconnect,
// and checkWatches/removeWatches.
//
// ZooKeeper keeps two tables, data watches and child watches, and each holds
// at most one mode per (path, watcher). Manager keeps the same two tables, so
// the interplay of modes on one path — including ZooKeeper 3.8's "last add
// wins" — comes out as ZooKeeper's does.
//
// Watchers are identified by an int64, the session or connection that set
// them; ZooKeeper keys them by connection. Nothing here starts goroutines or
// locks: the caller serialises every call, typically under its tree lock so
// that a watch set by a read cannot miss the write that follows.
package watch
