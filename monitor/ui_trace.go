package monitor

import (
	"net/url"
	"strconv"
	"time"
)

// The trace panel: the transactions applied and the watch events
// delivered, as they happen, from GET /trace (the script streams it and
// adds rows; the page itself is not redrawn), filtered by path prefix
// and session.

var _ = addPanel(panel{
	name: "trace", title: "Event trace", order: 60, refresh: time.Second, streams: true,
	data: func(q *uiRequest) (any, error) {
		return traceView{Path: q.param("path"), Session: parseSession(q.param("session"))}, nil
	},
	tmpl: `{{define "trace.controls"}}<form class="controls" method="get" action="/ui/trace">
<label>Path prefix <input name="path" value="{{show .Path}}" size="30"></label>
<label>Session <input name="session" value="{{if .Session}}{{sid .Session}}{{end}}" size="20" placeholder="0x…"></label>
<button>Filter</button> <button type="button" id="trace-pause">Pause</button></form>
<p class="note">The same stream as JSON lines: <a href="{{.StreamURL}}">{{.StreamURL}}</a></p>{{end}}
{{define "trace"}}<p id="trace-status" class="status">connecting…</p>
<table class="list trace" id="trace" data-src="{{.StreamURL}}"><thead><tr><th>#</th><th>time</th><th>event</th><th>op / type</th><th>path</th><th>session</th><th>zxid</th><th>error</th></tr></thead>
<tbody id="trace-rows"></tbody></table>{{end}}`,
})

type traceView struct {
	Path    string
	Session int64
}

// StreamURL is the JSON-lines stream with the panel's filter.
func (t traceView) StreamURL() string {
	v := url.Values{}
	if t.Path != "" {
		v.Set("path", t.Path)
	}
	if t.Session != 0 {
		v.Set("session", "0x"+strconv.FormatInt(t.Session, 16))
	}
	if len(v) == 0 {
		return "/trace"
	}
	return "/trace?" + v.Encode()
}
