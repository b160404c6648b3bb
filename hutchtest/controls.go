package hutchtest

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/hutchzk/hutch/internal/faultnet"
	"github.com/hutchzk/hutch/monitor"
	"github.com/hutchzk/hutch/server"
	"github.com/hutchzk/hutch/trace"
)

// fatal fails the test with what failed and why: "hutchtest: expire
// session 0x1f: no such session", naming the member in an ensemble.
func (s *Server) fatal(err error) {
	s.tb.Helper()
	if s.ens != nil {
		s.tb.Fatalf("hutchtest: %s: %v", s.m.Name(), err)
	}
	s.tb.Fatalf("hutchtest: %v", err)
}

// ExpireSession expires session id on the server, as its timeout would:
// its ephemerals are deleted, their watches fire, and its client is told
// SESSION_EXPIRED when it next connects (go-zookeeper reports
// zk.StateExpired and its calls fail with zk.ErrSessionExpired). It
// returns once the expiry applied. In an ensemble use
// Ensemble.ExpireSession, which asks the leader.
func (s *Server) ExpireSession(id int64) {
	s.tb.Helper()
	if err := s.srv().ExpireSession(id); err != nil {
		s.fatal(err)
	}
}

// DropConnection closes the connection that carries session id, on the
// server's side: the client sees a disconnect (zk.StateDisconnected),
// reconnects and re-attaches its session, which lives on.
func (s *Server) DropConnection(id int64) {
	s.tb.Helper()
	if err := s.srv().DropConnection(id); err != nil {
		s.fatal(err)
	}
}

// DropAll closes every client connection, as DropConnection, and returns
// how many it closed.
func (s *Server) DropAll() int {
	s.tb.Helper()
	return s.srv().DropAll()
}

// Pause makes the server stop answering without closing any connection,
// as if its process had been stopped: requests wait unanswered, new
// connections hang, and the clients' own timeouts run (go-zookeeper
// disconnects after two thirds of the session timeout with no reply, and
// tries again). Session expiry waits too. In an ensemble the member also
// goes silent to its peers.
func (s *Server) Pause() {
	s.tb.Helper()
	if s.ens != nil {
		s.ens.Pause(s.Number())
		return
	}
	if err := s.m.Pause(); err != nil {
		s.fatal(err)
	}
}

// Resume undoes Pause: what the clients sent meanwhile is answered, and,
// as after a real stop, the sessions are given back the paused time
// rather than expired for the server's own silence.
func (s *Server) Resume() {
	s.tb.Helper()
	if s.ens != nil {
		s.ens.Resume(s.Number())
		return
	}
	if err := s.m.Resume(); err != nil {
		s.fatal(err)
	}
}

// Advance moves the fake clock (FakeClock) forward by d, at once and
// deterministically: every session not touched within d of fake time
// expires (so a connected client's pings, which run on real time, do not
// save it, unless the option KeepConnectedSessions says they do), TTL
// nodes past their TTL and empty containers are deleted. It returns once
// those closes and deletes applied. No real time passes and nothing
// sleeps, so advancing a day costs what a second does. In an ensemble
// use Ensemble.Advance, which moves every member's clock.
func (s *Server) Advance(d time.Duration) {
	s.tb.Helper()
	if s.m.Clock() == nil {
		s.tb.Fatalf("hutchtest: Advance needs the FakeClock option")
	}
	var alive []int64
	if s.opts.keepConnected {
		alive = s.m.Connected()
	}
	if err := s.m.Advance(d, alive); err != nil {
		s.fatal(err)
	}
}

// Now is the server's time: the fake clock's, or the real one's.
func (s *Server) Now() time.Time {
	if c := s.m.Clock(); c != nil {
		return c.Now()
	}
	return time.Now()
}

// SetClientShape degrades the connection of session id's client to this
// server, both ways, now and after it reconnects (see Shape); the zero
// Shape restores it. In an ensemble use Ensemble.SetSessionShape, which
// follows the client from member to member.
func (s *Server) SetClientShape(id int64, shape Shape) {
	s.tb.Helper()
	if s.ens != nil {
		s.ens.SetSessionShape(id, shape)
		return
	}
	if err := s.m.SetSessionShape(id, faultnet.Shape(shape)); err != nil {
		s.fatal(err)
	}
}

// Session is one live session as a server sees it (monitor.Session: id,
// negotiated timeout, when that server would expire it, its ephemerals,
// its client's address when connected there), with the watches its
// connection to that server holds.
type Session struct {
	monitor.Session
	Watches []Watch
}

// Connected reports whether the session's client is connected to the
// server that reported it.
func (s *Session) Connected() bool { return s.Remote != "" }

// Watch is one watch: a session's entry on a path in one of ZooKeeper's
// two tables (Child set for the child table; a persistent watch has one
// in each), Mode "standard" (one-shot), "persistent" or
// "persistentRecursive" (see monitor.Watch).
type Watch = monitor.Watch

// Node is one znode, whatever its ACL (see server.NodeInfo).
type Node = server.NodeInfo

// Sessions lists the live sessions, by id, each with its negotiated
// timeout, its ephemerals, and the watches its connection to this server
// holds.
func (s *Server) Sessions() []Session {
	s.tb.Helper()
	snap := s.srv().Snapshot(monitor.PartSessions | monitor.PartWatches)
	watches := make(map[int64][]Watch)
	for _, w := range sortWatches(snap.Watches) {
		watches[w.Session] = append(watches[w.Session], w)
	}
	out := make([]Session, 0, len(snap.Sessions))
	for _, ms := range snap.Sessions {
		out = append(out, Session{Session: ms, Watches: watches[ms.ID]})
	}
	slices.SortFunc(out, func(a, b Session) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Session returns one live session; false if there is none by that id.
func (s *Server) Session(id int64) (Session, bool) {
	s.tb.Helper()
	for _, ss := range s.Sessions() {
		if ss.ID == id {
			return ss, true
		}
	}
	return Session{}, false
}

// Watches lists the watches set through this server on the paths given,
// by path and session; with no path, every watch.
func (s *Server) Watches(path ...string) []Watch {
	s.tb.Helper()
	all := sortWatches(s.srv().Snapshot(monitor.PartWatches).Watches)
	if len(path) == 0 {
		return all
	}
	return slices.DeleteFunc(all, func(w Watch) bool { return !slices.Contains(path, w.Path) })
}

// sortWatches orders watches by path, session, then the data table
// before the child table.
func sortWatches(ws []Watch) []Watch {
	slices.SortFunc(ws, func(a, b Watch) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Session, b.Session), cmp.Compare(btoi(a.Child), btoi(b.Child)))
	})
	return ws
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Node returns a node's data, Stat, ACL and children, whatever its ACL;
// false if it does not exist.
func (s *Server) Node(path string) (Node, bool) {
	s.tb.Helper()
	return s.srv().ReadNode(path)
}

// Tree returns the data of every node as a map from path to data, the
// root and ZooKeeper's own /zookeeper nodes left out: what a test
// compares with the tree it expects.
func (s *Server) Tree() map[string]string {
	s.tb.Helper()
	out := make(map[string]string)
	for _, n := range s.srv().ReadTree() {
		if !builtIn(n.Path) {
			out[n.Path] = string(n.Data)
		}
	}
	return out
}

// builtIn reports the root and ZooKeeper's own nodes.
func builtIn(path string) bool {
	return path == "/" || path == "/zookeeper" || strings.HasPrefix(path, "/zookeeper/")
}

// Events returns every event recorded since the server started, in
// order: each transaction applied, each watch notification delivered,
// each session attached or closed (see package trace).
func (s *Server) Events() []trace.Event { return s.m.Recorder().Events() }

// Subscribe streams the events f keeps from now on; the subscription is
// closed when the test ends. A subscriber that does not keep up loses
// events (Subscription.Dropped counts them); the server never waits.
func (s *Server) Subscribe(f trace.Filter) *trace.Subscription {
	sub := s.m.Broker().Subscribe(f, 0)
	s.tb.Cleanup(sub.Close)
	return sub
}

// Mark is the number of events recorded so far: WaitForAfter(mark, ...)
// looks only at the events that come after it.
func (s *Server) Mark() int { return s.m.Recorder().Len() }

// WaitFor returns the first event since the server started that match
// keeps, looking at past events first, and waits for one if none has
// happened yet; it fails the test, listing the last events, if none comes
// within the wait timeout (WaitTimeout). what describes the awaited event
// in that message. Because it looks back, an event from before the call
// satisfies it: to wait for one still to come, use WaitForNext (or
// WaitForAfter with a Mark taken before the action).
func (s *Server) WaitFor(what string, match func(trace.Event) bool) trace.Event {
	s.tb.Helper()
	return s.WaitForAfter(0, what, match)
}

// WaitForNext is WaitFor looking only at events from now on.
func (s *Server) WaitForNext(what string, match func(trace.Event) bool) trace.Event {
	s.tb.Helper()
	return s.WaitForAfter(s.Mark(), what, match)
}

// WaitForAfter is WaitFor looking only at the events after mark (Mark).
func (s *Server) WaitForAfter(mark int, what string, match func(trace.Event) bool) trace.Event {
	s.tb.Helper()
	ctx, cancel := s.ctx()
	defer cancel()
	e, err := s.m.Recorder().Wait(ctx, mark, match)
	if err != nil {
		s.tb.Fatalf("hutchtest: %s%s", s.namePrefix(), waitFailure(what, err, s.opts.waitTimeout, s.Events()))
	}
	return e
}

// namePrefix names the member in an ensemble's messages.
func (s *Server) namePrefix() string {
	if s.ens != nil {
		return s.m.Name() + ": "
	}
	return ""
}

// waitFailure says why a wait for what failed, with the last events.
func waitFailure(what string, err error, wait time.Duration, events []trace.Event) string {
	var b strings.Builder
	for _, e := range events[max(0, len(events)-20):] {
		b.WriteString("\n  " + e.String())
	}
	reason := "none came within " + wait.String()
	if errors.Is(err, trace.ErrClosed) {
		reason = "the recorder is full or closed"
	}
	return "waiting for " + what + ": " + reason + "; last events:" + b.String()
}

// Applied matches a transaction of op ("create", "delete", "setData",
// "closeSession", ...; "" for any) that touched path ("" for any), on its
// own or in a multi, whether it succeeded or failed: a create refused
// with NODEEXISTS or NONODE is applied too, as ZooKeeper logs an error
// transaction. Succeeded matches only those that succeeded.
func Applied(op, path string) func(trace.Event) bool {
	return func(e trace.Event) bool {
		if e.Kind != trace.TxnApplied {
			return false
		}
		if len(e.Ops) > 0 {
			for _, o := range e.Ops {
				if (op == "" || o.Op == op) && (path == "" || o.Path == path) {
					return true
				}
			}
			return op == "multi" && path == ""
		}
		return (op == "" || e.Op == op) && (path == "" || e.Path == path)
	}
}

// Succeeded is Applied for the transactions that succeeded only.
func Succeeded(op, path string) func(trace.Event) bool {
	applied := Applied(op, path)
	return func(e trace.Event) bool { return e.Err == "" && applied(e) }
}

// By keeps what match keeps from session id only: a transaction its
// client asked for, a notification delivered to it, its re-attach or
// close.
func By(id int64, match func(trace.Event) bool) func(trace.Event) bool {
	return func(e trace.Event) bool { return e.Session == id && match(e) }
}

// Delivered matches a watch notification of type typ ("NodeCreated",
// "NodeDeleted", "NodeDataChanged", "NodeChildrenChanged"; "" for any)
// for path ("" for any).
func Delivered(typ, path string) func(trace.Event) bool {
	return func(e trace.Event) bool {
		return e.Kind == trace.WatchDelivered && (typ == "" || e.Type == typ) && (path == "" || e.Path == path)
	}
}

// Attached matches the re-attach of session id (0 for any session) to a
// new connection: its client reconnected.
func Attached(id int64) func(trace.Event) bool {
	return func(e trace.Event) bool {
		return e.Kind == trace.SessionAttached && (id == 0 || e.Session == id)
	}
}

// Closed matches the close of session id (0 for any session), whether it
// expired or its client closed it.
func Closed(id int64) func(trace.Event) bool {
	return func(e trace.Event) bool {
		return e.Kind == trace.SessionClosed && (id == 0 || e.Session == id)
	}
}

// Expired matches the expiry of session id (0 for any session).
func Expired(id int64) func(trace.Event) bool {
	return func(e trace.Event) bool { return Closed(id)(e) && e.Expired }
}
