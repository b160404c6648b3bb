package monitor

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// The watches panel: every watch this node holds, by path or by session,
// of each kind: data (getData, or exists on a node that exists: the
// server cannot tell them apart), exist (exists on a node that does not
// exist), child, persistent and persistent-recursive. Watches live on the
// member a client is connected through, as in ZooKeeper.

const watchesPerPage = 100

var _ = addPanel(panel{
	name: "watches", title: "Watches", order: 30, refresh: time.Second,
	parts: PartWatches | partEnsemble,
	data:  watchesData,
	tmpl: `{{define "watches.controls"}}<form class="controls" method="get" action="/ui/watches">
<label>Path prefix <input name="prefix" value="{{show .Prefix}}" size="30"></label>
<label>Session <input name="session" value="{{if .Session}}{{sid .Session}}{{end}}" size="20" placeholder="0x…"></label>
<label>By <select name="by"><option value="path"{{if not .BySession}} selected{{end}}>path</option><option value="session"{{if .BySession}} selected{{end}}>session</option></select></label>
<button>Filter</button></form>{{end}}
{{define "watches"}}{{template "silent" .Silent}}{{with .Rows}}<p class="pager">Watches {{template "pager" .}}</p>{{end}}
<table class="list watches">{{if .BySession}}<tr><th>session</th><th>path</th><th>held by</th><th>kind</th></tr>
{{range .Rows.Items}}<tr><td>{{if .Session}}<a href="{{sessionURL .Session}}">{{sid .Session}}</a>{{else}}(closed){{end}}</td><td><a href="{{treeURL .Path}}">{{show .Path}}</a></td><td>{{if .Member}}node {{.Member}}{{else}}—{{end}}</td><td class="wk-{{.Kind}}">{{.Kind}}</td></tr>
{{end}}{{else}}<tr><th>path</th><th>session</th><th>held by</th><th>kind</th></tr>
{{range .Rows.Items}}<tr><td><a href="{{treeURL .Path}}">{{show .Path}}</a></td><td>{{if .Session}}<a href="{{sessionURL .Session}}">{{sid .Session}}</a>{{else}}(closed){{end}}</td><td>{{if .Member}}node {{.Member}}{{else}}—{{end}}</td><td class="wk-{{.Kind}}">{{.Kind}}</td></tr>
{{end}}{{end}}</table>{{end}}`,
})

// watchRow is one watch as the view shows it: the data and child entries
// of one persistent watch are one row.
type watchRow struct {
	Path    string
	Session int64 // 0 once its connection closed
	Watcher int64
	Member  uint64 // the member whose client holds it; 0 unknown
	Kind    string // data, exist, child, persistent, persistentRecursive
}

type watchesView struct {
	Silent    []memberAnswer
	Prefix    string
	Session   int64
	BySession bool
	Rows      listPage[watchRow]
}

func watchesData(q *uiRequest) (any, error) {
	wv := &watchesView{Prefix: q.param("prefix"), Session: parseSession(q.param("session")), BySession: q.param("by") == "session"}
	all := derive(q.memo, q.memoKey("watch rows"), func() []watchRow { return mergeWatches(q.watches()) })
	var rows []watchRow
	for _, w := range all {
		if strings.HasPrefix(w.Path, wv.Prefix) && (wv.Session == 0 || w.Session == wv.Session) {
			rows = append(rows, w)
		}
	}
	if wv.BySession {
		slices.SortFunc(rows, func(a, b watchRow) int {
			return cmp.Or(cmp.Compare(a.Session, b.Session), strings.Compare(a.Path, b.Path), strings.Compare(a.Kind, b.Kind))
		})
	}
	wv.Rows = pageOf(rows, pageNumber(q), watchesPerPage, pageLink(q))
	if q.replay != nil {
		st := q.state(replayRoot(wv.Prefix))
		for i := range wv.Rows.Items {
			if r := &wv.Rows.Items[i]; r.Kind == "data" && st.tracked(r.Path) && st.nodes[r.Path] == nil {
				r.Kind = "exist"
			}
		}
	} else {
		nameExists(q.src, wv.Rows.Items) // rows is this request's own copy
	}
	wv.Silent = q.v.ens.Silent()
	return wv, nil
}

// watchRows lists watches as rows by path, telling exist from data.
func watchRows(src Source, ws []Watch) []watchRow {
	rows := mergeWatches(ws)
	nameExists(src, rows)
	return rows
}

// mergeWatches turns table entries into rows, by path then session: a
// persistent watch's two entries are one row; one-shot ones are data or
// child.
func mergeWatches(ws []Watch) []watchRow {
	type key struct {
		path    string
		watcher int64
	}
	type entries struct {
		session     int64
		member      uint64
		data, child string // modes; "" for none
	}
	by := map[key]*entries{}
	for _, w := range ws {
		k := key{w.Path, w.Watcher}
		e := by[k]
		if e == nil {
			e = &entries{session: w.Session, member: w.Member}
			by[k] = e
		}
		if w.Child {
			e.child = w.Mode
		} else {
			e.data = w.Mode
		}
	}
	rows := make([]watchRow, 0, len(by))
	for k, e := range by {
		row := watchRow{Path: k.path, Session: e.session, Watcher: k.watcher, Member: e.member}
		if e.data == e.child && e.data != "standard" {
			row.Kind = e.data
			rows = append(rows, row)
			continue
		}
		for _, half := range []struct{ mode, oneShot string }{{e.data, "data"}, {e.child, "child"}} {
			switch half.mode {
			case "":
			case "standard":
				row.Kind = half.oneShot
				rows = append(rows, row)
			default: // one half of a persistent watch whose other half a one-shot replaced
				row.Kind = half.mode
				rows = append(rows, row)
			}
		}
	}
	slices.SortFunc(rows, func(a, b watchRow) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.Session, b.Session), strings.Compare(a.Kind, b.Kind))
	})
	return rows
}

// nameExists calls a data watch on a node that does not exist an exist
// watch: only exists sets one there. It reads the tree once per row, so
// it is given a page, not the whole list.
func nameExists(src Source, rows []watchRow) {
	for i := range rows {
		if rows[i].Kind == "data" {
			if _, err := src.Node(rows[i].Path); err != nil {
				rows[i].Kind = "exist"
			}
		}
	}
}
