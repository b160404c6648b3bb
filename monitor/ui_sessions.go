package monitor

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hutchzk/hutch/trace"
)

// The sessions panel: every session, a page at a time, with the member
// it is connected through, its timeout, when it was last heard from and
// the time left before it expires (counted down live), its ephemerals,
// watches and identities; one session in detail; and the sessions that
// ended lately (when, why, the ephemerals they deleted, the watches their
// connection dropped), kept for a while by the trace's history.

const (
	sessionsPerPage = 100
	endedShown      = 50
)

var _ = addPanel(panel{
	name: "sessions", title: "Sessions", order: 20, refresh: time.Second,
	parts: PartSessions | PartWatches | partEnsemble,
	data:  sessionsData,
	tmpl: `{{define "sessions.controls"}}<form class="controls" method="get" action="/ui/sessions">
<label>Session <input name="session" value="{{if .Detail}}{{sid .Detail.ID}}{{end}}" size="20" placeholder="0x…"></label>
<button>Show</button>{{if .Detail}} <a href="/ui/sessions">all sessions</a>{{end}}</form>{{end}}
{{define "sessions"}}{{template "silent" .Silent}}{{if .Replayed}}<p class="note">Replayed: the sessions open at that point, with their ephemerals and watches. When each was last heard from and its time left are not kept.</p>
{{else if .Timers}}<p class="note">This node runs the session timers: expiry counts down here.</p>
{{else if .Merged}}<p class="note">The leader (node {{.Leader}}) runs the session timers: time left is its, and each session's client, watches and identities come from the member it is connected through.</p>
{{else}}<p class="note">This node is a follower: the leader{{if .Leader}} (node {{.Leader}}){{end}} runs the session timers, so time left is known there; last heard is this node's own last answer to a session connected here.</p>{{end}}
{{with .Detail}}<section class="detail">
<h2>Session {{sid .ID}}</h2>{{if .Gone}}{{with .Ended}}{{template "session.ended" .}}{{else}}<p class="warn">No open session {{sid .ID}}: it expired or was closed, longer ago than the view remembers.</p>{{end}}{{else}}
<table class="kv">
<tr><th>client</th><td>{{if .Remote}}{{.Remote}}{{else}}—{{end}}</td></tr>
<tr><th>connected via</th><td>{{.Via}}</td></tr>
<tr><th>timeout</th><td>{{.Timeout}}</td></tr>
<tr><th>last heard</th><td>{{template "session.heard" .}}</td></tr>
<tr><th>expires in</th><td>{{template "session.left" .}}</td></tr>
<tr><th>auth</th><td>{{with .Auth}}{{.}}{{else}}—{{end}}</td></tr>
</table>
<h3>Ephemerals ({{len .Ephemerals}})</h3>
<ul>{{range .Ephemerals}}<li><a href="{{treeURL .}}">{{show .}}</a></li>{{end}}</ul>
<h3>Watches{{if .WatchesKnown}} ({{len .WatchList}}){{end}}</h3>
{{if .WatchesKnown}}<table class="list"><tr><th>path</th><th>kind</th></tr>
{{range .WatchList}}<tr><td><a href="{{treeURL .Path}}">{{show .Path}}</a></td><td>{{.Kind}}</td></tr>{{end}}</table>
{{else}}<p class="note">Its watches live on the member it is connected through, which did not answer.</p>{{end}}{{end}}
</section>{{else}}{{with .Rows}}
<p class="pager">Sessions {{template "pager" .}}</p>
<table class="list sessions"><tr><th>session</th><th>client</th><th>via</th><th>timeout</th><th>last heard</th><th>expires in</th><th>ephemerals</th><th>watches</th><th>auth</th></tr>
{{range .Items}}<tr data-session="{{.IDText}}"><td><a href="{{.URL}}">{{.IDText}}</a></td>
<td>{{if .Remote}}{{.Remote}}{{else}}—{{end}}</td><td>{{.Via}}</td><td>{{.Timeout}}</td>
<td>{{if .HeardMs}}<span data-since="{{.HeardMs}}">{{.Since}}</span> ago{{else}}—{{end}}</td><td>{{if .LeftMs}}<span class="countdown" data-deadline="{{.LeftMs}}">{{.Left}}</span>{{else}}—{{end}}</td>
<td>{{len .Ephemerals}}</td><td>{{.Watches}}</td><td>{{.Auth}}</td></tr>
{{end}}</table>{{end}}
{{if .Ended}}<h2>Ended lately</h2>
<table class="list ended"><tr><th>session</th><th>ended</th><th>why</th><th>via</th><th>timeout</th><th>ephemerals it deleted</th><th>watches dropped</th></tr>
{{range .Ended}}<tr data-session="{{sid .Closed.Session}}"><td><a href="{{sessionURL .Closed.Session}}">{{sid .Closed.Session}}</a></td>
<td>{{clock .Closed.Time}} <span class="note">(<span data-since="{{ms .Closed.Time}}">{{dur ($.Since .Closed.Time)}}</span> ago)</span></td>
<td class="why-{{.Closed.Reason}}">{{.Why}}</td><td>{{if .Closed.Member}}node {{.Closed.Member}}{{else}}—{{end}}</td><td>{{if .Closed.Timeout}}{{dur (ms2dur .Closed.Timeout)}}{{else}}—{{end}}</td>
<td>{{range .Deleted}}<a href="{{treeURL .}}">{{show .}}</a> {{else}}none{{end}}</td>
<td>{{range .Dropped}}{{.Op}} <a href="{{treeURL .Path}}">{{show .Path}}</a> {{else}}none{{end}}</td></tr>
{{end}}</table>{{end}}{{end}}{{end}}
{{define "session.ended"}}<p class="warn">Ended {{clock .Closed.Time}}: {{.Why}}.</p>
<table class="kv"><tr><th>zxid</th><td>{{zxid .Closed.Zxid}}</td></tr>
<tr><th>connected via</th><td>{{if .Closed.Member}}node {{.Closed.Member}}{{else}}—{{end}}</td></tr>
<tr><th>timeout</th><td>{{if .Closed.Timeout}}{{dur (ms2dur .Closed.Timeout)}}{{else}}—{{end}}</td></tr>
<tr><th>ephemerals it deleted</th><td>{{range .Deleted}}{{show .}}<br>{{else}}none{{end}}</td></tr>
<tr><th>watches dropped</th><td>{{range .Dropped}}{{.Op}} {{show .Path}}<br>{{else}}none{{end}}</td></tr></table>{{end}}
{{define "session.heard"}}{{if .HeardMs}}<span data-since="{{.HeardMs}}">{{.Since}}</span> ago{{else}}—{{end}}{{end}}
{{define "session.left"}}{{if .LeftMs}}<span class="countdown" data-deadline="{{.LeftMs}}">{{.Left}}</span>{{else}}{{.NoLeft}}{{end}}{{end}}`,
})

// sessionRow is a session as the panel shows it, in what the template
// prints: made here rather than by the template, where every lookup of a
// field promoted from an embedded struct, every function and every
// sub-template costs a reflective call (and an allocation), a hundred
// rows a page.
type sessionRow struct {
	ID         int64
	IDText     string // 0x…
	URL        string // its detail
	Remote     string
	Via        string // the member it is connected through, in words
	Timeout    string
	HeardMs    int64  // when last heard from (ms since the epoch), 0 unknown
	Since      string // since then, at the snapshot
	LeftMs     int64  // when it expires (ms since the epoch), 0 unknown
	Left       string // the time left, at the snapshot
	NoLeft     string // what expires-in says when unknown
	Ephemerals []string
	Watches    string // how many it holds; "—" where unknown
	Auth       string // its identities, each followed by a space
	// Detail only:
	WatchList    []watchRow // its watches
	WatchesKnown bool
	Gone         bool      // no such session is open
	Ended        *endedRow // what the history says of its end
}

// newSessionRow makes a session's row, as of the snapshot taken at taken;
// self is this node (0 for a single node), replayed is set in a replay.
func newSessionRow(s Session, self uint64, taken time.Time, replayed bool) sessionRow {
	r := sessionRow{ID: s.ID, IDText: "0x" + strconv.FormatInt(s.ID, 16), URL: sessionURL(s.ID), Remote: s.Remote,
		Timeout: humanDuration(s.Timeout), Ephemerals: s.Ephemerals, WatchesKnown: !s.Unknown, Watches: "—", NoLeft: "—"}
	switch {
	case s.Node != 0 && s.Node == self:
		r.Via = "node " + strconv.FormatUint(s.Node, 10) + " (this node)"
	case s.Node != 0:
		r.Via = "node " + strconv.FormatUint(s.Node, 10)
	case s.Remote != "":
		r.Via = "this node"
	default:
		r.Via = "—"
	}
	if !s.LastHeard.IsZero() {
		r.HeardMs, r.Since = s.LastHeard.UnixMilli(), humanDuration(taken.Sub(s.LastHeard))
	}
	if !s.Expires.IsZero() {
		r.LeftMs, r.Left = s.Expires.UnixMilli(), humanDuration(s.Expires.Sub(taken))
	} else if !replayed && self != 0 {
		r.NoLeft = "on the leader"
	}
	if s.Attached != 0 {
		r.Watches = strconv.Itoa(s.WatchCount)
	}
	var auth strings.Builder
	for _, a := range s.Auth {
		auth.WriteString(show(a))
		auth.WriteByte(' ')
	}
	r.Auth = auth.String()
	return r
}

// endedRow is a session that ended, as the panel shows it: the
// history's EndedSession's fields, not embedded (for the template's
// lookups, as sessionRow's).
type endedRow struct {
	Closed  trace.Event
	Dropped []trace.Op
	Deleted []string
}

// Why says why it ended.
func (e endedRow) Why() string {
	switch e.Closed.Reason {
	case trace.ReasonExpired:
		return "expired: its timeout passed without a word from its client (or its expiry was asked for)"
	case trace.ReasonClosed:
		return "closed by its client"
	}
	return "ended"
}

type sessionsView struct {
	Timers   bool   // this node runs the session timers
	Merged   bool   // a view of the whole ensemble
	Leader   uint64 // the leader's id, for a follower
	Replayed bool
	Silent   []memberAnswer
	Rows     listPage[sessionRow]
	Detail   *sessionRow
	Ended    []endedRow
	taken    time.Time
}

// Since is how long ago t was, at the snapshot.
func (sv *sessionsView) Since(t time.Time) time.Duration { return sv.taken.Sub(t) }

func sessionsData(q *uiRequest) (any, error) {
	v := q.v
	sv := &sessionsView{Timers: v.Mode.RunsSessionTimers(), Merged: v.ens != nil, Leader: v.Replication.LeaderID,
		Replayed: q.replay != nil, Silent: v.ens.Silent(), taken: v.Taken}
	if sv.Replayed {
		sv.Timers = false
	}
	row := func(s Session) sessionRow { return newSessionRow(s, q.self, v.Taken, sv.Replayed) }
	if !sv.Replayed {
		sv.Ended = q.endedRows()
	}
	if id := parseSession(q.param("session")); id != 0 {
		if s, ok := q.session(id); ok {
			d := row(s)
			d.WatchList = watchRows(q.src, slices.DeleteFunc(slices.Clone(q.watches()), func(w Watch) bool { return w.Session != id }))
			sv.Detail = &d
		}
		if sv.Detail == nil {
			sv.Detail = &sessionRow{ID: id, Gone: true}
			for i := range sv.Ended {
				if sv.Ended[i].Closed.Session == id {
					sv.Detail.Ended = &sv.Ended[i]
				}
			}
		}
		sv.Ended = nil
		return sv, nil
	}
	if sv.Replayed {
		st := q.state("")
		sv.Rows = mapPage(pageOf(st.IDs(), pageNumber(q), sessionsPerPage, pageLink(q)), func(id int64) sessionRow {
			s, _ := st.get(id)
			return row(s)
		})
		return sv, nil
	}
	sv.Rows = mapPage(pageOf(q.sessionsByID().at, pageNumber(q), sessionsPerPage, pageLink(q)), func(i int32) sessionRow {
		return row(q.v.Sessions[i])
	})
	if len(sv.Ended) > endedShown {
		sv.Ended = sv.Ended[:endedShown]
	}
	return sv, nil
}

// endedRows are the sessions that ended lately, newest first: this
// member's and, in a view of the whole ensemble, the others' (each knows
// the watches its own connections dropped).
func (q *uiRequest) endedRows() []endedRow {
	return derive(q.memo, "ended sessions", func() []endedRow {
		var local []trace.EndedSession
		if h := q.m.history(); h != nil {
			local = h.Ended()
		}
		var reports []*memberReport
		if q.v.ens != nil {
			reports = q.v.ens.Reports()[1:]
		}
		var out []endedRow
		for _, e := range endedSessions(reports, local) {
			r := endedRow{Closed: e.Closed, Dropped: e.Dropped}
			for _, c := range e.Closed.Changes {
				if c.Type == "NodeDeleted" {
					r.Deleted = append(r.Deleted, c.Path)
				}
			}
			out = append(out, r)
		}
		return out
	})
}

// sessionsByID is the order of the shared snapshot's sessions by id, as
// their positions in it: a sorted index rather than a sorted copy of ten
// thousand sessions.
type sessionsByID struct {
	ids []int64 // in order
	at  []int32 // at[k] is the position of session ids[k] in the snapshot
}

// sessionsByID sorts the shared snapshot's sessions by id, once per
// snapshot for every viewer, live or replaying.
func (q *uiRequest) sessionsByID() *sessionsByID {
	return derive(q.memo, "sessions by id", func() *sessionsByID {
		type entry struct {
			id int64
			at int32
		}
		order := make([]entry, len(q.v.Sessions))
		for i := range q.v.Sessions {
			order[i] = entry{q.v.Sessions[i].ID, int32(i)}
		}
		slices.SortFunc(order, func(a, b entry) int { return cmp.Compare(a.id, b.id) })
		b := &sessionsByID{ids: make([]int64, len(order)), at: make([]int32, len(order))}
		for k, e := range order {
			b.ids[k], b.at[k] = e.id, e.at
		}
		return b
	})
}

// find is the position of session id in the snapshot; false if it is not
// there.
func (b *sessionsByID) find(id int64) (int32, bool) {
	k, ok := slices.BinarySearch(b.ids, id)
	if !ok {
		return 0, false
	}
	return b.at[k], true
}
