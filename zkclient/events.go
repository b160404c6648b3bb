package zkclient

import (
	"sync"

	"github.com/hutchzk/hutch/wire"
)

// Event is a watch notification or a change of the connection's state, as
// the Java client's WatchedEvent: a state change has Type EventNone and no
// path.
type Event struct {
	Type  wire.EventType
	State int32 // wire.StateSyncConnected, StateDisconnected, StateExpired...
	Path  string
}

// String formats the event as the Java client's WatchedEvent.toString,
// which zkCli prints: "WatchedEvent state:SyncConnected type:NodeCreated
// path:/a", with path:null for a state change.
func (e Event) String() string {
	path := e.Path
	if e.Type == wire.EventNone && path == "" {
		path = "null"
	}
	return "WatchedEvent state:" + StateName(e.State) + " type:" + EventTypeName(e.Type) + " path:" + path
}

// StateName is the Java client's Watcher.Event.KeeperState name of s.
func StateName(s int32) string {
	switch s {
	case wire.StateDisconnected:
		return "Disconnected"
	case wire.StateSyncConnected:
		return "SyncConnected"
	case wire.StateAuthFailed:
		return "AuthFailed"
	case wire.StateConnectedReadOnly:
		return "ConnectedReadOnly"
	case stateSASLAuthenticated:
		return "SaslAuthenticated"
	case wire.StateExpired:
		return "Expired"
	case wire.StateClosed:
		return "Closed"
	}
	return "Unknown"
}

// stateSASLAuthenticated is KeeperState.SaslAuthenticated, which this
// client never reaches but may be told of.
const stateSASLAuthenticated int32 = 6

// EventTypeName is the Java client's Watcher.Event.EventType name of t.
func EventTypeName(t wire.EventType) string { return t.String() }

// eventQueue hands events to the Watcher from one goroutine, in the order
// they were queued, without ever blocking the connection's reader. A caller
// can wait until every event queued before some point has been handled.
type eventQueue struct {
	watcher func(Event)

	mu        sync.Mutex // guards the fields below
	pending   []Event
	queued    uint64 // events ever queued
	handled   uint64 // events the watcher has returned from
	closed    bool
	changed   *sync.Cond // signalled on queue, handle and close
	stoppedCh chan struct{}
}

func newEventQueue(watcher func(Event)) *eventQueue {
	q := &eventQueue{watcher: watcher, stoppedCh: make(chan struct{})}
	q.changed = sync.NewCond(&q.mu)
	go q.run()
	return q
}

// push queues ev and returns its sequence number.
func (q *eventQueue) push(ev Event) uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return q.queued
	}
	q.pending = append(q.pending, ev)
	q.queued++
	q.changed.Broadcast()
	return q.queued
}

// mark returns the sequence number of the last event queued so far.
func (q *eventQueue) mark() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.queued
}

// waitHandled returns once the watcher has handled every event up to seq,
// or the queue has stopped.
func (q *eventQueue) waitHandled(seq uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.handled < seq && !(q.closed && len(q.pending) == 0) {
		q.changed.Wait()
	}
}

// close lets the watcher handle what is queued, then stops the goroutine;
// it returns once the last event has been handled.
func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.changed.Broadcast()
	q.mu.Unlock()
	<-q.stoppedCh
}

func (q *eventQueue) run() {
	defer close(q.stoppedCh)
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		for len(q.pending) == 0 && !q.closed {
			q.changed.Wait()
		}
		if len(q.pending) == 0 {
			q.changed.Broadcast()
			return
		}
		ev := q.pending[0]
		q.pending = q.pending[1:]
		q.mu.Unlock()
		if q.watcher != nil {
			q.watcher(ev)
		}
		q.mu.Lock()
		q.handled++
		q.changed.Broadcast()
	}
}

// watchKind is one of the Java client's five watch tables.
type watchKind int

const (
	watchData watchKind = iota
	watchExist
	watchChild
	watchPersistent
	watchPersistentRecursive
	numWatchKinds
)

// watchSet is the paths this session watches, by kind, kept to re-arm
// them with setWatches2 after a reconnect. One-shot watches leave it when
// they fire; persistent ones stay until removed.
type watchSet [numWatchKinds]map[string]struct{}

func (w *watchSet) add(k watchKind, path string) {
	if w[k] == nil {
		w[k] = make(map[string]struct{})
	}
	w[k][path] = struct{}{}
}

// fired drops the one-shot watches a notification consumed, as the Java
// client's ZKWatchManager.materialize does.
func (w *watchSet) fired(ev Event) {
	switch ev.Type {
	case wire.EventNodeDataChanged, wire.EventNodeCreated:
		delete(w[watchData], ev.Path)
		delete(w[watchExist], ev.Path)
	case wire.EventNodeChildrenChanged:
		delete(w[watchChild], ev.Path)
	case wire.EventNodeDeleted:
		delete(w[watchData], ev.Path)
		delete(w[watchExist], ev.Path)
		delete(w[watchChild], ev.Path)
	}
}

// removed drops what a successful removeWatches of watcherType took away.
func (w *watchSet) removed(path string, watcherType int32) {
	kinds := []watchKind{watchChild}
	switch watcherType {
	case wire.WatcherTypeData:
		kinds = []watchKind{watchData, watchExist}
	case wire.WatcherTypeAny:
		kinds = []watchKind{watchData, watchExist, watchChild, watchPersistent, watchPersistentRecursive}
	}
	for _, k := range kinds {
		delete(w[k], path)
	}
}

func (w *watchSet) empty() bool {
	for _, m := range w {
		if len(m) > 0 {
			return false
		}
	}
	return true
}

// request is the setWatches2 that re-arms every watch, relative to zxid.
func (w *watchSet) request(zxid int64) *wire.SetWatches2Request {
	list := func(k watchKind) []string {
		out := make([]string, 0, len(w[k]))
		for p := range w[k] {
			out = append(out, p)
		}
		return out
	}
	return &wire.SetWatches2Request{
		RelativeZxid:               zxid,
		DataWatches:                list(watchData),
		ExistWatches:               list(watchExist),
		ChildWatches:               list(watchChild),
		PersistentWatches:          list(watchPersistent),
		PersistentRecursiveWatches: list(watchPersistentRecursive),
	}
}
