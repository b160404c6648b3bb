package monitor

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hutchzk/hutch/trace"
)

// Replay: the view as it was at a point of the trace's history. The
// history is an undo log: starting from the state now (the shared
// snapshot's sessions and watches, and the tree under the path the view
// looks at), the events after the point are undone, newest first, each
// by what it records (a created node goes, a deleted one comes back with
// its data and owner, a closed session reopens with its ephemerals, a
// watch that fired is set again, one that was set goes). Every undo is
// idempotent, so events the snapshot had not yet seen when it was taken
// undo to the right state as well. The points are the transactions (of
// those touching a path, with ?rpath=): a step forward applies one
// transaction and everything after it up to the next step, so the
// watches it fired and those the woken clients set again are in it, and
// a step back from a transaction is the moment just before it.
//
// Watches are each member's own, and so are the events that set, fire
// and drop them: in a view of the whole ensemble, the other members'
// watch events after the point are asked for and undone too, placed by
// their zxids, which every member shares.

// maxReplayNodes bounds the tree a replay tracks under its path.
const maxReplayNodes = 5000

// replayPoint is the point of the history the view is replayed at, and
// what the steps around it are.
type replayPoint struct {
	// Txn is the transaction the view is replayed just after; a zero
	// Seq means before the window's first transaction.
	Txn trace.Event
	// Prev and Next are the seqs of the steps around it (0 for none;
	// PrevStart for the window's start).
	Prev, Next uint64
	PrevStart  bool
	Index      int // which step, from 1; 0 before the first
	Steps      int
	// Scope is the path prefix the steps go through (?rpath=): only
	// transactions touching it are steps.
	Scope string
	// Oldest is the window's oldest event's time.
	Oldest time.Time
	// boundary is the Seq of the last event the replayed state includes.
	boundary uint64
	hist     *trace.History
}

// Describe says where the replay stands, for the header.
func (p *replayPoint) Describe() string {
	if p.Txn.Seq == 0 {
		return "before the first of " + strconv.Itoa(p.Steps) + " transactions in the window"
	}
	e := p.Txn
	what := e.Op
	if paths := txnTouched(&e); len(paths) > 0 {
		what += " " + show(paths[0])
		if len(paths) > 1 {
			what += fmt.Sprintf(" and %d more", len(paths)-1)
		}
	}
	return fmt.Sprintf("just after zxid %#x at %s, %s (step %d of %d)", e.Zxid, e.Time.Format("15:04:05.000"), what, p.Index, p.Steps)
}

// txnTouched lists the paths a transaction names: its path, or its ops'
// or, for a session's close, the ephemerals it deleted.
func txnTouched(e *trace.Event) []string {
	var out []string
	if e.Path != "" {
		out = append(out, e.Path)
	}
	for _, op := range e.Ops {
		out = append(out, op.Path)
	}
	if len(out) == 0 {
		for _, c := range e.Changes {
			out = append(out, c.Path)
		}
	}
	return out
}

// Link is the URL of the same panel at another step.
func (p *replayPoint) Link(r string, seq uint64, start bool) string {
	if seq == 0 && !start {
		return ""
	}
	at := strconv.FormatUint(seq, 10)
	if start {
		at = "start"
	}
	return withQuery(r, map[string]string{"at": at})
}

// startReplay reads ?at= (a Seq of the history, or "start") and, if set,
// finds the step at or before it.
func (q *uiRequest) startReplay() error {
	at := q.param("at")
	if at == "" {
		return nil
	}
	h := q.m.history()
	if h == nil {
		return fmt.Errorf("this server keeps no history of its trace to replay (--trace-history)")
	}
	seq, err := strconv.ParseUint(at, 10, 64)
	if at != "start" && err != nil {
		return fmt.Errorf("at %q: a point of the trace's history (its seq) or start", at)
	}
	p := &replayPoint{Scope: q.param("rpath"), hist: h}
	w := q.m.replayWindow()
	q.window = w
	p.Oldest = w.oldest
	steps := w.steps(p.Scope)
	p.Steps = len(steps)
	// The step at or before seq, and the ones around it.
	k := -1
	if at != "start" {
		k, _ = slices.BinarySearch(steps, seq+1)
		k--
	}
	// A step holds everything up to the next step: the watches its
	// transaction fired, those the woken clients set again, and what
	// happened outside the steps' scope; a step back from a
	// transaction is the moment just before it.
	p.boundary = w.last
	if k+1 < len(steps) {
		p.Next = steps[k+1]
		p.boundary = p.Next - 1
	}
	if k >= 0 {
		p.Txn, _ = h.Get(steps[k])
		p.Index = k + 1
		if k > 0 {
			p.Prev = steps[k-1]
		} else {
			p.PrevStart = true
		}
	}
	q.replay = p
	return nil
}

// replayState is the view's state at a replay point: the sessions, the
// watches, and the tree under a path. The sessions and watches are the
// shared snapshot's (its base, never changed) and an overlay of what the
// undo changed, so a replay costs what it undoes, not what the server
// holds.
type replayState struct {
	base *replayBase
	// touched are the sessions the undo changed, as they were; nil for a
	// session that did not exist then.
	touched map[int64]*replaySession
	// watchDiff are the watch table entries the undo changed: their mode
	// then, "" for none.
	watchDiff map[watchKey]string
	// root is the path whose subtree nodes holds; truncated says it held
	// more than maxReplayNodes.
	root      string
	nodes     map[string]*replayNode
	truncated bool
	// known keeps the data of nodes the window saw created or deleted,
	// for the contenders' names.
	known map[string][]byte
	// silent are the members whose watches are unknown.
	silent map[uint64]bool

	sessionsOnce sync.Once
	sessions     []Session // WithEphemerals
	idsOnce      sync.Once
	ids          []int64 // IDs
}

// replayBase is the shared snapshot's sessions, by id, and watches, as a
// replay starts from them: made once per snapshot for every replay.
type replayBase struct {
	sessions []Session // the snapshot's own, never changed
	byID     *sessionsByID
	withEph  []int32             // the sessions that own ephemerals, by position, in id order
	watches  map[watchKey]string // mode by entry
}

// lookup is the snapshot's session id; false if it had none.
func (b *replayBase) lookup(id int64) (*Session, bool) {
	if i, ok := b.byID.find(id); ok {
		return &b.sessions[i], true
	}
	return nil, false
}

// replaySession is a session the undo changed.
type replaySession struct {
	s   Session
	eph map[string]bool
}

// watchKey is one watch table entry of a session.
type watchKey struct {
	session int64
	path    string
	child   bool
}

// replayNode is one node of the replayed tree.
type replayNode struct {
	data  []byte
	owner int64
}

// state builds the replayed state with the tree under root ("" for none),
// once per shared snapshot for every point that undoes the same events
// (stateKey).
func (q *uiRequest) state(root string) *replayState {
	if st, ok := q.states[root]; ok {
		return st // a page asks for each contender's data: once is enough
	}
	if q.states == nil {
		q.states = map[string]*replayState{}
	}
	st := q.deriveState(root)
	q.states[root] = st
	return st
}

// deriveState builds the replayed state with the tree under root, or
// takes it from the shared memo.
func (q *uiRequest) deriveState(root string) *replayState {
	p := q.replay
	w := q.window
	return derive(q.memo, q.stateKey(root), func() *replayState {
		st := &replayState{base: q.replayBase(), touched: map[int64]*replaySession{}, watchDiff: map[watchKey]string{},
			root: root, nodes: map[string]*replayNode{}, known: map[string][]byte{}, silent: map[uint64]bool{}}
		for _, a := range q.v.ens.Silent() {
			st.silent[a.Member.ID] = true
		}
		if root != "" {
			st.readTree(q.src)
		}
		// What the replay undoes, from the window read once for every
		// viewer: a busy server's setData on nodes it does not show are
		// most of it, and left out.
		events := w.after(p.boundary, root)
		early := derive(q.memo, fmt.Sprintf("replay %d: watch sets, attaches, session creations", w.last), func() []trace.Event {
			var out []trace.Event
			for _, e := range w.undo {
				if e.Kind == trace.WatchSet || e.Kind == trace.SessionAttached || e.Op == "createSession" {
					out = append(out, e)
				}
			}
			return out
		})
		remote := q.m.remoteWatchEvents(q.v, p.Txn.Zxid)
		st.undo(events, early, remote, p.Txn.Zxid)
		return st
	})
}

// stateKey names the replayed state with the tree under root: what it
// undoes, which is the window's events after the replay's boundary that
// matter to it (window.after), and, in a view of the whole ensemble, the
// other members' watch events after its zxid. Points between the same two
// such events replay to the same state: on a busy server whose writes are
// mostly to nodes the view does not track, viewers at different points
// share one state, and what panels derive and draw from it.
func (q *uiRequest) stateKey(root string) string {
	p, w := q.replay, q.window
	key := fmt.Sprintf("replay %d: undo from %d, tree %q from %d", w.last, w.undoAfter(p.boundary), root, w.treeAfter(root, p.boundary))
	if q.v.ens != nil {
		key += fmt.Sprintf(", members' watches after zxid %d", p.Txn.Zxid)
	}
	return key
}

// replayBase is the shared snapshot's sessions and watches as replays
// start from them, made once per snapshot.
func (q *uiRequest) replayBase() *replayBase {
	return derive(q.memo, "replay base", func() *replayBase {
		b := &replayBase{sessions: q.v.Sessions, byID: q.sessionsByID(), watches: make(map[watchKey]string, len(q.v.Watches))}
		for _, i := range b.byID.at {
			if len(b.sessions[i].Ephemerals) > 0 {
				b.withEph = append(b.withEph, i)
			}
		}
		for _, w := range q.v.Watches {
			if w.Session != 0 {
				b.watches[watchKey{w.Session, w.Path, w.Child}] = w.Mode
			}
		}
		return b
	})
}

// session is the session id as it stands in the undo so far, to change:
// copied into the overlay the first time. With create, a session absent
// then is made (its close's undo fills it in); without, nil.
func (st *replayState) session(id int64, create bool) *replaySession {
	if rs, ok := st.touched[id]; ok {
		if rs == nil && create {
			rs = &replaySession{s: Session{ID: id}, eph: map[string]bool{}}
			st.touched[id] = rs
		}
		return rs
	}
	if s, ok := st.base.lookup(id); ok {
		rs := &replaySession{s: *s, eph: make(map[string]bool, len(s.Ephemerals))}
		for _, e := range s.Ephemerals {
			rs.eph[e] = true
		}
		rs.s.Ephemerals = nil
		st.touched[id] = rs
		return rs
	}
	if !create {
		return nil
	}
	rs := &replaySession{s: Session{ID: id}, eph: map[string]bool{}}
	st.touched[id] = rs
	return rs
}

// exists reports whether session id existed at the replay point.
func (st *replayState) exists(id int64) bool {
	if rs, ok := st.touched[id]; ok {
		return rs != nil
	}
	_, ok := st.base.lookup(id)
	return ok
}

// watchMode is the mode of a watch table entry at the replay point, ""
// for none.
func (st *replayState) watchMode(k watchKey) string {
	if m, ok := st.watchDiff[k]; ok {
		return m
	}
	return st.base.watches[k]
}

// readTree reads the subtree under root, breadth first, up to
// maxReplayNodes nodes.
func (st *replayState) readTree(src Source) {
	queue := []string{st.root}
	for len(queue) > 0 && len(st.nodes) < maxReplayNodes {
		p := queue[0]
		queue = queue[1:]
		n, err := src.Node(p)
		if err != nil {
			continue
		}
		st.nodes[p] = &replayNode{data: n.Data, owner: n.Stat.EphemeralOwner}
		after := ""
		for len(st.nodes)+len(queue) < maxReplayNodes {
			names, err := src.Children(p, after, childrenPerPage)
			if err != nil || len(names) == 0 {
				break
			}
			for _, name := range names {
				queue = append(queue, joinPath(p, name))
			}
			after = names[len(names)-1]
		}
	}
	st.truncated = len(queue) > 0
}

// replayRoot is the subtree a prefix filter asks a replay to track: the
// path it names, or none.
func replayRoot(prefix string) string {
	p := strings.TrimSuffix(prefix, "/")
	if !strings.HasPrefix(p, "/") {
		return ""
	}
	return p
}

// tracked reports whether path is in the replayed tree's subtree.
func (st *replayState) tracked(path string) bool {
	return st.root != "" && isAncestor(st.root, path)
}

// undo takes the state back to just before events, the window's events
// after the replay's point that matter (in order): each undone newest
// first, and every other member's watch event after zxid too, a member's
// after the local ones of the same zxid. early are the window's watch
// sets, attaches and session creations from its start, which say what a
// fired watch was and where a session was before it moved.
func (st *replayState) undo(events, early, remote []trace.Event, zxid int64) {
	sets := setWatches(early)
	for _, e := range events {
		for _, c := range e.Changes {
			if c.Type == "NodeCreated" {
				st.known[c.Path] = c.Data
			}
		}
	}
	r := len(remote) - 1
	undoRemote := func(down int64) {
		for ; r >= 0 && remote[r].Zxid > zxid && remote[r].Zxid >= down; r-- {
			st.undoEvent(&remote[r], sets, early)
		}
	}
	for i := len(events) - 1; i >= 0; i-- {
		undoRemote(events[i].Zxid)
		st.undoEvent(&events[i], sets, early)
	}
	undoRemote(zxid + 1)
}

// undoEvent undoes one event.
func (st *replayState) undoEvent(e *trace.Event, sets map[watchKey][]string, events []trace.Event) {
	switch e.Kind {
	case trace.TxnApplied:
		if e.Err != "" {
			return
		}
		for i := len(e.Changes) - 1; i >= 0; i-- {
			st.undoChange(&e.Changes[i])
		}
		switch e.Op {
		case "createSession":
			st.touched[e.Session] = nil
		case "closeSession":
			rs := st.session(e.Session, true)
			if rs.s.Timeout == 0 {
				rs.s.Timeout, rs.s.Node = time.Duration(e.Timeout)*time.Millisecond, e.Member
			}
			for _, c := range e.Changes {
				if c.Type == "NodeDeleted" && c.Owner == e.Session {
					st.own(e.Session, c.Path)
				}
			}
		}
	case trace.SessionAttached:
		if rs := st.session(e.Session, false); rs != nil {
			rs.s.Node = previousMember(events, e)
		}
	case trace.WatchSet:
		for _, table := range watchTables(e.Watch) {
			st.watchDiff[watchKey{e.Session, e.Path, table}] = ""
		}
	case trace.WatchRemoved:
		for _, op := range e.Ops {
			st.setWatch(e.Session, op.Path, op.Op)
		}
	case trace.WatchDelivered:
		if st.persistent(e.Session, e.Path) {
			return
		}
		kinds := sets[watchKey{e.Session, e.Path, false}]
		if len(kinds) == 0 {
			kinds = []string{defaultWatch(e.Type)}
		}
		for _, k := range kinds {
			if watchFires(k, e.Type) {
				st.setWatch(e.Session, e.Path, k)
			}
		}
	}
}

// undoChange undoes one node change.
func (st *replayState) undoChange(c *trace.Change) {
	switch c.Type {
	case "NodeCreated":
		if c.Owner != 0 {
			if rs := st.session(c.Owner, false); rs != nil {
				delete(rs.eph, c.Path)
			}
		}
		if st.tracked(c.Path) {
			delete(st.nodes, c.Path)
		}
	case "NodeDeleted":
		st.known[c.Path] = c.Data
		if c.Owner != 0 {
			st.own(c.Owner, c.Path)
		}
		if st.tracked(c.Path) {
			st.nodes[c.Path] = &replayNode{data: c.Data, owner: c.Owner}
		}
	case "NodeDataChanged":
		if n := st.nodes[c.Path]; n != nil {
			n.data = c.Data
		}
	}
}

// own records path as an ephemeral of session id.
func (st *replayState) own(id int64, path string) {
	st.session(id, true).eph[path] = true
}

// setWatch sets the table entries a watch of kind has.
func (st *replayState) setWatch(session int64, path, kind string) {
	mode := "standard"
	if kind == "persistent" || kind == "persistentRecursive" {
		mode = kind
	}
	for _, table := range watchTables(kind) {
		st.watchDiff[watchKey{session, path, table}] = mode
	}
}

// persistent reports whether a session's persistent watch covers path,
// so that an event there consumed nothing.
func (st *replayState) persistent(session int64, path string) bool {
	if m := st.watchMode(watchKey{session, path, false}); m == "persistent" || m == "persistentRecursive" {
		return true
	}
	for p, ok := parentOf(path); ok; p, ok = parentOf(p) {
		if st.watchMode(watchKey{session, p, false}) == "persistentRecursive" {
			return true
		}
	}
	return false
}

// parentOf is a path's parent, false for the root.
func parentOf(path string) (string, bool) {
	if path == "/" || path == "" {
		return "", false
	}
	parent, _ := splitPath(path)
	return parent, true
}

// watchTables are the tables a watch of kind has entries in: false for
// the data table, true for the child table.
func watchTables(kind string) []bool {
	switch kind {
	case "child":
		return []bool{true}
	case "persistent", "persistentRecursive", "any":
		return []bool{false, true}
	}
	return []bool{false} // data, exist
}

// defaultWatch is the one-shot watch an event of type fires, when the
// history does not say which was set: a data watch, or a child watch for
// a children's change.
func defaultWatch(typ string) string {
	if typ == "NodeChildrenChanged" {
		return "child"
	}
	return "data"
}

// watchFires reports whether a one-shot watch of kind fires on an event of
// type (and so was spent by it).
func watchFires(kind, typ string) bool {
	switch kind {
	case "child":
		return typ == "NodeChildrenChanged" || typ == "NodeDeleted"
	case "data", "exist":
		return typ != "NodeChildrenChanged"
	}
	return false
}

// setWatches indexes, for each session and path, the kinds of the
// one-shot watches set on it, newest last, as the window shows them.
func setWatches(events []trace.Event) map[watchKey][]string {
	out := map[watchKey][]string{}
	for i := range events {
		e := &events[i]
		if e.Kind == trace.WatchSet && (e.Watch == "data" || e.Watch == "exist" || e.Watch == "child") {
			k := watchKey{e.Session, e.Path, false}
			if !slices.Contains(out[k], e.Watch) {
				out[k] = append(out[k], e.Watch)
			}
		}
	}
	return out
}

// previousMember is the member a session was connected through before the
// attach e, as the window shows it; e's own if the window does not.
func previousMember(events []trace.Event, e *trace.Event) uint64 {
	m := e.Member
	for i := range events {
		x := &events[i]
		if x.Seq >= e.Seq {
			break
		}
		if x.Session == e.Session && x.Member != 0 && (x.Kind == trace.SessionAttached || x.Op == "createSession") {
			m = x.Member
		}
	}
	return m
}

// replayed makes a session as the replay shows it: taken as connected
// through its member, whose watches the replay knows unless that member
// did not answer; what only the present knows (client, last heard, time
// left) left out.
func (st *replayState) replayed(s Session) Session {
	s.Remote, s.Expires, s.LastHeard, s.WatchCount = "", time.Time{}, time.Time{}, 0
	s.Unknown = st.silent[s.Node]
	s.Attached = 0
	if !s.Unknown {
		s.Attached = cmp.Or(s.Node, 1)
	}
	return s
}

// get is session id at the replay point; false if it did not exist.
func (st *replayState) get(id int64) (Session, bool) {
	if rs, ok := st.touched[id]; ok {
		if rs == nil {
			return Session{}, false
		}
		s := rs.s
		s.ID = id
		s.Ephemerals = make([]string, 0, len(rs.eph))
		for p := range rs.eph {
			s.Ephemerals = append(s.Ephemerals, p)
		}
		slices.Sort(s.Ephemerals)
		return st.replayed(s), true
	}
	if s, ok := st.base.lookup(id); ok {
		return st.replayed(*s), true
	}
	return Session{}, false
}

// IDs are the ids of the sessions at the replay point, in order: the
// base's own list unless the undo opened or closed a session.
func (st *replayState) IDs() []int64 {
	st.idsOnce.Do(func() {
		changed := false
		for id, rs := range st.touched {
			_, inBase := st.base.lookup(id)
			changed = changed || (rs == nil) == inBase
		}
		if !changed {
			st.ids = st.base.byID.ids
			return
		}
		for _, id := range st.base.byID.ids {
			if rs, ok := st.touched[id]; !ok || rs != nil {
				st.ids = append(st.ids, id)
			}
		}
		for id, rs := range st.touched {
			if _, inBase := st.base.lookup(id); rs != nil && !inBase {
				st.ids = append(st.ids, id)
			}
		}
		slices.Sort(st.ids)
	})
	return st.ids
}

// WithEphemerals are the sessions at the replay point that own
// ephemerals, by id: all a lock queue needs. Made once per state.
func (st *replayState) WithEphemerals() []Session {
	st.sessionsOnce.Do(func() {
		for _, i := range st.base.withEph {
			if _, ok := st.touched[st.base.sessions[i].ID]; !ok {
				st.sessions = append(st.sessions, st.replayed(st.base.sessions[i]))
			}
		}
		for id := range st.touched {
			if s, ok := st.get(id); ok && len(s.Ephemerals) > 0 {
				st.sessions = append(st.sessions, s)
			}
		}
		slices.SortFunc(st.sessions, func(a, b Session) int { return cmp.Compare(a.ID, b.ID) })
	})
	return st.sessions
}

// Watches are the replayed watches, as table entries.
func (st *replayState) Watches() []Watch {
	out := make([]Watch, 0, len(st.base.watches)+len(st.watchDiff))
	add := func(k watchKey, mode string) {
		if mode == "" || !st.exists(k.session) {
			return
		}
		w := Watch{Path: k.path, Session: k.session, Watcher: k.session, Child: k.child, Mode: mode}
		if rs := st.touched[k.session]; rs != nil {
			w.Member = rs.s.Node
		} else if s, ok := st.base.lookup(k.session); ok {
			w.Member = s.Node
		}
		out = append(out, w)
	}
	for k, mode := range st.base.watches {
		if _, ok := st.watchDiff[k]; !ok {
			add(k, mode)
		}
	}
	for k, mode := range st.watchDiff {
		add(k, mode)
	}
	slices.SortFunc(out, func(a, b Watch) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.Session, b.Session), compareBool(a.Child, b.Child))
	})
	return out
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// data is a node's data in the replay: the replayed tree's, else what the
// window recorded it created or deleted with; false when neither knows.
func (st *replayState) data(path string) ([]byte, bool) {
	if n := st.nodes[path]; n != nil {
		return n.data, true
	}
	d, ok := st.known[path]
	return d, ok
}

// children lists the replayed children of path, sorted.
func (st *replayState) children(path string) []string {
	var out []string
	for p := range st.nodes {
		if parent, name := splitPath(p); parent == path && p != path {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// remoteWatchEvents asks the other members, in a view of the whole
// ensemble, for their watch events after zxid: each member's watches are
// its own clients'.
func (m *Monitor) remoteWatchEvents(v *view, zxid int64) []trace.Event {
	if v.ens == nil {
		return nil
	}
	question, _ := json.Marshal(memberQuestion{Ask: "watch-history", AfterZxid: zxid})
	var all []trace.Event
	for _, a := range m.askMembersQ(v, question) {
		var evs []trace.Event
		if a.Err == nil && json.Unmarshal(a.Body, &evs) == nil {
			all = append(all, evs...)
		}
	}
	slices.SortStableFunc(all, func(a, b trace.Event) int { return cmp.Compare(a.Zxid, b.Zxid) })
	return all
}

// watchHistory is a member's answer to watch-history: the watch events of
// its window after zxid.
func (m *Monitor) watchHistory(zxid int64) []trace.Event {
	h := m.history()
	if h == nil {
		return nil
	}
	f := &trace.Filter{Kinds: []trace.Kind{trace.WatchSet, trace.WatchDelivered, trace.WatchRemoved}}
	events, _ := h.Since(0, f, 0)
	i, _ := slices.BinarySearchFunc(events, zxid+1, func(e trace.Event, z int64) int { return cmp.Compare(e.Zxid, z) })
	return events[i:]
}

// withQuery is a request URI with some query parameters set (and fragment
// left out).
func withQuery(requestURI string, set map[string]string) string {
	path, query, _ := strings.Cut(requestURI, "?")
	v, _ := url.ParseQuery(query)
	v.Del("fragment")
	for k, val := range set {
		v.Set(k, val)
	}
	return path + "?" + v.Encode()
}
