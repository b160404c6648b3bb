package monitor

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The locks panel: every lock or election queue (lockQueues) as a
// diagram, holder (or leader) first, each waiter's watch an arrow, with
// the contender's name from its node's data, its session's time left and
// whether a connection carries it; and the same as a table. A queue longer
// than a page is paged on its own (?parent=).

const (
	queuesPerPage     = 20
	contendersPerPage = 50
)

var _ = addPanel(panel{
	name: "locks", title: "Locks & elections", order: 40, refresh: time.Second,
	parts: PartSessions | PartWatches | partEnsemble,
	data:  locksData,
	tmpl: `{{define "locks.controls"}}<form class="controls" method="get" action="/ui/locks">
<label>Parent prefix <input name="prefix" value="{{show .Prefix}}" size="30"></label>
<button>Filter</button>{{if .Parent}} <a href="/ui/locks">all queues</a>{{end}}</form>
{{template "locks.legend"}}{{end}}
{{define "locks.legend"}}<ul class="legend" aria-label="legend">
<li><svg width="34" height="18" role="img" aria-label="holder"><rect class="box holder" x="1" y="1" width="32" height="16" rx="3"></rect></svg> holds the lock (leads, in an election): the lowest sequence number</li>
<li><svg width="34" height="18" role="img" aria-label="waiter"><rect class="box waiter" x="1" y="1" width="32" height="16" rx="3"></rect></svg> waits its turn</li>
<li><svg width="34" height="18" role="img" aria-label="no connection"><rect class="box waiter gone" x="1" y="1" width="32" height="16" rx="3"></rect></svg> no connection carries its session: it expires unless its client returns</li>
<li><svg width="44" height="18" role="img" aria-label="predecessor arrow"><defs>{{template "arrowheads" "legend-a"}}</defs><path class="arrow-predecessor" d="M 42 9 H 4" marker-end="url(#legend-a-predecessor)"></path></svg> watches its predecessor: a release wakes only the next (fair)</li>
<li><svg width="44" height="18" role="img" aria-label="herd arrow"><defs>{{template "arrowheads" "legend-b"}}</defs><path class="arrow-parent" d="M 42 9 H 4" marker-end="url(#legend-b-parent)"></path></svg> herd: watches the parent's children, or the holder: every change wakes it</li>
</ul>{{end}}
{{define "arrowheads"}}<marker id="{{.}}-predecessor" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path class="head-predecessor" d="M 0 0 L 10 5 L 0 10 z"></path></marker>
<marker id="{{.}}-other" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path class="head-other" d="M 0 0 L 10 5 L 0 10 z"></path></marker>
<marker id="{{.}}-parent" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path class="head-parent" d="M 0 0 L 10 5 L 0 10 z"></path></marker>{{end}}
{{define "contender"}}{{$x := .X}}{{$y := .Y}}{{with .Entry}}<a href="{{treeURL .Path}}"><g class="contender" transform="translate({{$x}} {{$y}})" data-session="{{sid .Contender.Session}}" data-wait="{{.WaitClass}}">
<title>{{.Title}}</title>
<rect class="box {{.BoxClass}}" width="216" height="98" rx="5"></rect>
<text class="role" x="10" y="18">#{{.Index}} {{.RoleText}}{{if and .Index (eq .WaitClass "none")}}<tspan class="nowatch"> · {{.WaitText}}</tspan>{{end}}</text>
<text class="label" x="10" y="39">{{if .Label}}{{fitLabel .Label}}{{else}}(its data names no one){{end}}</text>
<text class="name" x="10" y="57">{{fitNodeName (show .Contender.Name)}}</text>
<text class="conn {{.BoxClass}}" x="10" y="74">{{.BoxConn}}</text>
<text class="left" x="10" y="91">{{if .Contender.Expires.IsZero}}session {{sid .Contender.Session}}{{else}}expires in <tspan class="countdown" data-deadline="{{ms .Contender.Expires}}">{{dur .Left}}</tspan>{{end}}</text>
</g></a>{{end}}{{end}}
{{define "locks"}}{{template "silent" .Silent}}{{if not .Rows.Items}}<p class="note">No queue: no parent has ephemeral sequential children.</p>{{end}}
{{with .Rows}}{{if gt .Pages 1}}<p class="pager">Queues {{template "pager" .}}</p>{{end}}{{end}}
{{range .Rows.Items}}{{.}}{{end}}{{end}}
{{define "locks.queue"}}<section class="queue" data-parent="{{show .Parent}}">
<h2><a href="{{treeURL .Parent}}">{{show .Parent}}</a> <span class="count">{{if .Election}}election: {{end}}{{.Total}} in line</span>{{if .Herd}} <span class="herd">herd: {{.Herd}} waiting on more than their predecessor</span>{{end}}</h2>
{{with .Contenders}}{{if gt .Pages 1}}<p class="pager">Contenders {{template "pager" .}}</p>{{end}}{{end}}
{{if .More}}<p class="note">Contenders 1–{{len .Entries}} of {{.Total}}: <a href="{{.All}}">the whole queue, a page at a time</a>.</p>{{end}}
{{$q := .}}{{with .Diagram}}<svg class="queue-diagram" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="the queue {{show $q.Parent}} as a diagram">
<defs>{{template "arrowheads" .ID}}</defs>
{{with .Parent}}<g class="parent-bar"><rect class="box parent" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}" rx="4"></rect><text x="{{add .X 10}}" y="{{add .Y 20}}">{{show $q.Parent}}: its children, watched by the herd</text></g>{{end}}
{{$id := .ID}}{{range .Arrows}}<path class="{{.Class}}" d="{{.D}}" marker-end="url(#{{$id}}-{{.Head}})"><title>{{.Title}}</title></path>
{{end}}{{range .Boxes}}{{template "contender" .}}
{{end}}{{end}}</svg>
<details class="queue-table"><summary>As a table</summary>
<table class="list queue"><tr><th>#</th><th>node</th><th>name</th><th>session</th><th>via</th><th>role</th><th>waits on</th></tr>
{{range .Entries}}<tr class="{{if .Index}}waiter{{else}}holder{{end}}" data-session="{{sid .Contender.Session}}">
<td>{{.Index}}</td><td><a href="{{treeURL .Path}}">{{show .Contender.Name}}</a></td><td>{{.Label}}</td>
<td><a href="{{sessionURL .Contender.Session}}">{{sid .Contender.Session}}</a></td><td>{{.ConnText}}</td>
<td>{{.RoleText}}</td>
<td class="wait-{{.WaitClass}}">{{.WaitText}}{{if .Contender.Watched}} <a href="{{treeURL .Contender.Watched}}">{{show .WatchedName}}</a>{{end}}</td></tr>
{{end}}</table></details></section>
{{end}}`,
})

type locksView struct {
	Prefix string
	Parent string // the one queue shown, paged; "" for all
	Silent []memberAnswer
	// Rows are the queues shown, each drawn by the template locks.queue.
	Rows listPage[template.HTML]
}

type queueView struct {
	Parent     string
	Herd       int
	Total      int
	Election   bool
	Entries    []entryView
	Contenders listPage[entryView] // the page shown, with its pager (Parent set)
	More       bool                // more contenders than one picture shows
	All        string              // the URL of the whole queue, paged
	Diagram    *lockDiagram
}

// entryView is a contender with what the page says of it.
type entryView struct {
	// Contender is the entry as the queue derives it, a named field
	// rather than embedded: html/template looks a promoted field up
	// through reflect's FieldByName, which allocates on every access, and
	// a queue of fifty read a dozen of them per box.
	Contender   queueEntry
	Index       int
	Path        string
	Label       string // its name from its node's data; "" for none
	RoleText    string
	WaitClass   string // predecessor, other, parent, elsewhere, none
	WaitText    string
	WatchedName string // the name of what it watches, within the parent
	ConnText    string // how its session is connected, in words
	BoxConn     string // the same, short, for its box
	BoxClass    string
	Left        time.Duration // before its session expires, at the snapshot
	// Title is its box's tooltip: all of the above in one line, made
	// here rather than by the template, where each value would cost a
	// reflective call of html/template's escaper.
	Title string
}

func locksData(q *uiRequest) (any, error) {
	lv := &locksView{Prefix: q.param("prefix"), Parent: q.param("parent"), Silent: q.v.ens.Silent()}
	var keep []lockQueue
	queues := derive(q.memo, q.memoKey("lock queues"), func() []lockQueue { return lockQueues(q.sessions(), q.watches()) })
	for _, lq := range queues {
		if strings.HasPrefix(lq.Parent, lv.Prefix) && (lv.Parent == "" || lq.Parent == lv.Parent) {
			keep = append(keep, lq)
		}
	}
	var err error
	lv.Rows = mapPage(pageOf(keep, pageNumber(q), queuesPerPage, pageLink(q)), func(lq lockQueue) template.HTML {
		drawn, e := q.drawQueue(lq, lv.Parent != "")
		err = cmp.Or(err, e)
		return drawn
	})
	return lv, err
}

// drawQueue draws one queue (locks.queue), once per shared snapshot (and,
// in a replay, per replayed state) for every viewer: a queue of fifty is
// most of what a page of the locks panel costs, and nothing in it depends
// on who asks. It is html/template's output, escaped as the page would
// have escaped it in place.
func (q *uiRequest) drawQueue(lq lockQueue, paged bool) (template.HTML, error) {
	cpage := ""
	if paged {
		cpage = q.param("cpage")
	}
	n := q.diagrams
	q.diagrams++
	key := q.memoKey(fmt.Sprintf("queue %q drawn as diagram %d, paged %v, page %q", lq.Parent, n, paged, cpage))
	type drawn struct {
		html template.HTML
		err  error
	}
	d := derive(q.memo, key, func() drawn {
		t, err := templates()
		if err != nil {
			return drawn{err: err}
		}
		b := drawBuffers.Get().(*bytes.Buffer)
		defer drawBuffers.Put(b)
		b.Reset()
		if err := t.ExecuteTemplate(b, "locks.queue", q.queueView(lq, paged, n)); err != nil {
			return drawn{err: err}
		}
		return drawn{html: template.HTML(b.String())}
	})
	return d.html, d.err
}

// drawBuffers are buffers to draw in: a queue of fifty is 100 KB of
// markup, which a new buffer would reach by growing (and copying) a dozen
// times; the drawing kept is one exact copy.
var drawBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// queueView shows one queue: with paged, a page of it (?cpage=), else its
// first page with a link to the rest; its diagram is the page's n-th.
func (q *uiRequest) queueView(lq lockQueue, paged bool, n int) queueView {
	qv := queueView{Parent: lq.Parent, Herd: lq.Herd, Total: len(lq.Entries), Election: isElection(lq)}
	views := make([]entryView, len(lq.Entries))
	for i, e := range lq.Entries {
		views[i] = entryView{Contender: e, Index: i, Path: joinPath(lq.Parent, e.Name)}
	}
	cpage := 0
	if paged {
		cpage, _ = strconv.Atoi(q.param("cpage"))
	}
	page := pageOf(views, max(cpage, 0), contendersPerPage, func(n int) string {
		return "/ui/locks?" + url.Values{"parent": {lq.Parent}, "cpage": {strconv.Itoa(n)}}.Encode()
	})
	for i := range page.Items {
		q.describe(&page.Items[i], lq, qv.Election)
	}
	qv.Entries = page.Items
	if paged {
		qv.Contenders = page
	} else if page.Pages > 1 {
		qv.More, qv.All = true, "/ui/locks?"+url.Values{"parent": {lq.Parent}}.Encode()
	}
	qv.Diagram = layoutQueue(qv.Entries, page.FirstRow-1, len(views))
	qv.Diagram.ID = "q" + strconv.Itoa(n)
	return qv
}

// describe fills in what the page says of a contender: its name from its
// node's data, its role, how it waits, its connection.
func (q *uiRequest) describe(ev *entryView, lq lockQueue, election bool) {
	e := ev.Contender
	if data, ok := q.nodeData(ev.Path); ok {
		ev.Label = contenderLabel(data)
	}
	switch {
	case ev.Index == 0 && election:
		ev.RoleText = "leader"
	case ev.Index == 0:
		ev.RoleText = "holds it"
	default:
		ev.RoleText = "waiter " + strconv.Itoa(ev.Index)
	}
	ev.WaitClass, ev.WaitText = describeWait(e, ev.Index == 0)
	if e.Watched != "" {
		ev.WatchedName = e.Watched
		if e.Watched != lq.Parent {
			_, ev.WatchedName = splitPath(e.Watched)
		}
	}
	node := strconv.FormatUint(e.Node, 10)
	switch {
	case e.Wait == waitElsewhere:
		ev.ConnText, ev.BoxConn, ev.BoxClass = "unknown: node "+node+" did not answer", "node "+node+" did not answer", "unknown"
	case e.Attached == 0:
		ev.ConnText, ev.BoxConn, ev.BoxClass = "no connection", "no connection", "gone"
	case !q.v.Mode.Replicated():
		ev.ConnText, ev.BoxConn = "connected", "connected"
	default:
		ev.ConnText = "connected via node " + strconv.FormatUint(e.Attached, 10)
		ev.BoxConn = "connected, via node " + strconv.FormatUint(e.Attached, 10)
	}
	if !e.Expires.IsZero() {
		ev.Left = e.Expires.Sub(q.v.Taken)
	}
	if ev.Index == 0 {
		ev.BoxClass += " holder"
	} else {
		ev.BoxClass += " waiter"
	}
	label := ""
	if ev.Label != "" {
		label = " (" + ev.Label + ")"
	}
	ev.Title = show(e.Name) + label + ": " + ev.RoleText + ", session 0x" + strconv.FormatInt(e.Session, 16) + ", " +
		ev.ConnText + "; waits on " + ev.WaitText + " " + show(ev.WatchedName)
}

// isElection tells an election's queue from a lock's by the names the
// recipes give them (Curator's LeaderLatch "-latch-", a /leader or
// /election parent): its first contender leads rather than holds.
func isElection(lq lockQueue) bool {
	p := strings.ToLower(lq.Parent)
	if strings.Contains(p, "elect") || strings.Contains(p, "leader") || strings.Contains(p, "latch") {
		return true
	}
	return len(lq.Entries) > 0 && strings.Contains(strings.ToLower(lq.Entries[0].Name), "latch")
}

// describeWait says in words how a contender waits.
func describeWait(e queueEntry, holder bool) (class, text string) {
	switch e.Wait {
	case waitPredecessor:
		return "predecessor", "its predecessor"
	case waitOther:
		return "other", "herd: not its predecessor but"
	case waitParent:
		return "parent", "herd: every child of the parent"
	case waitElsewhere:
		return "elsewhere", "unknown: its watches are on node " + strconv.FormatUint(e.Node, 10) + ", which did not answer"
	case waitDisconnected:
		return "none", "nothing: no connection carries its session"
	}
	if holder {
		return "none", "— (holds it)"
	}
	return "none", "no watch yet"
}
