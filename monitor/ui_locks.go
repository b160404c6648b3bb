package monitor

import (
	"strconv"
	"strings"
	"time"
)

// The locks panel: every lock or election queue (lockQueues), holder
// first, each waiter with its session, the member it is connected
// through and what it watches, so the predecessor chain, or a herd on
// the parent, shows.

const queuesPerPage = 20

var _ = addPanel(panel{
	name: "locks", title: "Locks & elections", order: 40, refresh: time.Second,
	parts: PartSessions | PartWatches,
	data:  locksData,
	tmpl: `{{define "locks.controls"}}<form class="controls" method="get" action="/ui/locks">
<label>Parent prefix <input name="prefix" value="{{show .Prefix}}" size="30"></label>
<button>Filter</button></form>{{end}}
{{define "locks"}}{{if not .Rows.Items}}<p class="note">No queue: no parent has ephemeral sequential children.</p>{{end}}
{{with .Rows}}{{if gt .Pages 1}}<p class="pager">Queues {{template "pager" .}}</p>{{end}}{{end}}
{{range .Rows.Items}}<section class="queue" data-parent="{{show .Parent}}">
<h2><a href="{{treeURL .Parent}}">{{show .Parent}}</a> <span class="count">{{len .Entries}} in line</span>{{if .Herd}} <span class="herd">herd: {{.Herd}} waiting on more than their predecessor</span>{{end}}</h2>
<table class="list queue"><tr><th>#</th><th>node</th><th>session</th><th>via</th><th>role</th><th>waits on</th></tr>
{{range $i, $e := .Entries}}<tr class="{{if eq $i 0}}holder{{else}}waiter{{end}}" data-session="{{sid .Session}}">
<td>{{$i}}</td><td><a href="{{treeURL .Path}}">{{show .Name}}</a></td>
<td><a href="{{sessionURL .Session}}">{{sid .Session}}</a></td><td>{{if .Node}}node {{.Node}}{{else}}—{{end}}</td>
<td>{{if eq $i 0}}holder{{else}}waiter {{$i}}{{end}}</td>
<td class="wait-{{.WaitClass}}">{{.WaitText}}{{if .Watched}} <a href="{{treeURL .Watched}}">{{show .WatchedName}}</a>{{end}}</td></tr>
{{end}}</table></section>
{{end}}{{end}}`,
})

type locksView struct {
	Prefix string
	Rows   listPage[queueView]
}

type queueView struct {
	Parent  string
	Herd    int
	Entries []entryView
}

// entryView is a contender with what the page says of how it waits.
type entryView struct {
	queueEntry
	Path        string
	WaitClass   string // predecessor, other, parent, elsewhere, none
	WaitText    string
	WatchedName string // the name of what it watches, within the parent
}

func locksData(q *uiRequest) (any, error) {
	lv := &locksView{Prefix: q.param("prefix")}
	var keep []lockQueue
	queues := derive(q.memo, "lock queues", func() []lockQueue { return lockQueues(q.self, q.v.Sessions, q.v.Watches) })
	for _, lq := range queues {
		if strings.HasPrefix(lq.Parent, lv.Prefix) {
			keep = append(keep, lq)
		}
	}
	lv.Rows = mapPage(pageOf(keep, pageNumber(q), queuesPerPage, pageLink(q)), func(lq lockQueue) queueView {
		qv := queueView{Parent: lq.Parent, Herd: lq.Herd}
		for i, e := range lq.Entries {
			ev := entryView{queueEntry: e, Path: joinPath(lq.Parent, e.Name)}
			ev.WaitClass, ev.WaitText = describeWait(e, i == 0)
			if e.Watched != "" {
				ev.WatchedName = e.Watched
				if e.Watched != lq.Parent {
					_, ev.WatchedName = splitPath(e.Watched)
				}
			}
			qv.Entries = append(qv.Entries, ev)
		}
		return qv
	})
	return lv, nil
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
		return "elsewhere", "unknown here: its watches are on node " + strconv.FormatUint(e.Node, 10)
	case waitDisconnected:
		return "none", "nothing: no connection carries its session"
	}
	if holder {
		return "none", "— (holds it)"
	}
	return "none", "no watch yet"
}
