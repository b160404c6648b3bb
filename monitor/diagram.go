package monitor

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The lock and election queue as a picture: each contender a box, in
// sequence order, left to right and row by row; an arrow from each waiter
// to what it watches: its predecessor (green, the fair chain: a release
// wakes one), another contender or the parent's children (orange, the
// herd: every change wakes them all). The geometry is computed here and
// drawn as SVG by the panel's template, which escapes every text and
// attribute: nothing of a node's name or data reaches the page unescaped.

// Diagram geometry, in SVG user units (CSS pixels).
const (
	boxW      = 216
	boxH      = 98
	gapX      = 34
	gapY      = 40
	diagCols  = 5
	marginX   = 8
	parentTop = 6
	parentH   = 30
	// boxTextW is the width a box's text may take (its padding off);
	// text cut to fit it has the whole in the box's tooltip (title).
	boxTextW = boxW - 20
	// The sizes of the box's two free texts, in CSS pixels, as the
	// stylesheet sets them: the contender's name (bold) and its node's
	// name (monospace).
	labelPx    = 14
	nodeNamePx = 11.5
)

// lockDiagram is one queue's picture.
type lockDiagram struct {
	// ID tells its arrowheads from another diagram's on the same page.
	ID            string
	Width, Height int
	// Parent is the bar standing for the parent node, drawn when some
	// waiter watches its children.
	Parent *diagramBox
	Boxes  []diagramBox
	Arrows []diagramArrow
	// More says contenders are beyond this page's picture.
	Before, After int
}

// diagramBox is one contender's box (or the parent's bar).
type diagramBox struct {
	X, Y, W, H int
	Entry      *entryView
}

// diagramArrow is one waiter's watch: a path and its kind (predecessor,
// other, parent), which the stylesheet colours.
type diagramArrow struct {
	D     string // the SVG path
	Class string // arrow-predecessor, arrow-other, arrow-parent
	Head  string // its arrowhead's marker: predecessor, other, parent
	Title string
}

// layoutQueue places a page of a queue's contenders, first being the
// index of entries[0] in the whole queue.
func layoutQueue(entries []entryView, first, total int) *lockDiagram {
	d := &lockDiagram{Before: first, After: total - first - len(entries)}
	top := parentTop + gapY/2 // room for arrows above the first row
	herd := false
	for i := range entries {
		herd = herd || entries[i].Contender.Wait == waitParent
	}
	if herd {
		d.Parent = &diagramBox{X: marginX, Y: parentTop, H: parentH}
		top += parentH + gapY
	}
	rows := (len(entries) + diagCols - 1) / diagCols
	cols := min(len(entries), diagCols)
	d.Width = 2*marginX + cols*boxW + max(cols-1, 0)*gapX + gapX/2
	d.Height = top + rows*boxH + max(rows-1, 0)*gapY + gapY/2
	if d.Parent != nil {
		d.Parent.W = d.Width - 2*marginX
	}
	at := map[string]int{} // a contender's path → its box
	for i := range entries {
		col, row := i%diagCols, i/diagCols
		d.Boxes = append(d.Boxes, diagramBox{X: marginX + col*(boxW+gapX), Y: top + row*(boxH+gapY), W: boxW, H: boxH, Entry: &entries[i]})
		at[entries[i].Path] = i
	}
	for i := range d.Boxes {
		b := &d.Boxes[i]
		e := b.Entry
		switch e.Contender.Wait {
		case waitPredecessor, waitOther:
			class, head := "arrow-predecessor", "predecessor"
			if e.Contender.Wait == waitOther {
				class, head = "arrow-other", "other"
			}
			title := show(e.Contender.Name) + " watches " + show(e.WatchedName)
			j, ok := at[e.Contender.Watched]
			if !ok {
				// Off this page: point to the left edge of the row.
				d.Arrows = append(d.Arrows, diagramArrow{D: fmt.Sprintf("M %d %d H %d", b.X, b.Y+b.H/2, b.X-gapX+4), Class: class, Head: head, Title: title + " (on an earlier page)"})
				continue
			}
			d.Arrows = append(d.Arrows, diagramArrow{D: route(b, &d.Boxes[j]), Class: class, Head: head, Title: title})
		case waitParent:
			// Up the gap to the box's right, to the parent's bar: the
			// waiters of a column share the lane, like a bus.
			lane := b.X + b.W + gapX/2
			d.Arrows = append(d.Arrows, diagramArrow{
				D:     fmt.Sprintf("M %d %d H %d V %d", b.X+b.W, b.Y+14, lane, d.Parent.Y+d.Parent.H+2),
				Class: "arrow-parent", Head: "parent", Title: show(e.Contender.Name) + " watches every child of the parent"})
		}
	}
	return d
}

// route is the path of an arrow from box a to box b: straight across when
// b is just left of a in the same row; otherwise out of a into the gap
// between the rows, along it to the gap column right of b, along that to
// b's middle and into b's right side. Gaps cross no box, so no arrow
// runs over a contender.
func route(a, b *diagramBox) string {
	if a.Y == b.Y && b.X < a.X && a.X-(b.X+b.W) <= gapX {
		return fmt.Sprintf("M %d %d H %d", a.X, a.Y+a.H/2, b.X+b.W+2)
	}
	x, y, gap := a.X+a.W/2, a.Y, a.Y-gapY/2
	if b.Y > a.Y {
		y, gap = a.Y+a.H, a.Y+a.H+gapY/2
	}
	lane := b.X + b.W + gapX/2
	return fmt.Sprintf("M %d %d V %d H %d V %d H %d", x, y, gap, lane, b.Y+b.H/2, b.X+b.W+2)
}

// contenderLabel is the name a contender's node data gives it, as the
// recipes write one: Curator's LeaderLatch its participant id, kazoo its
// identifier, a hand-written lock often a host or worker name. JSON data
// gives its "name", "id", "host" or "address" field; other text its first
// line; anything else (bytes that are not UTF-8, nothing) no name.
func contenderLabel(data []byte) string {
	if len(data) == 0 {
		return ""
	}
	var obj map[string]any
	if data[0] == '{' && json.Unmarshal(data, &obj) == nil {
		for _, k := range []string{"name", "id", "host", "address"} {
			if s, ok := obj[k].(string); ok && s != "" {
				return show(s)
			}
		}
		return ""
	}
	if !utf8.Valid(data) {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	return show(line)
}

// fitLabel cuts a contender's name to the width of its box.
func fitLabel(s string) string { return fitWidth(s, boxTextW/labelPx, boldEm) }

// fitNodeName cuts a node's name to the width of its box.
func fitNodeName(s string) string { return fitWidth(s, boxTextW/nodeNamePx, monoEm) }

// fitWidth shortens s, marking the cut with an ellipsis, so that its
// width — estimated rune by rune by em, in ems — is at most width ems.
// A cut by rune count let a name of wide letters or markup (`<svg
// onload=…`) run out of its box; the estimates err on the wide side of
// the fonts the page asks for (DejaVu Sans Bold and Mono on Debian).
func fitWidth(s string, width float64, em func(rune) float64) string {
	total := 0.0
	for _, r := range s {
		total += em(r)
	}
	if total <= width {
		return s
	}
	budget, used := width-em('…'), 0.0
	for i, r := range s {
		if used+em(r) > budget {
			return s[:i] + "…"
		}
		used += em(r)
	}
	return s
}

// boldEm is a rune's width in a bold sans-serif, in ems, rounded up.
func boldEm(r rune) float64 {
	switch {
	case strings.ContainsRune("iljIJ.,:;'|!` ()[]{}", r):
		return 0.45
	case strings.ContainsRune("mwMW@%", r):
		return 1.1
	case r >= 'A' && r <= 'Z', strings.ContainsRune("<>=+~#&", r):
		return 0.85
	case r < utf8.RuneSelf:
		return 0.72
	default:
		return 1.05 // CJK and symbols: a full em, and more
	}
}

// monoEm is a rune's width in a monospace font, in ems: one cell, two
// for the wide runes of East Asian scripts (counted as every non-ASCII
// rune, to err on the wide side).
func monoEm(r rune) float64 {
	if r < utf8.RuneSelf {
		return 0.61
	}
	return 1.22
}

// clip shortens s to n runes, marking the cut with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
