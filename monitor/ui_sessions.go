package monitor

import (
	"cmp"
	"slices"
	"time"
)

// The sessions panel: every session, a page at a time, with the member
// it is connected through, its timeout, when it was last heard from and
// the time left before it expires (counted down live), its ephemerals,
// watches and identities; and one session in detail.

const sessionsPerPage = 100

var _ = addPanel(panel{
	name: "sessions", title: "Sessions", order: 20, refresh: time.Second,
	parts: PartSessions | PartWatches | partEnsemble,
	data:  sessionsData,
	tmpl: `{{define "sessions.controls"}}<form class="controls" method="get" action="/ui/sessions">
<label>Session <input name="session" value="{{if .Detail}}{{sid .Detail.ID}}{{end}}" size="20" placeholder="0x…"></label>
<button>Show</button>{{if .Detail}} <a href="/ui/sessions">all sessions</a>{{end}}</form>{{end}}
{{define "sessions"}}{{if .Timers}}<p class="note">This node runs the session timers: expiry counts down here.</p>
{{else}}<p class="note">This node is a follower: the leader{{if .Leader}} (node {{.Leader}}){{end}} runs the session timers, so time left is known there; last heard is this node's own last answer to a session connected here.</p>{{end}}
{{with .Detail}}<section class="detail">
<h2>Session {{sid .ID}}</h2>{{if .Gone}}<p class="warn">No open session {{sid .ID}}: it expired or was closed.</p>{{else}}
<table class="kv">
<tr><th>client</th><td>{{if .Remote}}{{.Remote}}{{else}}—{{end}}</td></tr>
<tr><th>connected via</th><td>{{template "session.node" .}}</td></tr>
<tr><th>timeout</th><td>{{dur .Timeout}}</td></tr>
<tr><th>last heard</th><td>{{template "session.heard" .}}</td></tr>
<tr><th>expires in</th><td>{{template "session.left" .}}</td></tr>
<tr><th>auth</th><td>{{range .Auth}}{{show .}} {{else}}—{{end}}</td></tr>
</table>
<h3>Ephemerals ({{len .Ephemerals}})</h3>
<ul>{{range .Ephemerals}}<li><a href="{{treeURL .}}">{{show .}}</a></li>{{end}}</ul>
<h3>Watches{{if .Remote}} ({{len .WatchList}}){{end}}</h3>
{{if .Remote}}<table class="list"><tr><th>path</th><th>kind</th></tr>
{{range .WatchList}}<tr><td><a href="{{treeURL .Path}}">{{show .Path}}</a></td><td>{{.Kind}}</td></tr>{{end}}</table>
{{else}}<p class="note">Its watches live on the member it is connected through.</p>{{end}}{{end}}
</section>{{else}}{{with .Rows}}
<p class="pager">Sessions {{template "pager" .}}</p>
<table class="list sessions"><tr><th>session</th><th>client</th><th>via</th><th>timeout</th><th>last heard</th><th>expires in</th><th>ephemerals</th><th>watches</th><th>auth</th></tr>
{{range .Items}}<tr data-session="{{sid .ID}}"><td><a href="{{sessionURL .ID}}">{{sid .ID}}</a></td>
<td>{{if .Remote}}{{.Remote}}{{else}}—{{end}}</td><td>{{template "session.node" .}}</td><td>{{dur .Timeout}}</td>
<td>{{template "session.heard" .}}</td><td>{{template "session.left" .}}</td>
<td>{{len .Ephemerals}}</td><td>{{if .Remote}}{{.WatchCount}}{{else}}—{{end}}</td><td>{{range .Auth}}{{show .}} {{end}}</td></tr>
{{end}}</table>{{end}}{{end}}{{end}}
{{define "session.node"}}{{if .Node}}node {{.Node}}{{if eq .Node .Self}} (this node){{end}}{{else if .Remote}}this node{{else}}—{{end}}{{end}}
{{define "session.heard"}}{{if .LastHeard.IsZero}}—{{else}}<span data-since="{{ms .LastHeard}}">{{dur .Since}}</span> ago{{end}}{{end}}
{{define "session.left"}}{{if .Expires.IsZero}}{{if .Self}}on the leader{{else}}—{{end}}{{else}}<span class="countdown" data-deadline="{{ms .Expires}}">{{dur .Left}}</span>{{end}}{{end}}`,
})

// sessionRow is a session as the panel shows it.
type sessionRow struct {
	Session
	Self      uint64        // this node, to mark the sessions connected here
	Since     time.Duration // since last heard, at the snapshot
	Left      time.Duration // before expiry, at the snapshot
	WatchList []watchRow    // its watches here (detail only)
	Gone      bool          // no such session is open (detail only)
}

type sessionsView struct {
	Timers bool   // this node runs the session timers
	Leader uint64 // the leader's id, for a follower
	Rows   listPage[sessionRow]
	Detail *sessionRow
}

func sessionsData(q *uiRequest) (any, error) {
	v := q.v
	sv := &sessionsView{Timers: v.Mode.RunsSessionTimers(), Leader: v.Replication.LeaderID}
	row := func(s Session) sessionRow {
		r := sessionRow{Session: s, Self: q.self}
		if !s.LastHeard.IsZero() {
			r.Since = v.Taken.Sub(s.LastHeard)
		}
		if !s.Expires.IsZero() {
			r.Left = s.Expires.Sub(v.Taken)
		}
		return r
	}
	if id := parseSession(q.param("session")); id != 0 {
		for _, s := range v.Sessions {
			if s.ID == id {
				d := row(s)
				d.WatchList = watchRows(q.src, slices.DeleteFunc(slices.Clone(v.Watches), func(w Watch) bool { return w.Session != id }))
				sv.Detail = &d
			}
		}
		if sv.Detail == nil {
			sv.Detail = &sessionRow{Session: Session{ID: id}, Self: q.self, Gone: true}
		}
		return sv, nil
	}
	sorted := derive(q.memo, "sessions by id", func() []Session {
		out := slices.Clone(v.Sessions)
		slices.SortFunc(out, func(a, b Session) int { return cmp.Compare(a.ID, b.ID) })
		return out
	})
	sv.Rows = mapPage(pageOf(sorted, pageNumber(q), sessionsPerPage, pageLink(q)), row)
	return sv, nil
}
