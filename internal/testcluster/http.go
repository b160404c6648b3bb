package testcluster

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hutchzk/hutch/internal/controlhttp"
	"github.com/hutchzk/hutch/internal/faultnet"
	"github.com/hutchzk/hutch/monitor"
	"github.com/hutchzk/hutch/server"
)

// HandlerOptions adjust Handler.
type HandlerOptions struct {
	// Addrs are the members' client addresses as the clients know them
	// (the fronts' TCP addresses), member 1 first; Cluster.Addrs when nil.
	Addrs []string
	// KeepConnected is /advance's default for keep_connected.
	KeepConnected bool
	// Wait bounds the controls that wait for a leader or a restart (30 s
	// when 0).
	Wait time.Duration
	// Grow starts one more member (Cluster.AddMember) and gives it a
	// client address, for /add-member, returning its number and that
	// address; without it the ensemble cannot grow over HTTP.
	Grow func() (n int, addr string, err error)
}

// Handler serves the ensemble's controls over HTTP, members numbered
// from 1 in connect-string order, every answer a JSON object (see
// package controlhttp; GET / lists the controls):
//
//	POST /kill?member=N          crash member N (Kill)
//	POST /restart?member=N       start it again from its log, once it serves
//	POST /pause[?member=N]       silence member N, or every member (Pause)
//	POST /resume[?member=N]      undo /pause
//	POST /partition?group=1&group=2,3   split the members (members in no group form one)
//	POST /cut?from=N&to=M        stop N reaching M, one way (CutOneWay)
//	POST /heal                   undo partitions, cuts and shaped links
//	POST /link?member=N|session=ID|from=N&to=M&delay=50ms&jitter=10ms&rate=BYTES&loss=0.1
//	                             slow, narrow or make lossy a link; no shape restores it
//	GET  /leader[?wait=30s]      the leader a majority agrees on, waiting for one
//	GET  /members                each member: address, running, paused, role, leader
//	POST /expire?session=ID      expire a session through the leader
//	POST /drop?session=ID|member=N   drop a session's connection, or a member's; none: all
//	POST /advance?by=30s[&keep_connected=true]  move every member's fake clock
//	GET  /sessions               the live sessions, with the member each is connected to
//	POST /add-member[?observer=true]  start one more member and add it by reconfig
//	POST /remove-member?member=N      take member N out by reconfig (it keeps running)
//
// It has no authentication: serve it on loopback only.
func Handler(c *Cluster, o HandlerOptions) http.Handler {
	if o.Addrs == nil {
		o.Addrs = c.Addrs()
	}
	if o.Wait <= 0 {
		o.Wait = 30 * time.Second
	}
	h := &handler{c: c, o: o}
	routes := []controlhttp.Route{
		{Method: "POST", Path: "/kill", Doc: "crash ?member=N", Handle: h.member(c.Kill, "killed")},
		{Method: "POST", Path: "/restart", Doc: "start ?member=N again from its log; answers once it serves", Handle: h.restart},
		{Method: "POST", Path: "/pause", Doc: "silence ?member=N, or every member", Handle: h.each(c.Pause, "paused")},
		{Method: "POST", Path: "/resume", Doc: "undo /pause for ?member=N, or every member", Handle: h.each(c.Resume, "resumed")},
		{Method: "POST", Path: "/partition", Doc: "split the members: ?group=1&group=2,3 (members in no group form one)", Handle: h.partition},
		{Method: "POST", Path: "/cut", Doc: "stop ?from=N reaching ?to=M, one way", Handle: h.cut},
		{Method: "POST", Path: "/heal", Doc: "undo partitions, cuts and shaped links", Handle: h.heal},
		{Method: "POST", Path: "/link", Doc: "shape ?member=N, ?session=ID or ?from=N&to=M: delay, jitter, rate (bytes/s), loss (0-1); none restores", Handle: h.link},
		{Method: "GET", Path: "/leader", Doc: "the leader a majority agrees on, waiting up to ?wait=30s", Handle: h.leader},
		{Method: "GET", Path: "/members", Doc: "each member: address, running, paused, role, leader", Handle: h.members},
		{Method: "POST", Path: "/expire", Doc: "expire ?session=ID through the leader", Handle: h.expire},
		{Method: "POST", Path: "/drop", Doc: "drop ?session=ID's connection, or ?member=N's, or every one", Handle: h.drop},
		{Method: "POST", Path: "/advance", Doc: "move every member's fake clock: ?by=30s[&keep_connected=true]", Handle: h.advance},
		{Method: "GET", Path: "/sessions", Doc: "the live sessions and the member each is connected to", Handle: h.sessions},
		{Method: "POST", Path: "/add-member", Doc: "start one more member and add it by reconfig, as a participant or ?observer=true", Handle: h.addMember},
		{Method: "POST", Path: "/remove-member", Doc: "take ?member=N out of the ensemble by reconfig (it keeps running, serving no one)", Handle: h.removeMember},
	}
	// The membership controls change the member list the others read:
	// they run alone.
	for i, r := range routes {
		handle := r.Handle
		if r.Path == "/add-member" || r.Path == "/remove-member" {
			routes[i].Handle = func(r *http.Request) (any, error) {
				h.mu.Lock()
				defer h.mu.Unlock()
				return handle(r)
			}
		} else {
			routes[i].Handle = func(r *http.Request) (any, error) {
				h.mu.RLock()
				defer h.mu.RUnlock()
				return handle(r)
			}
		}
	}
	return controlhttp.Handler(routes, Status)
}

// Status is the HTTP status of a control's error.
func Status(err error) int {
	switch {
	case errors.Is(err, ErrNoMember):
		return http.StatusNotFound
	case errors.Is(err, ErrNoLeader):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrStopped):
		return http.StatusConflict
	}
	return server.ControlStatus(err)
}

type handler struct {
	c *Cluster
	// mu is held to change the membership (o.Addrs grows with it), and
	// shared by every other control.
	mu sync.RWMutex
	o  HandlerOptions
}

func (h *handler) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), h.o.Wait)
}

// memberParam reads ?name= as a member number; 0 when absent and not
// required.
func memberParam(r *http.Request, name string, required bool) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" && !required {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, controlhttp.BadRequest("%s must be a member number, from 1 in connect-string order (got %q)", name, v)
	}
	return n, nil
}

// member is a control of one member, ?member=N.
func (h *handler) member(do func(int) error, done string) func(*http.Request) (any, error) {
	return func(r *http.Request) (any, error) {
		n, err := memberParam(r, "member", true)
		if err != nil {
			return nil, err
		}
		return map[string]any{done: n}, do(n)
	}
}

// each is a control of ?member=N, or of every member without it.
func (h *handler) each(do func(int) error, done string) func(*http.Request) (any, error) {
	return func(r *http.Request) (any, error) {
		n, err := memberParam(r, "member", false)
		if err != nil {
			return nil, err
		}
		if n != 0 {
			return map[string]any{done: []int{n}}, do(n)
		}
		var all []int
		for i := 1; i <= h.c.Size(); i++ {
			if err := do(i); err != nil {
				return nil, err
			}
			all = append(all, i)
		}
		return map[string]any{done: all}, nil
	}
}

func (h *handler) restart(r *http.Request) (any, error) {
	n, err := memberParam(r, "member", true)
	if err != nil {
		return nil, err
	}
	if err := h.c.Restart(n); err != nil {
		return nil, err
	}
	m, _ := h.c.Member(n)
	srv, err := m.server()
	if err != nil {
		return nil, err
	}
	select {
	case <-srv.Ready():
	case <-time.After(h.o.Wait):
		return nil, errors.New("member " + strconv.Itoa(n) + " restarted but does not serve (no leader) after " + h.o.Wait.String())
	}
	return map[string]any{"restarted": n}, nil
}

func (h *handler) partition(r *http.Request) (any, error) {
	var groups [][]int
	for _, g := range r.URL.Query()["group"] {
		var group []int
		for _, part := range strings.Split(g, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(part))
			if err != nil {
				return nil, controlhttp.BadRequest("group must list member numbers, such as group=1 or group=2,3 (got %q)", g)
			}
			group = append(group, n)
		}
		groups = append(groups, group)
	}
	if len(groups) == 0 {
		return nil, controlhttp.BadRequest("name at least one group: /partition?group=1 cuts member 1 off from the others")
	}
	return map[string]any{"groups": groups}, h.c.Partition(groups...)
}

// directionParams reads ?from=N&to=M, one direction between members.
func directionParams(r *http.Request) (from, to int, err error) {
	if from, err = memberParam(r, "from", true); err != nil {
		return 0, 0, err
	}
	to, err = memberParam(r, "to", true)
	return from, to, err
}

func (h *handler) cut(r *http.Request) (any, error) {
	from, to, err := directionParams(r)
	if err != nil {
		return nil, err
	}
	return map[string]any{"cut": map[string]int{"from": from, "to": to}}, h.c.CutOneWay(from, to)
}

func (h *handler) heal(*http.Request) (any, error) {
	h.c.Heal()
	return map[string]any{"healed": true}, nil
}

// shapeParams reads a link's shape: delay, jitter, rate and loss.
func shapeParams(r *http.Request) (faultnet.Shape, error) {
	q := r.URL.Query()
	var s faultnet.Shape
	for name, d := range map[string]*time.Duration{"delay": &s.Delay, "jitter": &s.Jitter} {
		if v := q.Get(name); v != "" {
			var err error
			if *d, err = time.ParseDuration(v); err != nil {
				return s, controlhttp.BadRequest("%s must be a duration such as 50ms (got %q)", name, v)
			}
		}
	}
	if v := q.Get("rate"); v != "" {
		var err error
		if s.Rate, err = strconv.ParseInt(v, 10, 64); err != nil {
			return s, controlhttp.BadRequest("rate must be bytes a second (got %q)", v)
		}
	}
	if v := q.Get("loss"); v != "" {
		var err error
		if s.Loss, err = strconv.ParseFloat(v, 64); err != nil {
			return s, controlhttp.BadRequest("loss must be a fraction such as 0.1 (got %q)", v)
		}
	}
	if err := s.Check(); err != nil {
		return s, controlhttp.BadRequest("%v", err)
	}
	return s, nil
}

func (h *handler) link(r *http.Request) (any, error) {
	s, err := shapeParams(r)
	if err != nil {
		return nil, err
	}
	shape := map[string]any{"delay": s.Delay.String(), "jitter": s.Jitter.String(), "rate": s.Rate, "loss": s.Loss}
	q := r.URL.Query()
	switch {
	case q.Has("session"):
		id, err := server.SessionParam(r, true)
		if err != nil {
			return nil, err
		}
		return map[string]any{"session": id, "shape": shape}, h.c.SetSessionShape(id, s)
	case q.Has("member"):
		n, err := memberParam(r, "member", true)
		if err != nil {
			return nil, err
		}
		return map[string]any{"member": n, "shape": shape}, h.c.SetMemberShape(n, s)
	case q.Has("from") || q.Has("to"):
		from, to, err := directionParams(r)
		if err != nil {
			return nil, err
		}
		return map[string]any{"from": from, "to": to, "shape": shape}, h.c.SetLinkShape(from, to, s)
	}
	return nil, controlhttp.BadRequest("name the link: member=N (all its links), session=ID (its client's), or from=N&to=M (one way between members)")
}

func (h *handler) leader(r *http.Request) (any, error) {
	wait := h.o.Wait
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, controlhttp.BadRequest("wait must be a duration such as 30s (got %q)", v)
		}
		wait = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	n, err := h.c.Leader(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"leader": n, "address": h.o.Addrs[n-1]}, nil
}

// memberView is one member in /members.
type memberView struct {
	Member  int    `json:"member"`
	Address string `json:"address"`
	Running bool   `json:"running"`
	Paused  bool   `json:"paused"`
	// Role is leader, follower or stopped; Leader the member it names
	// as its leader (0 for none).
	Role   string `json:"role"`
	Leader int    `json:"leader"`
}

func (h *handler) members(*http.Request) (any, error) {
	out := []memberView{}
	for i, m := range h.c.Members() {
		v := memberView{Member: i + 1, Address: h.o.Addrs[i], Role: "stopped", Paused: h.c.Paused(i + 1)}
		if srv := m.Server(); srv != nil {
			v.Running, v.Role, v.Leader = true, srv.State().String(), int(srv.Replication().LeaderID)
		}
		out = append(out, v)
	}
	lead, ok := h.c.LeaderNow()
	if !ok {
		lead = 0
	}
	return map[string]any{"members": out, "leader": lead}, nil
}

func (h *handler) expire(r *http.Request) (any, error) {
	id, err := server.SessionParam(r, true)
	if err != nil {
		return nil, err
	}
	ctx, cancel := h.ctx()
	defer cancel()
	return map[string]any{"expired": id}, h.c.ExpireSession(ctx, id)
}

func (h *handler) drop(r *http.Request) (any, error) {
	id, err := server.SessionParam(r, false)
	if err != nil {
		return nil, err
	}
	n, err := memberParam(r, "member", false)
	if err != nil {
		return nil, err
	}
	switch {
	case id != 0:
		return map[string]any{"dropped": 1, "session": id}, h.c.DropConnection(id)
	case n != 0:
		m, err := h.c.Member(n)
		if err != nil {
			return nil, err
		}
		srv, err := m.server()
		if err != nil {
			return nil, err
		}
		return map[string]any{"dropped": srv.DropAll(), "member": n}, nil
	}
	return map[string]any{"dropped": h.c.DropAll()}, nil
}

func (h *handler) advance(r *http.Request) (any, error) {
	d, keep, err := server.AdvanceParams(r)
	if err != nil {
		return nil, err
	}
	if !r.URL.Query().Has("keep_connected") {
		keep = h.o.KeepConnected
	}
	if err := h.c.Advance(d, keep); err != nil {
		return nil, err
	}
	return map[string]any{"advanced": d.String(), "now": h.c.members[0].clock.Now().UTC().Format(time.RFC3339Nano)}, nil
}

// sessions lists the sessions as the leader knows them (any running
// member when none leads), with the member each client is connected to.
func (h *handler) sessions(*http.Request) (any, error) {
	var from *server.Server
	if lead, ok := h.c.LeaderNow(); ok {
		from = h.c.members[lead-1].Server()
	}
	for _, m := range h.c.members {
		if from == nil {
			from = m.Server()
		}
	}
	out := []server.ControlSession{}
	if from == nil {
		return map[string]any{"sessions": out}, nil
	}
	for _, ss := range from.Snapshot(monitor.PartSessions).Sessions {
		cs := server.NewControlSession(ss)
		cs.Member, cs.Connected = 0, false
		if n, ok := h.c.MemberOf(ss.ID); ok {
			cs.Member, cs.Connected = n, true
		}
		out = append(out, cs)
	}
	return map[string]any{"sessions": out}, nil
}

func (h *handler) addMember(r *http.Request) (any, error) {
	observer := false
	if v := r.URL.Query().Get("observer"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, controlhttp.BadRequest("observer must be true or false (got %q)", v)
		}
		observer = b
	}
	if h.o.Grow == nil {
		return nil, errors.New("this ensemble cannot start members")
	}
	n, addr, err := h.o.Grow()
	if err != nil {
		return nil, err
	}
	h.o.Addrs = append(h.o.Addrs, addr)
	ctx, cancel := h.ctx()
	defer cancel()
	cfg, err := h.c.Join(ctx, n, observer)
	if err != nil {
		return nil, err
	}
	return map[string]any{"added": n, "address": addr, "observer": observer, "config": cfg.Text()}, nil
}

func (h *handler) removeMember(r *http.Request) (any, error) {
	n, err := memberParam(r, "member", true)
	if err != nil {
		return nil, err
	}
	if _, err := h.c.Member(n); err != nil {
		return nil, err
	}
	ctx, cancel := h.ctx()
	defer cancel()
	cfg, err := h.c.Reconfigure(ctx, nil, []uint64{uint64(n)})
	if err != nil {
		return nil, err
	}
	return map[string]any{"removed": n, "config": cfg.Text()}, nil
}
