package monitor

import (
	"bytes"
	"crypto/subtle"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/trace"
)

// The live view: server-rendered HTML pages, one per panel, that a little
// JavaScript redraws in place (the panel's HTML fetched again) while they
// are open, and the event trace streamed as JSON lines. Everything is
// read-only and rendered from Source: the shared snapshot (one per
// snapshotAge whatever the number of viewers), and the tree read a node
// and a page of children at a time.
//
// A panel is one file: its name, title, the snapshot parts it reads, its
// template and the function that gathers what the template shows, given
// to addPanel.

//go:embed ui
var uiFiles embed.FS

// panel is one page of the live view.
type panel struct {
	name  string // its URL: /ui/<name>
	title string
	order int // place in the navigation
	// refresh is how often an open panel is redrawn.
	refresh time.Duration
	// streams is set for a panel whose body the script fills from a
	// stream (the trace): a redraw then redraws only its header.
	streams bool
	// parts are the shared snapshot's parts it reads (view.Snapshot).
	parts Parts
	// tmpl defines the template <name> (the redrawn part) and, if the
	// panel has controls that must survive a redraw, <name>.controls;
	// both are executed with what data returns.
	tmpl string
	data func(r *uiRequest) (any, error)
}

// Name and Title are what the page's navigation shows.
func (p *panel) Name() string  { return p.name }
func (p *panel) Title() string { return p.title }

var (
	// panels is the registry, in navigation order.
	panels []*panel
	// uiOnce parses the templates into uiTmpl (or fails with uiTmplErr)
	// on first use, once every panel's file has registered.
	uiOnce    sync.Once
	uiTmpl    *template.Template
	uiTmplErr error
)

// addPanel registers a panel; each panel's file calls it once.
func addPanel(p panel) *panel {
	panels = append(panels, &p)
	slices.SortFunc(panels, func(a, b *panel) int { return a.order - b.order })
	return &p
}

// templates parses the page and every panel's template, once.
func templates() (*template.Template, error) {
	uiOnce.Do(func() {
		t := template.New("ui").Funcs(uiFuncs)
		t, uiTmplErr = t.ParseFS(uiFiles, "ui/page.html")
		for _, p := range panels {
			if uiTmplErr == nil {
				_, uiTmplErr = t.New(p.name).Parse(p.tmpl)
			}
		}
		uiTmpl = t
	})
	return uiTmpl, uiTmplErr
}

// snapshotAge is how old a shared snapshot may be when a view reads it:
// viewers redrawing every second share one, and what panels derive from
// it (sessions in order, lock queues, watch rows), so ten viewers cost
// what one does. Countdowns run in the page from the snapshot's time.
const snapshotAge = time.Second

// sharedSnapshots are the latest snapshots the live view took, by parts.
type sharedSnapshots struct {
	mu      sync.Mutex // guards byParts
	byParts map[Parts]*sharedSnapshot
}

// sharedSnapshot is the latest snapshot of some parts. Its mu is held
// while it is taken, so that viewers asking at once wait for one snapshot
// rather than each taking their own; snapshots of other parts do not wait
// for it (an ensemble view asks the other members, whose own views may
// ask this one for its snapshot meanwhile).
type sharedSnapshot struct {
	mu    sync.Mutex // guards the fields below
	v     *view
	taken time.Time // on this process's clock
	memo  *memo
}

// partEnsemble asks for a view of the whole ensemble: the snapshot's
// sessions and watches merged with the other members' reports. It is the
// view's own part, never asked of the Source.
const partEnsemble Parts = 1 << 7

// memo keeps what panels derive from one shared snapshot.
type memo struct {
	mu sync.Mutex // guards m
	m  map[string]*memoEntry
}

// memoEntry is one derived value, made once.
type memoEntry struct {
	once sync.Once
	v    any
}

// maxMemoEntries bounds what one snapshot's memo keeps: a few dozen
// values serve every panel's viewers, and each replayed state (and what is
// drawn from it) is one more, so a client asking for hundreds of points of
// the history within a second gets them made, not kept.
const maxMemoEntries = 256

// derive returns the value kept under key, making it with make the first
// time; viewers asking at once wait for the one making it. make may
// derive values under other keys. Values are shared between viewers:
// never change one. Past maxMemoEntries, a value not kept yet is made for
// the asker alone.
func derive[T any](c *memo, key string, make func() T) T {
	c.mu.Lock()
	e := c.m[key]
	if e == nil {
		if len(c.m) >= maxMemoEntries {
			c.mu.Unlock()
			return make()
		}
		e = &memoEntry{}
		c.m[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.v = make() })
	return e.v.(T)
}

// shared returns a view with parts no older than snapshotAge, and what
// panels derived from it. With partEnsemble (and PartSessions or
// PartWatches), the other members' reports are merged in.
func (m *Monitor) shared(parts Parts) (*view, *memo) {
	c := &m.snaps
	c.mu.Lock()
	if c.byParts == nil {
		c.byParts = map[Parts]*sharedSnapshot{}
	}
	s := c.byParts[parts]
	if s == nil {
		s = &sharedSnapshot{}
		c.byParts[parts] = s
	}
	c.mu.Unlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.v == nil || time.Since(s.taken) > snapshotAge {
		s.v, s.taken, s.memo = m.takeView(parts), time.Now(), &memo{m: map[string]*memoEntry{}}
	}
	return s.v, s.memo
}

// takeView takes a snapshot of parts and, for an ensemble view, merges in
// what the other members report.
func (m *Monitor) takeView(parts Parts) *view {
	v := &view{Snapshot: m.src.Snapshot(parts &^ partEnsemble), words: m.enabled}
	markLocal(v)
	if _, ok := m.src.(Peers); ok && parts&partEnsemble != 0 && v.Mode.Replicated() {
		self := m.report(v)
		v.ens = merge(v, self, m.askMembers(v))
	}
	return v
}

// scope is the parts a panel's request reads: the panel's own, but of
// this member alone when the request asks so (scope=member).
func scope(r *http.Request, parts Parts) Parts {
	if r.URL.Query().Get("scope") == "member" {
		return parts &^ partEnsemble
	}
	return parts
}

// uiRequest is what a panel's data function reads: the request, the
// shared snapshot with the parts the panel asked for, and the source for
// the tree.
type uiRequest struct {
	r    *http.Request
	v    *view
	memo *memo // what panels derived from v
	src  Source
	m    *Monitor
	self uint64 // this node's id (0 for a single node)
	// replay is the point of the trace's history the view is replayed
	// at (?at=), nil for the live view; window is the trace's window it
	// read, the same for the whole request.
	replay *replayPoint
	window *replayWindow
	// states are the replayed states this request read, by root: the
	// memo's, or its own when the memo is full.
	states map[string]*replayState
	// diagrams counts the pictures drawn, to name each one's parts.
	diagrams int
}

// history is the trace's window the server keeps, nil without one.
func (m *Monitor) history() *trace.History {
	if b := m.src.Trace(); b != nil {
		return b.History()
	}
	return nil
}

// sessions and watches are what the panels show: the snapshot's, or the
// replay's (whose sessions are those that own ephemerals: all the lock
// queues read; the sessions panel lists a replay's by IDs).
func (q *uiRequest) sessions() []Session {
	if q.replay != nil {
		return q.state("").WithEphemerals()
	}
	return q.v.Sessions
}

// session is one session, live or at the replay point; false if it is
// not open there.
func (q *uiRequest) session(id int64) (Session, bool) {
	if q.replay != nil {
		return q.state("").get(id)
	}
	for _, s := range q.v.Sessions {
		if s.ID == id {
			return s, true
		}
	}
	return Session{}, false
}

func (q *uiRequest) watches() []Watch {
	if q.replay != nil {
		return q.state("").Watches()
	}
	return q.v.Watches
}

// memoKey is key, told apart for a replay by its state's (that of the
// sessions and watches: the tree is not tracked).
func (q *uiRequest) memoKey(key string) string {
	if q.replay != nil {
		return key + " at " + q.stateKey("")
	}
	return key
}

// nodeData reads a node's data as an anonymous client would; false when
// it is gone or the world may not read it. In a replay, as it was.
func (q *uiRequest) nodeData(path string) ([]byte, bool) {
	if q.replay != nil {
		if d, ok := q.state("").data(path); ok {
			return d, true
		}
		// Not changed since: as it is now.
	}
	n, err := q.src.Node(path)
	if err != nil || !n.Readable {
		return nil, false
	}
	return n.Data, true
}

// param is a query parameter.
func (q *uiRequest) param(name string) string { return q.r.URL.Query().Get(name) }

// uiCSP lets a page load only this server's script, style and images, and
// connect only back to it: nothing inline runs, so even markup that
// escaped escaping could not execute.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// UIHandler serves the live view under /ui/, the event trace as JSON
// lines at /trace and Go's profiles under /debug/pprof/, read-only. listenAddr is the address it is served on:
// on a loopback address any local user may look (requests must name a
// loopback host, so a web page cannot reach it by rebinding a name to
// 127.0.0.1); on any other every request must carry the admin token, as a
// bearer token or as the password of HTTP basic authentication (which a
// browser asks for), and without a configured token the view is refused.
func (m *Monitor) UIHandler(listenAddr string) http.Handler {
	static, _ := fs.Sub(uiFiles, "ui/static")
	mux := http.NewServeMux()
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/"+panels[0].name, http.StatusSeeOther)
	})
	for _, p := range panels {
		mux.HandleFunc("GET /ui/"+p.name, func(w http.ResponseWriter, r *http.Request) { m.servePanel(w, r, p) })
	}
	mux.HandleFunc("GET /trace", m.serveTrace)
	addProfiles(mux)
	return m.guard(listenAddr, mux)
}

// guard sets the headers every answer of the view carries and lets
// through only reads by those allowed to look.
func (m *Monitor) guard(listenAddr string, next http.Handler) http.Handler {
	loopback := loopbackOnly(listenAddr)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", uiCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "the live view is read-only", http.StatusMethodNotAllowed)
			return
		}
		switch {
		case loopback && !loopbackHost(r.Host):
			http.Error(w, "the live view answers only requests for a loopback host", http.StatusForbidden)
			return
		case loopback:
		case m.cfg.AdminToken == "":
			http.Error(w, "the live view is served on a non-loopback address only with an admin token (--admin-token-file)", http.StatusForbidden)
			return
		case !m.tokenGiven(r):
			h.Set("WWW-Authenticate", `Basic realm="hutch", charset="UTF-8"`)
			http.Error(w, "the admin token is required: as a bearer token, or as the password of basic authentication", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// tokenGiven reports whether r carries the admin token.
func (m *Monitor) tokenGiven(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		_, got, ok = r.BasicAuth()
	}
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(m.cfg.AdminToken)) == 1
}

// loopbackHost reports whether a request's Host names this machine by a
// loopback address or localhost.
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// pageData is what page.html renders.
type pageData struct {
	Panel    *panel
	Panels   []*panel
	Head     template.HTML
	Controls template.HTML
	Body     template.HTML
	Refresh  int64 // ms; 0 for none
	// BodyRefresh is false for a panel whose body is not redrawn (the
	// trace streams into it): only its header is.
	BodyRefresh bool
}

// headData is what the header shows: this member's role, read afresh at
// every redraw so that a change of role shows at once, and the counts of
// the shared snapshot.
type headData struct {
	Mode    membership.State
	Serving bool
	Self    uint64
	Leader  uint64
	V       *view
	Replay  *replayPoint
	// History is the trace's window, nil without one.
	History *trace.HistoryStats
	// URI is the request's, for the replay's links.
	URI string
}

// LiveURI is the request's URI without the replay.
func (h headData) LiveURI() string {
	path, query, _ := strings.Cut(h.URI, "?")
	v, _ := url.ParseQuery(query)
	v.Del("at")
	v.Del("fragment")
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

// servePanel renders one panel: the whole page, or with fragment=1 only
// the parts its script redraws (the header, and the body unless the panel
// streams).
func (m *Monitor) servePanel(w http.ResponseWriter, r *http.Request, p *panel) {
	t, err := templates()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	v, memo := m.shared(scope(r, p.parts|PartStats|PartReplication))
	q := &uiRequest{r: r, v: v, memo: memo, src: m.src, m: m, self: v.Replication.NodeID}
	if !v.Mode.Replicated() {
		q.self = 0
	}
	if err := q.startReplay(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	data, err := p.data(q)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// The header, with the role as it is now.
	now := m.src.Snapshot(PartReplication)
	hd := headData{Mode: now.Mode, Serving: now.Serving, Self: q.self, Leader: now.Replication.LeaderID, V: v, Replay: q.replay, URI: r.URL.RequestURI()}
	if h := m.history(); h != nil {
		st := h.Stats()
		hd.History = &st
	}
	var head bytes.Buffer
	if err := t.ExecuteTemplate(&head, "header", hd); err != nil {
		m.cfg.Logger.Warn("live view", "panel", p.name, "err", err)
		http.Error(w, "rendering failed", http.StatusInternalServerError)
		return
	}
	// The time the snapshot was taken, for the script's countdowns.
	var body bytes.Buffer
	fmt.Fprintf(&body, `<span hidden data-now="%d"></span>`, v.Taken.UnixMilli())
	if err := t.ExecuteTemplate(&body, p.name, data); err != nil {
		m.cfg.Logger.Warn("live view", "panel", p.name, "err", err)
		http.Error(w, "rendering failed", http.StatusInternalServerError)
		return
	}
	m.pages.Add(1)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if r.URL.Query().Get("fragment") == "1" {
		// Both parts are html/template's output, escaped already.
		_, _ = fmt.Fprintf(w, `<span hidden data-now="%d"></span><div id="frag-head">%s</div>`, v.Taken.UnixMilli(), head.Bytes())
		if !p.streams {
			_, _ = fmt.Fprintf(w, `<div id="frag-body">%s</div>`, body.Bytes())
		}
		return
	}
	page := pageData{Panel: p, Panels: panels, Head: template.HTML(head.String()),
		Body: template.HTML(body.String()), Refresh: p.refresh.Milliseconds(), BodyRefresh: !p.streams}
	if c := t.Lookup(p.name + ".controls"); c != nil {
		var controls bytes.Buffer
		if err := c.Execute(&controls, data); err != nil {
			http.Error(w, "rendering failed", http.StatusInternalServerError)
			return
		}
		page.Controls = template.HTML(controls.String())
	}
	var out bytes.Buffer
	if err := t.ExecuteTemplate(&out, "page.html", page); err != nil {
		m.cfg.Logger.Warn("live view", "panel", p.name, "err", err)
		http.Error(w, "rendering failed", http.StatusInternalServerError)
		return
	}
	_, _ = w.Write(out.Bytes())
}
