package monitor

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Lock and election queues, derived from the tree and the watches: the
// recipes (ZooKeeper's lock and leader-election recipes, Curator's
// InterProcessMutex and LeaderLatch, kazoo's Lock and Election) each
// queue a contender as an ephemeral sequential child of one parent; the
// lowest sequence number holds, and each waiter watches the node just
// before its own. A waiter watching the parent's children instead (or the
// holder) is the herd effect: every change wakes them all.

// lockQueue is one parent with ephemeral sequential children, in sequence
// order: the first holds, the others wait.
type lockQueue struct {
	Parent  string
	Entries []queueEntry
	// Herd counts the waiters woken by any change rather than by their
	// predecessor's going: those watching the parent, or the holder.
	Herd int
}

// queueEntry is one contender.
type queueEntry struct {
	Name    string // the child's name
	Seq     int64  // its sequence number: the name's last ten digits
	Session int64  // the session that owns it
	Node    uint64 // the member that session is connected through; 0 unknown
	Wait    waitKind
	// Watched is the path it waits on: its predecessor's, another
	// contender's or the parent's; "" when it watches none of those.
	Watched string
	// Attached is the member whose connection carries its session now,
	// 0 when none does (or it is unknown); Expires when its session
	// expires unless its client is heard from, zero where unknown.
	Attached uint64
	Expires  time.Time
}

// waitKind is how a contender waits.
type waitKind uint8

const (
	// waitNone: no watch on the queue, as the holder has, or a waiter
	// between reading the children and setting its watch.
	waitNone waitKind = iota
	// waitPredecessor: a data or exists watch on the node just before
	// its own, the fair chain.
	waitPredecessor
	// waitOther: a data watch on another contender, not its predecessor
	// (usually the holder): woken with everyone who watches it.
	waitOther
	// waitParent: a child watch (or a persistent or persistent-recursive
	// one) on the parent: the herd.
	waitParent
	// waitElsewhere: the session is connected through another member,
	// which alone holds its watches (as each ZooKeeper server holds only
	// its own clients'), and which did not answer this view.
	waitElsewhere
	// waitDisconnected: no connection carries the session just now, so
	// it holds no watch until its client reconnects.
	waitDisconnected
)

// sequenceDigits is the width of a sequential node's suffix (%010d).
const sequenceDigits = 10

// sequenceOf reads a sequential node's number from its name's last ten
// characters; false if they are not digits.
func sequenceOf(name string) (int64, bool) {
	if len(name) < sequenceDigits {
		return 0, false
	}
	suffix := name[len(name)-sequenceDigits:]
	for i := range len(suffix) {
		if suffix[i] < '0' || suffix[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(suffix, 10, 64)
	return n, err == nil
}

// splitPath splits a node's path into its parent's and its name.
func splitPath(path string) (parent, name string) {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return "", path
	}
	if i == 0 {
		return "/", path[1:]
	}
	return path[:i], path[i+1:]
}

// joinPath is parent's child name.
func joinPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

// lockQueues finds every parent with ephemeral sequential children among
// the sessions' ephemerals, orders each queue by sequence number and
// says how each contender waits, from the watches the view knows (a
// session's Attached and Unknown say whether its watches are among them).
// Queues come by parent path.
func lockQueues(sessions []Session, watches []Watch) []lockQueue {
	byParent := map[string][]queueEntry{}
	where := map[int64]*Session{}
	for i := range sessions {
		s := &sessions[i]
		where[s.ID] = s
		for _, p := range s.Ephemerals {
			parent, name := splitPath(p)
			seq, ok := sequenceOf(name)
			if !ok {
				continue
			}
			byParent[parent] = append(byParent[parent], queueEntry{Name: name, Seq: seq, Session: s.ID, Node: s.Node,
				Attached: s.Attached, Expires: s.Expires})
		}
	}
	held := map[int64][]Watch{}
	for _, w := range watches {
		if w.Session != 0 {
			held[w.Session] = append(held[w.Session], w)
		}
	}
	out := make([]lockQueue, 0, len(byParent))
	for parent, entries := range byParent {
		slices.SortFunc(entries, func(a, b queueEntry) int {
			return cmp.Or(cmp.Compare(a.Seq, b.Seq), strings.Compare(a.Name, b.Name))
		})
		q := lockQueue{Parent: parent, Entries: entries}
		contenders := make(map[string]bool, len(entries))
		for _, e := range entries {
			contenders[joinPath(parent, e.Name)] = true
		}
		for i := range entries {
			e := &entries[i]
			s := where[e.Session]
			switch {
			case s.Unknown:
				e.Wait = waitElsewhere
				continue
			case s.Attached == 0:
				e.Wait = waitDisconnected
				continue
			}
			if i == 0 {
				continue // the holder waits for nothing
			}
			predecessor := joinPath(parent, entries[i-1].Name)
			e.Wait, e.Watched = waitOn(parent, joinPath(parent, e.Name), predecessor, contenders, held[e.Session])
			if i > 0 && (e.Wait == waitParent || e.Wait == waitOther) {
				q.Herd++
			}
		}
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b lockQueue) int { return strings.Compare(a.Parent, b.Parent) })
	return out
}

// waitOn says how the contender own, with watches ws, waits in the queue
// under parent: on its predecessor if it watches it, else on another
// contender, else on the parent.
func waitOn(parent, own, predecessor string, contenders map[string]bool, ws []Watch) (waitKind, string) {
	other, onParent := "", false
	for _, w := range ws {
		switch {
		case !w.Child && predecessor != "" && w.Path == predecessor:
			return waitPredecessor, predecessor
		case !w.Child && contenders[w.Path] && w.Path != own:
			other = w.Path
		case w.Path == parent && (w.Child || w.Mode != "standard"),
			w.Mode == "persistentRecursive" && isAncestor(w.Path, parent):
			onParent = true
		}
	}
	switch {
	case other != "":
		return waitOther, other
	case onParent:
		return waitParent, parent
	}
	return waitNone, ""
}

// isAncestor reports whether a is path or one of its ancestors.
func isAncestor(a, path string) bool {
	return a == path || a == "/" || strings.HasPrefix(path, a+"/")
}
