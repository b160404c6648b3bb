package monitor

// The replay's window of the trace: read once a second for every viewer
// and panel (replay.go says how a replay uses it).

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/hutchzk/hutch/trace"
)

// replayWindow is the trace's window as replays read it: taken at most
// once per snapshotAge for every viewer and panel, so that a replayed page
// holds the window's lock for no more than a lookup, and a busy server's
// window is read a few times a second whatever the number of viewers. It
// keeps the Seqs of the transactions (the steps of an unscoped replay) and
// the events a replay undoes that are not mere changes of persistent
// nodes; the steps of a scoped replay and the changes under a tree's root
// are read when first asked for, once per window.
type replayWindow struct {
	h      *trace.History
	taken  time.Time
	last   uint64
	oldest time.Time
	txns   []uint64      // every successful transaction's Seq
	undo   []trace.Event // sessions opened or closed, ephemerals, watches, attaches
	mu     sync.Mutex    // guards scoped and trees
	scoped map[string][]uint64
	trees  map[string][]trace.Event
}

// replayWindow returns the window as replays read it, no older than
// snapshotAge.
func (m *Monitor) replayWindow() *replayWindow {
	m.replayMu.Lock()
	defer m.replayMu.Unlock()
	if w := m.replayWin; w != nil && time.Since(w.taken) <= snapshotAge {
		return w
	}
	h := m.history()
	w := &replayWindow{h: h, taken: time.Now(), scoped: map[string][]uint64{}, trees: map[string][]trace.Event{}}
	// keep runs under the window's lock, and appends only Seqs, within
	// the capacity made here (a window that grew meanwhile may need more).
	txns := make([]uint64, 0, h.Stats().Events+scanPieceSlack)
	w.undo, w.last = h.Scan(0, func(e *trace.Event) bool {
		if e.Kind != trace.TxnApplied {
			return true
		}
		if e.Err != "" {
			return false
		}
		txns = append(txns, e.Seq)
		return touchesSessions(e)
	})
	w.txns = txns
	if st := h.Stats(); st.Events > 0 {
		w.oldest = st.FirstTime
	}
	m.replayWin = w
	return w
}

// scanPieceSlack is room for what a busy server adds to the window while
// a replay reads it.
const scanPieceSlack = 1024

// touchesSessions reports whether a transaction opens or closes a session
// or creates or deletes an ephemeral node.
func touchesSessions(e *trace.Event) bool {
	if e.Op == "createSession" || e.Op == "closeSession" {
		return true
	}
	for i := range e.Changes {
		if e.Changes[i].Owner != 0 {
			return true
		}
	}
	return false
}

// steps are the Seqs of the transactions a replay scoped to a path prefix
// steps through ("" for all), in order.
func (w *replayWindow) steps(scope string) []uint64 {
	if scope == "" {
		return w.txns
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if s, ok := w.scoped[scope]; ok {
		return s
	}
	var s []uint64
	events, _ := w.h.Scan(0, func(e *trace.Event) bool { return e.Seq <= w.last && isStep(e, scope) })
	for _, e := range events {
		s = append(s, e.Seq)
	}
	w.scoped[scope] = s
	return s
}

// tree is the window's transactions that touch the subtree under root.
func (w *replayWindow) tree(root string) []trace.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.trees[root]; ok {
		return t
	}
	t, _ := w.h.Scan(0, func(e *trace.Event) bool {
		if e.Kind != trace.TxnApplied || e.Err != "" || e.Seq > w.last {
			return false
		}
		for i := range e.Changes {
			if isAncestor(root, e.Changes[i].Path) {
				return true
			}
		}
		return false
	})
	w.trees[root] = t
	return t
}

// firstAfter is the index in list (in Seq order) of its first event after
// boundary.
func firstAfter(list []trace.Event, boundary uint64) int {
	i, _ := slices.BinarySearchFunc(list, boundary+1, func(e trace.Event, s uint64) int { return cmp.Compare(e.Seq, s) })
	return i
}

// undoAfter and treeAfter say where the events a replay undoes after
// boundary start in the undo list and in the transactions under root (0
// for no root): two boundaries with the same undo the same events.
func (w *replayWindow) undoAfter(boundary uint64) int { return firstAfter(w.undo, boundary) }

func (w *replayWindow) treeAfter(root string, boundary uint64) int {
	if root == "" {
		return 0
	}
	return firstAfter(w.tree(root), boundary)
}

// after are the events a replay with the tree under root undoes after
// boundary, in order: the window's undo list, and the transactions under
// root.
func (w *replayWindow) after(boundary uint64, root string) []trace.Event {
	undo := w.undo[w.undoAfter(boundary):]
	if root == "" {
		return undo
	}
	tree := w.tree(root)
	tree = tree[firstAfter(tree, boundary):]
	out := make([]trace.Event, 0, len(undo)+len(tree))
	i, j := 0, 0
	for i < len(undo) || j < len(tree) {
		switch {
		case j == len(tree) || (i < len(undo) && undo[i].Seq < tree[j].Seq):
			out = append(out, undo[i])
			i++
		case i == len(undo) || tree[j].Seq < undo[i].Seq:
			out = append(out, tree[j])
			j++
		default: // in both
			out = append(out, undo[i])
			i, j = i+1, j+1
		}
	}
	return out
}

// isStep reports whether e is a transaction the replay steps through.
func isStep(e *trace.Event, scope string) bool {
	if e.Kind != trace.TxnApplied || e.Err != "" || e.Op == "createSession" && scope != "" {
		return false
	}
	if scope == "" {
		return true
	}
	return (&trace.Filter{PathPrefix: scope}).Match(e)
}
