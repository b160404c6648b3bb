package monitor

import (
	"strconv"
	"time"
)

// The ensemble panel: this node's place in the ensemble (role, term, its
// log's commit and applied indexes and the lag between them, the
// leader's last contact, the writes it forwarded) and the members.
// hashicorp/raft tells each node only its own indexes: another member's
// are on its own view.

var _ = addPanel(panel{
	name: "ensemble", title: "Ensemble", order: 50, refresh: time.Second,
	parts: PartReplication | PartStats,
	data:  ensembleData,
	tmpl: `{{define "ensemble"}}{{if .Single}}<p class="note">A single node: no ensemble.</p>
<table class="kv"><tr><th>last zxid</th><td>{{zxid .V.Stats.LastZxid}}</td></tr><tr><th>transactions applied</th><td>{{.V.Stats.Txns}}</td></tr></table>
{{else}}{{with .V.Replication}}<table class="kv self">
<tr><th>node</th><td>{{.NodeID}}</td></tr>
<tr><th>role</th><td class="mode-{{$.V.Mode}}">{{$.V.Mode}}</td></tr>
<tr><th>leader</th><td>{{if .LeaderID}}node {{.LeaderID}} ({{.LeaderAddr}}){{else}}none known{{end}}</td></tr>
<tr><th>term</th><td>{{.Term}}</td></tr>
<tr><th>commit index</th><td>{{$.Commit}}</td></tr>
<tr><th>applied index</th><td>{{$.Applied}}</td></tr>
<tr><th>lag</th><td>{{$.Lag}} committed, not yet applied here</td></tr>
<tr><th>last log index</th><td>{{$.Last}}</td></tr>
<tr><th>last contact</th><td>{{if .LastContact.IsZero}}— (leads){{else}}<span data-since="{{ms .LastContact}}">{{dur $.Contact}}</span> ago{{end}}</td></tr>
<tr><th>forwarded writes</th><td>{{$.V.Stats.Forwarded}}</td></tr>
<tr><th>last zxid</th><td>{{zxid $.V.Stats.LastZxid}}</td></tr>
</table>
<h2>Members</h2>
<table class="list members"><tr><th>id</th><th>raft address</th><th>voter</th><th>role</th></tr>
{{range .Members}}<tr{{if eq .ID $.V.Replication.NodeID}} class="self"{{end}}><td>{{.ID}}{{if eq .ID $.V.Replication.NodeID}} (this node){{end}}</td><td>{{.Addr}}</td><td>{{if .Voter}}yes{{else}}no{{end}}</td>
<td>{{if eq .ID $.V.Replication.LeaderID}}leader{{else if .Voter}}follower{{else}}non-voter{{end}}</td></tr>
{{end}}</table>
<p class="note">Each member knows only its own log indexes: open another member's view for its own.</p>{{end}}{{end}}{{end}}`,
})

type ensembleView struct {
	V                          *view
	Single                     bool
	Commit, Applied, Last, Lag uint64
	Contact                    time.Duration
}

func ensembleData(q *uiRequest) (any, error) {
	v := q.v
	ev := &ensembleView{V: v, Single: !v.Mode.Replicated()}
	number := func(key string) uint64 {
		n, _ := strconv.ParseUint(v.Replication.Raft[key], 10, 64)
		return n
	}
	ev.Commit, ev.Applied, ev.Last = number("commit_index"), number("fsm_applied_index"), number("last_log_index")
	if ev.Commit > ev.Applied {
		ev.Lag = ev.Commit - ev.Applied
	}
	if !v.Replication.LastContact.IsZero() {
		ev.Contact = v.Taken.Sub(v.Replication.LastContact)
	}
	return ev, nil
}
