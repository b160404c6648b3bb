package monitor

import (
	"time"
)

// The ensemble panel: every member as its own report says it (role, term,
// its log's commit index and Raft's applied index, which count the same
// entries, the lag between them, the last entry applied to the state, the
// leader's last contact), with a link to each member's own view, and the
// members that did not answer named. hashicorp/raft tells each member only
// its own indexes: the others' come from their reports.

var _ = addPanel(panel{
	name: "ensemble", title: "Ensemble", order: 50, refresh: time.Second,
	parts: PartReplication | PartStats | partEnsemble,
	data:  ensembleData,
	tmpl: `{{define "ensemble"}}{{if .Single}}<p class="note">A single node: no ensemble.</p>
<table class="kv"><tr><th>last zxid</th><td>{{zxid .V.Stats.LastZxid}}</td></tr><tr><th>transactions applied</th><td>{{.V.Stats.Txns}}</td></tr></table>
{{else}}{{with .V.Replication}}<table class="kv self">
<tr><th>node</th><td>{{.NodeID}}</td></tr>
<tr><th>role</th><td class="mode-{{$.V.Mode}}">{{$.V.Mode}}</td></tr>
<tr><th>leader</th><td>{{if .LeaderID}}node {{.LeaderID}} ({{.LeaderAddr}}){{else}}none known{{end}}</td></tr>
<tr><th>term</th><td>{{.Term}}</td></tr>
<tr><th>last contact</th><td>{{if .LastContact.IsZero}}— (leads){{else}}<span data-since="{{ms .LastContact}}">{{dur $.Contact}}</span> ago{{end}}</td></tr>
<tr><th>forwarded writes</th><td>{{$.V.Stats.Forwarded}}</td></tr>
<tr><th>last zxid</th><td>{{zxid $.V.Stats.LastZxid}}</td></tr>
</table>{{end}}
<h2>Members</h2>
<table class="list members"><tr><th>id</th><th>raft address</th><th>role</th><th>term</th><th>commit index</th><th>applied index</th><th>lag</th><th>state at index</th><th>last log index</th><th>its view</th></tr>
{{range .Members}}<tr class="{{if .Self}}self{{end}}{{if .Silent}} silent{{end}}" data-member="{{.ID}}"><td>{{.ID}}{{if .Self}} (this node){{end}}</td><td>{{.Addr}}</td>
{{if .Report}}{{with .Report}}<td class="mode-{{.Mode}}">{{.Mode}}</td><td>{{.Term}}</td><td>{{.Commit}}</td><td>{{.Applied}}</td>{{end}}<td>{{.Lag}}</td>{{with .Report}}<td>{{.StateIndex}}</td><td>{{.LastLog}}</td>{{end}}
{{else}}<td colspan="7" class="warn">did not answer: {{.Err}}</td>{{end}}
<td>{{if .URL}}<a href="{{.URL}}/ui/ensemble">{{.URL}}</a>{{else}}—{{end}}</td></tr>
{{end}}</table>
<p class="note">Lag is commit index minus applied index: both count every entry of the Raft log, Raft's own (an election's no-op, a configuration) included, so an idle member shows 0. The state is at the last entry that carries commands, which Raft's own entries leave behind.</p>{{end}}{{end}}`,
})

// ensemblePage is what the ensemble panel shows.
type ensemblePage struct {
	V       *view
	Single  bool
	Contact time.Duration
	Members []memberRow
}

// memberRow is one member as the panel shows it.
type memberRow struct {
	Member
	Self   bool
	Report *memberReport
	Silent bool
	Err    string
	Lag    uint64
	URL    string // its own view
}

func ensembleData(q *uiRequest) (any, error) {
	v := q.v
	ep := &ensemblePage{V: v, Single: !v.Mode.Replicated()}
	if !v.Replication.LastContact.IsZero() {
		ep.Contact = v.Taken.Sub(v.Replication.LastContact)
	}
	for _, mem := range v.Replication.Members {
		row := memberRow{Member: mem, Self: mem.ID == v.Replication.NodeID}
		switch {
		case row.Self && v.ens != nil:
			row.Report = v.ens.Self
		case row.Self:
			row.Report = selfReport(v)
		case v.ens != nil:
			for _, a := range v.ens.Answers {
				if a.Member.ID == mem.ID {
					row.Report = a.Report
					if a.Err != nil {
						row.Err = a.Err.Error()
					}
				}
			}
		default:
			row.Err = "not asked (this member's view only)"
		}
		if row.Report != nil {
			if row.Report.Commit > row.Report.Applied {
				row.Lag = row.Report.Commit - row.Report.Applied
			}
			row.URL = memberURL(row.Report, mem.Addr)
		} else {
			row.Silent = true
		}
		ep.Members = append(ep.Members, row)
	}
	return ep, nil
}

// selfReport is this member's report for its own row, without sessions.
func selfReport(v *view) *memberReport {
	r := v.Replication
	rep := &memberReport{NodeID: r.NodeID, Mode: v.Mode, Taken: v.Taken, UIAddr: v.Server.UIAddr, AdminAddr: v.Server.AdminAddr,
		Term: r.Term, LastContact: r.LastContact, LeaderID: r.LeaderID}
	rep.Commit, rep.Applied, rep.StateIndex, rep.LastLog = raftIndexes(r.Raft)
	return rep
}
