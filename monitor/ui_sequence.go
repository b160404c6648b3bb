package monitor

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hutchzk/hutch/trace"
)

// The sequence panel: the trace's history as a sequence diagram. The
// ensemble's state is the first lane, each session a lane after it; down
// the page in the order things happened, a transaction is an arrow from
// the session that asked to the state (or from the state, for a session
// the server expired), and the watch events it fired are arrows back to
// the sessions they woke, in the band of its zxid; watches set and dropped
// are dashed arrows. Drawn as SVG by the server from the history the
// server keeps, and redrawn every second.

const (
	sequenceRows    = 60  // events drawn by default
	sequenceMaxRows = 400 // at most
	seqLanes        = 7   // session lanes; the rest share the last
	seqRowH         = 26
	seqTop          = 64
	seqStateX       = 150
	seqFirstLane    = 330
	seqLaneGap      = 150
	seqLabelRunes   = 64
)

var _ = addPanel(panel{
	name: "sequence", title: "Sequence", order: 65, refresh: time.Second,
	data: sequenceData,
	tmpl: `{{define "sequence.controls"}}<form class="controls" method="get" action="/ui/sequence">
<label>Path prefix <input name="path" value="{{show .Path}}" size="30"></label>
<label>Session <input name="session" value="{{if .Session}}{{sid .Session}}{{end}}" size="20" placeholder="0x…"></label>
<label>Events <input name="last" value="{{.Last}}" size="5"></label>
<button>Filter</button> <a href="{{.TraceURL}}">as a table</a></form>
<ul class="legend"><li><svg width="44" height="14" role="img" aria-label="a transaction"><path class="seq-txn" d="M 2 7 H 40"></path></svg> a transaction a session asked for</li>
<li><svg width="44" height="14" role="img" aria-label="a watch event"><path class="seq-watch" d="M 2 7 H 40"></path></svg> a watch event it fired, to the session it wakes</li>
<li><svg width="44" height="14" role="img" aria-label="an expiry"><path class="seq-expire" d="M 2 7 H 40"></path></svg> a session the server expired</li>
<li><svg width="44" height="14" role="img" aria-label="a watch set"><path class="seq-setwatch" d="M 2 7 H 40"></path></svg> a watch set, or dropped unfired</li></ul>{{end}}
{{define "sequence"}}{{if not .Rows}}<p class="note">Nothing in the trace's history{{if .Path}} under {{show .Path}}{{end}} yet.</p>{{else}}
<p class="note">The newest {{len .Rows}} events of this member's trace history{{if .Path}} under {{show .Path}}{{end}}, oldest at the top; each band is one transaction and what it caused. Transactions are every member's; watches set, fired and dropped are those of the clients connected here (each member's own view draws its own).</p>
<svg class="sequence" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="the trace as a sequence diagram">
<defs><marker id="seq-head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path class="seq-head" d="M 0 0 L 10 5 L 0 10 z"></path></marker></defs>
{{range .Bands}}<rect class="seq-band" x="0" y="{{.Y}}" width="{{$.Width}}" height="{{.H}}"></rect>{{end}}
{{range .Lanes}}<line class="seq-lane" x1="{{.X}}" y1="{{$.LaneTop}}" x2="{{.X}}" y2="{{$.Height}}"></line>
<text class="seq-lane-name" x="{{.X}}" y="22" text-anchor="middle">{{.Head}}<title>{{.Label}} {{.Name}}</title></text><text class="seq-lane-label" x="{{.X}}" y="40" text-anchor="middle">{{if .Label}}{{.Name}}{{else}}{{.Note}}{{end}}</text>{{end}}
{{range .Rows}}<text class="seq-zxid" x="6" y="{{add .Y 4}}">{{.Zxid}}</text>
<path class="{{.Class}}" d="M {{.X1}} {{.Y}} H {{.X2}}" marker-end="url(#seq-head)"><title>{{.Title}}</title></path>
<text class="seq-msg" x="{{.TextX}}" y="{{add .Y -5}}">{{clip .Label 64}}<title>{{.Title}}</title></text>{{if .End}}<text class="seq-end" x="{{.EndX}}" y="{{add .Y 5}}" text-anchor="middle">✕</text>{{end}}
{{end}}</svg>{{end}}{{end}}`,
})

type sequenceView struct {
	Path    string
	Session int64
	Last    int
	Lanes   []seqLane
	Rows    []seqRow
	Bands   []seqBand
	Width   int
	Height  int
	LaneTop int
}

// TraceURL is the same filter as the trace's table.
func (s *sequenceView) TraceURL() string {
	return traceView{Path: s.Path, Session: s.Session}.filterURL("/ui/trace")
}

// seqLane is the state's lane or a session's.
type seqLane struct {
	X     int
	Name  string // "ensemble state", a session id
	Label string // the session's name from its first node's data
	Note  string // said under a lane without a label
	// Head is what its head says: its label, else its name, cut to the
	// room between two lanes (a cut by rune count let two long names
	// of wide letters run into each other).
	Head string
}

// seqLaneNameEms is the room a lane's head has, in ems of its bold 12px
// text: the gap between two lanes, less a margin.
const seqLaneNameEms = float64(seqLaneGap-12) / 12

// seqRow is one event's arrow.
type seqRow struct {
	Y, X1, X2, TextX int
	Class            string
	Zxid             string // on a transaction's row
	Label, Title     string
	End              bool // the session ends here
	EndX             int
}

// seqBand is the rows of one zxid: a transaction and what it caused.
type seqBand struct{ Y, H int }

func sequenceData(q *uiRequest) (any, error) {
	sv := &sequenceView{Path: q.param("path"), Session: parseSession(q.param("session")), Last: sequenceRows, LaneTop: 48}
	if n, err := strconv.Atoi(q.param("last")); err == nil && n > 0 {
		sv.Last = min(n, sequenceMaxRows)
	}
	h := q.m.history()
	if h == nil {
		return sv, nil
	}
	f := &trace.Filter{PathPrefix: sv.Path, Session: sv.Session,
		Kinds: []trace.Kind{trace.TxnApplied, trace.WatchDelivered, trace.WatchSet, trace.WatchRemoved, trace.SessionClosed}}
	events, _ := h.Since(0, f, sv.Last)
	lanes := map[int64]int{} // session → lane index (1-based; 0 is the state)
	sv.Lanes = []seqLane{{X: seqStateX, Name: "ensemble state", Note: "applies each write"}}
	labels := map[int64]string{}
	for _, e := range events {
		for _, c := range e.Changes {
			if c.Type == "NodeCreated" && c.Owner != 0 && labels[c.Owner] == "" {
				labels[c.Owner] = contenderLabel(c.Data)
			}
		}
	}
	lane := func(id int64) int {
		if id == 0 {
			return 0
		}
		if i, ok := lanes[id]; ok {
			return i
		}
		if len(sv.Lanes) > seqLanes {
			return len(sv.Lanes) - 1 // the shared lane of the rest
		}
		i := len(sv.Lanes)
		lanes[id] = i
		name, label := "0x"+strconv.FormatInt(id, 16), labels[id]
		if i == seqLanes {
			name, label = "other sessions", ""
		}
		sv.Lanes = append(sv.Lanes, seqLane{X: seqFirstLane + (i-1)*seqLaneGap, Name: name, Label: label})
		return i
	}
	y := seqTop
	var zxid int64 = -1
	var starts []int // where each transaction's band begins
	for i := range events {
		e := &events[i]
		if e.Kind == trace.TxnApplied && e.Zxid != zxid {
			zxid = e.Zxid
			starts = append(starts, y-seqRowH/2-3)
		}
		s := lane(e.Session)
		row := seqRow{Y: y}
		from, to := sv.Lanes[s].X, sv.Lanes[0].X
		switch e.Kind {
		case trace.TxnApplied:
			row.Class, row.Zxid = "seq-txn", fmt.Sprintf("%#x", e.Zxid)
			if e.Op == "closeSession" && e.Reason == trace.ReasonExpired {
				from, to, row.Class = to, from, "seq-expire"
			}
			if e.Err != "" {
				row.Class += " seq-failed"
			}
		case trace.WatchDelivered:
			from, to, row.Class = to, from, "seq-watch"
		case trace.WatchSet, trace.WatchRemoved:
			row.Class = "seq-setwatch"
		case trace.SessionClosed:
			from, to, row.Class = to, from, "seq-close"
			row.End, row.EndX = true, sv.Lanes[s].X
		}
		row.X1, row.X2 = from, to-4
		if from > to {
			row.X2 = to + 4
		}
		row.TextX = min(from, to) + 8
		row.Label, row.Title = sequenceLabel(e)
		sv.Rows = append(sv.Rows, row)
		y += seqRowH
	}
	// Every other transaction's band is shaded, so each write and what
	// it caused stand together.
	for i := 0; i < len(starts); i += 2 {
		end := y - seqRowH/2 - 3
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		sv.Bands = append(sv.Bands, seqBand{Y: starts[i], H: end - starts[i]})
	}
	for i := range sv.Lanes {
		l := &sv.Lanes[i]
		l.Head = fitWidth(cmp.Or(l.Label, l.Name), seqLaneNameEms, boldEm)
	}
	sv.Width = sv.Lanes[len(sv.Lanes)-1].X + 200
	sv.Height = y
	return sv, nil
}

// sequenceLabel is what an event's arrow says, short and in full.
func sequenceLabel(e *trace.Event) (label, title string) {
	var b strings.Builder
	switch e.Kind {
	case trace.TxnApplied:
		b.WriteString(e.Op)
		if e.Reason != "" {
			b.WriteString(" (" + e.Reason + ")")
		}
		for _, p := range txnTouched(e) {
			b.WriteString(" " + show(p))
		}
		if e.Err != "" {
			b.WriteString(": " + e.Err)
		}
	case trace.WatchDelivered:
		b.WriteString(e.Type + " " + show(e.Path))
	case trace.WatchSet:
		b.WriteString(e.Watch + " watch on " + show(e.Path))
	case trace.WatchRemoved:
		b.WriteString("watches dropped (" + e.Reason + "):")
		for _, op := range e.Ops {
			b.WriteString(" " + op.Op + " " + show(op.Path))
		}
	case trace.SessionClosed:
		b.WriteString("session 0x" + strconv.FormatInt(e.Session, 16) + " ends")
	}
	title = b.String()
	return clip(title, seqLabelRunes), title
}
