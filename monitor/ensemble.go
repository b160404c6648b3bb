package monitor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/trace"
)

// One view of the whole ensemble. Each member holds only its own
// clients' connections, watches and identities, as each ZooKeeper server
// does; the leader alone runs the session timers. A member's view asks
// every other member, over the members' authenticated channel (Peers),
// for a report of what only it knows, and merges the reports into its
// snapshot, so that every waiter's watch shows wherever one looks. A
// member that does not answer is named, and what only it knows is shown
// as unknown.

// Peers is what a Source that is a member of an ensemble adds: a way to
// put a question to another member (package server's Server does it over
// raftstore's authenticated channel).
type Peers interface {
	// AskMember puts question to the member whose Raft address is addr
	// and returns its answer (AnswerMember's, on that member).
	AskMember(ctx context.Context, addr string, question []byte) ([]byte, error)
}

// memberQuestion is what one member's view asks another.
type memberQuestion struct {
	// Ask is "report" (memberReport) or "watch-history" (the watch
	// events of its trace's window after AfterZxid, for a replay).
	Ask       string `json:"ask"`
	AfterZxid int64  `json:"after_zxid,omitempty"`
}

// memberReport is a member's answer: who it is, where its own view is,
// its log's indexes, and what only it knows of the sessions and watches.
type memberReport struct {
	NodeID    uint64           `json:"node"`
	Mode      membership.State `json:"mode"`
	Taken     time.Time        `json:"taken"`
	UIAddr    string           `json:"ui,omitempty"`
	AdminAddr string           `json:"admin,omitempty"`
	// Raft's statistics this view compares: term, indexes, last contact.
	Term        uint64    `json:"term"`
	Commit      uint64    `json:"commit"`
	Applied     uint64    `json:"applied"`      // Raft's, counting its own entries
	StateIndex  uint64    `json:"state_index"`  // the last entry applied to the state
	LastLog     uint64    `json:"last_log"`     // the last index in its log
	LastContact time.Time `json:"last_contact"` // the leader's, on a follower
	LeaderID    uint64    `json:"leader"`
	// Sessions are those connected through it, and where it runs the
	// session timers (the leader) every session's expiry.
	Sessions []reportedSession `json:"sessions"`
	// Watches are every watch its clients hold.
	Watches []Watch `json:"watches"`
	// Ended are the sessions that ended lately, with the watches their
	// connections to it dropped.
	Ended []trace.EndedSession `json:"ended,omitempty"`
}

// reportedSession is what a member knows of one session that another does
// not: its connection there, or its expiry where the timers run.
type reportedSession struct {
	ID         int64     `json:"id"`
	Remote     string    `json:"remote,omitempty"`
	WatchCount int       `json:"watches,omitempty"`
	Auth       []string  `json:"auth,omitempty"`
	LastHeard  time.Time `json:"heard,omitzero"`
	Expires    time.Time `json:"expires,omitzero"`
}

// maxReportedEnded bounds the ended sessions a report carries: the
// newest.
const maxReportedEnded = 200

// maxReport bounds the answer a member's view reads from another.
const maxReport = 64 << 20

// askTimeout bounds how long a view waits for the other members.
const askTimeout = 1500 * time.Millisecond

// AnswerMember answers another member's question (package server hands it
// raftstore's questions): a report of what only this member knows.
func (m *Monitor) AnswerMember(question []byte) ([]byte, error) {
	var q memberQuestion
	if err := json.Unmarshal(question, &q); err != nil {
		return nil, fmt.Errorf("monitor: unknown question %q", question)
	}
	switch q.Ask {
	case "report":
		v, _ := m.shared(PartSessions | PartWatches | PartReplication | PartStats)
		return json.Marshal(m.report(v))
	case "watch-history":
		return json.Marshal(m.watchHistory(q.AfterZxid))
	}
	return nil, fmt.Errorf("monitor: unknown question %q", question)
}

// report is this member's report from a local snapshot.
func (m *Monitor) report(v *view) *memberReport {
	r := v.Replication
	rep := &memberReport{NodeID: r.NodeID, Mode: v.Mode, Taken: v.Taken, UIAddr: v.Server.UIAddr, AdminAddr: v.Server.AdminAddr,
		Term: r.Term, LastContact: r.LastContact, LeaderID: r.LeaderID, Watches: v.Watches}
	rep.Commit, rep.Applied, rep.StateIndex, rep.LastLog = raftIndexes(r.Raft)
	for _, s := range v.Sessions {
		if s.Remote == "" && s.Expires.IsZero() {
			continue
		}
		rep.Sessions = append(rep.Sessions, reportedSession{ID: s.ID, Remote: s.Remote, WatchCount: s.WatchCount,
			Auth: s.Auth, LastHeard: s.LastHeard, Expires: s.Expires})
	}
	if b := m.src.Trace(); b != nil {
		if h := b.History(); h != nil {
			rep.Ended = h.Ended()
			if n := len(rep.Ended); n > maxReportedEnded {
				rep.Ended = rep.Ended[n-maxReportedEnded:]
			}
		}
	}
	return rep
}

// raftIndexes reads the indexes a view compares from Raft's statistics:
// the commit index and Raft's own applied index count every entry of the
// log, Raft's own (elections' no-ops, configurations) too, so they compare
// with each other; the state's applied index counts only the entries that
// carry commands.
func raftIndexes(stats map[string]string) (commit, applied, state, last uint64) {
	n := func(key string) uint64 {
		v, _ := strconv.ParseUint(stats[key], 10, 64)
		return v
	}
	return n("commit_index"), n("applied_index"), n("fsm_applied_index"), n("last_log_index")
}

// memberAnswer is one member's part of an ensemble view: its report, or
// why there is none.
type memberAnswer struct {
	Member Member
	Report *memberReport // nil when it did not answer
	Err    error
}

// askMembers asks every other member for its report, at once, each within
// askTimeout. The answers come in member order.
func (m *Monitor) askMembers(v *view) []memberAnswer {
	question, _ := json.Marshal(memberQuestion{Ask: "report"})
	raw := m.askMembersQ(v, question)
	out := make([]memberAnswer, len(raw))
	for i, a := range raw {
		out[i] = memberAnswer{Member: a.Member, Err: a.Err}
		if a.Err == nil {
			r := new(memberReport)
			if err := json.Unmarshal(a.Body, r); err != nil {
				out[i].Err = err
			} else {
				out[i].Report = r
			}
		}
	}
	return out
}

// rawAnswer is one member's answer to a question, or why there is none.
type rawAnswer struct {
	Member Member
	Body   []byte
	Err    error
}

// askMembersQ puts question to every other member at once, each within
// askTimeout, and returns the answers in member order.
func (m *Monitor) askMembersQ(v *view, question []byte) []rawAnswer {
	peers, ok := m.src.(Peers)
	if !ok || !v.Mode.Replicated() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
	defer cancel()
	var out []rawAnswer
	for _, mem := range v.Replication.Members {
		if mem.ID != v.Replication.NodeID {
			out = append(out, rawAnswer{Member: mem})
		}
	}
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() {
			a := &out[i]
			a.Body, a.Err = peers.AskMember(ctx, a.Member.Addr, question)
			if a.Err == nil && len(a.Body) > maxReport {
				a.Body, a.Err = nil, errors.New("answer too large")
			}
		})
	}
	wg.Wait()
	return out
}

// peerViews is what the other members said, merged into a view.
type peerViews struct {
	Answers []memberAnswer
	// Self is this member's own report, beside the others'.
	Self *memberReport
}

// Silent lists the members that did not answer.
func (e *peerViews) Silent() []memberAnswer {
	if e == nil {
		return nil
	}
	var out []memberAnswer
	for _, a := range e.Answers {
		if a.Report == nil {
			out = append(out, a)
		}
	}
	return out
}

// AnsweredCount is how many members are in the view, this one included;
// MemberCount how many there are.
func (e *peerViews) AnsweredCount() int { return len(e.Reports()) }
func (e *peerViews) MemberCount() int   { return len(e.Answers) + 1 }

// answered reports whether member id answered (this member always has).
func (e *peerViews) answered(id uint64) bool {
	if e == nil {
		return false
	}
	if e.Self != nil && e.Self.NodeID == id {
		return true
	}
	for _, a := range e.Answers {
		if a.Member.ID == id {
			return a.Report != nil
		}
	}
	return false
}

// Reports lists every member's report that came, this member's first.
func (e *peerViews) Reports() []*memberReport {
	if e == nil {
		return nil
	}
	out := []*memberReport{e.Self}
	for _, a := range e.Answers {
		if a.Report != nil {
			out = append(out, a.Report)
		}
	}
	return out
}

// merge folds the other members' reports into v, which this member took:
// their clients' connections, watches and identities, the leader's expiry
// times, their ended sessions; and marks which sessions' watches are
// known. It returns the ensemble view for the panels to say who answered.
func merge(v *view, self *memberReport, answers []memberAnswer) *peerViews {
	ev := &peerViews{Answers: answers, Self: self}
	index := make(map[int64]int, len(v.Sessions))
	for i := range v.Sessions {
		index[v.Sessions[i].ID] = i
	}
	for _, a := range answers {
		r := a.Report
		if r == nil {
			continue
		}
		for _, rs := range r.Sessions {
			i, ok := index[rs.ID]
			if !ok {
				continue // opened or closed between the two snapshots
			}
			s := &v.Sessions[i]
			if rs.Remote != "" {
				s.Remote, s.WatchCount, s.Auth, s.Attached = rs.Remote, rs.WatchCount, rs.Auth, r.NodeID
				if s.LastHeard.IsZero() {
					s.LastHeard = rs.LastHeard
				}
			}
			if !rs.Expires.IsZero() && s.Expires.IsZero() {
				s.Expires = rs.Expires
				if !rs.LastHeard.IsZero() {
					s.LastHeard = rs.LastHeard
				}
			}
		}
		for _, w := range r.Watches {
			w.Member = r.NodeID
			v.Watches = append(v.Watches, w)
		}
	}
	for i := range v.Sessions {
		s := &v.Sessions[i]
		s.Unknown = s.Attached == 0 && s.Node != 0 && !ev.answered(s.Node)
	}
	return ev
}

// markLocal marks, in a view of this member alone, which sessions it
// knows the connection and watches of: those connected here, and those
// connected nowhere; a session connected through another member is
// unknown here.
func markLocal(v *view) {
	self := v.Replication.NodeID
	for i := range v.Sessions {
		s := &v.Sessions[i]
		switch {
		case s.Remote != "":
			s.Attached = max(self, 1)
		case v.Mode.Replicated() && s.Node != 0 && s.Node != self:
			s.Unknown = true
		}
	}
	for i := range v.Watches {
		v.Watches[i].Member = self
	}
}

// endedSessions lists the sessions that ended lately, as the reports say,
// newest first, each once, with the watches every member saw dropped.
func endedSessions(reports []*memberReport, local []trace.EndedSession) []trace.EndedSession {
	by := map[int64]*trace.EndedSession{}
	var order []int64
	add := func(list []trace.EndedSession) {
		for _, e := range list {
			id := e.Closed.Session
			if have, ok := by[id]; ok {
				have.Dropped = append(have.Dropped, e.Dropped...)
				continue
			}
			e := e
			by[id] = &e
			order = append(order, id)
		}
	}
	add(local)
	for _, r := range reports {
		add(r.Ended)
	}
	out := make([]trace.EndedSession, 0, len(order))
	for _, id := range order {
		out = append(out, *by[id])
	}
	slices.SortStableFunc(out, func(a, b trace.EndedSession) int { return b.Closed.Time.Compare(a.Closed.Time) })
	return out
}

// memberURL is the base URL of a member's own live view, from its report:
// its UI address, else its admin port's; a wildcard host is replaced by the
// host of its Raft address, which other members reach it at.
func memberURL(r *memberReport, raftAddr string) string {
	addr := cmp.Or(r.UIAddr, r.AdminAddr)
	if addr == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if h, _, err := net.SplitHostPort(raftAddr); err == nil {
			host = h
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}
