package monitor

import (
	"net/url"
	"strconv"
	"time"
)

// The trace panel: the transactions applied, the watches set, delivered
// and dropped, and the sessions closed, from GET /trace: the script opens
// the stream on the server's history (the newest traceRows events of the
// window) and adds rows as events come; the body is not redrawn, the
// header is. Filtered by path prefix and session. Each transaction's row
// links to the replay of the view just after it.

// traceRows is how many rows of history the panel opens on, and keeps.
const traceRows = 2000

var _ = addPanel(panel{
	name: "trace", title: "Event trace", order: 60, refresh: time.Second, streams: true,
	data: func(q *uiRequest) (any, error) {
		return traceView{Path: q.param("path"), Session: parseSession(q.param("session"))}, nil
	},
	tmpl: `{{define "trace.controls"}}<form class="controls" method="get" action="/ui/trace">
<label>Path prefix <input name="path" value="{{show .Path}}" size="30"></label>
<label>Session <input name="session" value="{{if .Session}}{{sid .Session}}{{end}}" size="20" placeholder="0x…"></label>
<button>Filter</button> <button type="button" id="trace-pause">Pause</button>
<a href="{{.SequenceURL}}">as a sequence diagram</a></form>
<p class="note">The same stream as JSON lines: <a href="{{.StreamURL}}">{{.StreamURL}}</a>. A transaction's <b>replay</b> link shows the tree, sessions, watches and queues as they were just after it. A session's close lists the ephemerals it deleted, and shows under any path filter that matches one of them.</p>{{end}}
{{define "trace"}}<p id="trace-status" class="status">connecting…</p>
<table class="list trace" id="trace" data-src="{{.StreamURL}}" data-rows="{{.Rows}}" data-path="{{show .Path}}"><thead><tr><th>#</th><th>time</th><th>event</th><th>op / type</th><th>path</th><th>session</th><th>zxid</th><th>error</th><th></th></tr></thead>
<tbody id="trace-rows"></tbody></table>{{end}}`,
})

type traceView struct {
	Path    string
	Session int64
}

// Rows is how many rows the panel keeps.
func (t traceView) Rows() int { return traceRows }

// StreamURL is the JSON-lines stream with the panel's filter, opening on
// the history's newest rows.
func (t traceView) StreamURL() string {
	v := t.filter()
	v.Set("since", "all")
	v.Set("last", strconv.Itoa(traceRows))
	return "/trace?" + v.Encode()
}

// SequenceURL is the same filter's sequence diagram.
func (t traceView) SequenceURL() string { return t.filterURL("/ui/sequence") }

// filterURL is page with the panel's filter.
func (t traceView) filterURL(page string) string {
	v := t.filter()
	if len(v) == 0 {
		return page
	}
	return page + "?" + v.Encode()
}

func (t traceView) filter() url.Values {
	v := url.Values{}
	if t.Path != "" {
		v.Set("path", t.Path)
	}
	if t.Session != 0 {
		v.Set("session", "0x"+strconv.FormatInt(t.Session, 16))
	}
	return v
}
