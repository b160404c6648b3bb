package server

import (
	"bytes"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/faultnet"
	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkclient"
	"github.com/hutchzk/hutch/zkdb"
)

// roHandshake sends a connect request and returns the response, or ok
// false if the server closed the connection instead.
func (r *rawClient) roHandshake(req wire.ConnectRequest) (wire.ConnectResponse, bool) {
	r.tb.Helper()
	if req.Passwd == nil {
		req.Passwd = make([]byte, 16)
	}
	if req.Timeout == 0 {
		req.Timeout = 6000
	}
	r.writeRaw(frame(func(e *wire.Encoder) { req.Encode(e) }))
	body, err := r.tryReadFrame(10 * time.Second)
	if err != nil {
		return wire.ConnectResponse{}, false
	}
	var resp wire.ConnectResponse
	d := wire.NewDecoder(body)
	resp.Decode(d)
	if d.Err() != nil {
		r.tb.Fatalf("decode connect response: %v", d.Err())
	}
	return resp, true
}

// call sends one request and reads its reply header.
func (r *rawClient) call(xid int32, op wire.OpCode, body encodable) (wire.ReplyHeader, *wire.Decoder) {
	r.tb.Helper()
	r.send(xid, op, body)
	for {
		h, d := r.reply()
		if h.Xid != wire.XidNotification {
			return h, d
		}
	}
}

// fourLetter asks s a four-letter word.
func fourLetter(tb testing.TB, s *Server, word string) string {
	tb.Helper()
	out, err := realzk.FourLetterWord(s.Addr().String(), word, 10*time.Second)
	if err != nil {
		tb.Fatalf("%s: %v", word, err)
	}
	return out
}

// isro is s's answer to isro, "" when it answers none.
func isro(s *Server) string {
	out, _ := realzk.FourLetterWord(s.Addr().String(), "isro", 10*time.Second)
	return out
}

// TestReadOnlyMode cuts one member of three off (readonlymode.enabled) and
// checks what it does then, as ZooKeeper's ReadOnlyZooKeeperServer does,
// and what it does when the others come back: read-write clients and
// sessions of the ensemble are refused, a read-only client gets a session
// of the member's own (the connect response says readOnly) and reads, its
// writes, sync, check and multi get NOTREADONLY; the member says ro and
// read-only; when it hears a leader again it closes the read-only
// connections, the read-only session is gone, and the ensemble's session
// it refused comes back, not expired.
func TestReadOnlyMode(t *testing.T) {
	network := faultnet.New()
	nodes := startClusterOn(t, network, 3, 200*time.Millisecond, func(_ uint64, cfg *Config) { cfg.ReadOnlyMode = true })
	leader := leaderOf(nodes)
	cut := followerOf(nodes, leader)
	// A session of the ensemble, held on the member that will be cut off,
	// with a node it made.
	g := dialRaw(t, cut.Addr().String())
	gs := g.handshake(6000, 0, nil)
	if h, _ := g.call(1, wire.OpCreate, &wire.CreateRequest{Path: "/ro", Data: []byte("data"), ACL: worldAll}); h.Err != wire.CodeOK {
		t.Fatalf("create: %v", h.Err)
	}
	waitFor(t, 10*time.Second, "the node on every member", func() bool {
		for _, s := range nodes {
			var err error
			s.db.Read(func(v *zkdb.View) { _, _, err = v.Tree.GetData("/ro", nil) })
			if err != nil {
				return false
			}
		}
		return true
	})
	last := cut.db.LastZxid()
	if got := fourLetter(t, cut, "isro"); got != "rw" {
		t.Fatalf("isro before: %q", got)
	}

	var others []string
	for _, s := range nodes {
		if s != cut {
			others = append(others, s.cfg.Raft.RaftAddr)
		}
	}
	cutAt := time.Now()
	network.Isolate(cut.cfg.Raft.RaftAddr, others...)
	waitFor(t, 20*time.Second, "read-only mode", func() bool { return isro(cut) == "ro" })
	if took := time.Since(cutAt); took < ReadOnlyGrace(200*time.Millisecond) {
		t.Fatalf("read-only after %v, before the grace of %v", took, ReadOnlyGrace(200*time.Millisecond))
	}
	g.expectClosed() // the read-write client went when read-only mode began
	srvr := fourLetter(t, cut, "srvr")
	if !strings.Contains(srvr, "\nREAD-ONLY mode; serving only read-only clients\n") || !strings.Contains(srvr, "\nMode: read-only\n") {
		t.Fatalf("srvr in read-only mode:\n%s", srvr)
	}
	if mntr := fourLetter(t, cut, "mntr"); !strings.Contains(mntr, "zk_server_state\tread-only\n") {
		t.Fatalf("mntr in read-only mode:\n%s", mntr)
	}

	for _, refused := range []struct {
		what string
		req  wire.ConnectRequest
	}{
		{"a client that did not ask for read-only", wire.ConnectRequest{}},
		{"a session of the ensemble", wire.ConnectRequest{ReadOnly: true, SessionID: gs.SessionID, Passwd: gs.Passwd}},
		{"a client that saw a newer zxid", wire.ConnectRequest{ReadOnly: true, LastZxidSeen: last + 1}},
	} {
		if resp, ok := dialRaw(t, cut.Addr().String()).roHandshake(refused.req); ok {
			t.Fatalf("%s was answered %+v, not refused", refused.what, resp)
		}
	}

	c := dialRaw(t, cut.Addr().String())
	resp, ok := c.roHandshake(wire.ConnectRequest{ReadOnly: true, LastZxidSeen: last})
	if !ok || !resp.ReadOnly || resp.Timeout != gs.Timeout || resp.SessionID == 0 || resp.SessionID == gs.SessionID {
		t.Fatalf("read-only connect: %+v, %v", resp, ok)
	}
	xid := int32(0)
	call := func(op wire.OpCode, body encodable) (wire.ReplyHeader, *wire.Decoder) {
		xid++
		return c.call(xid, op, body)
	}
	h, d := call(wire.OpGetData, &wire.PathWatchRequest{Path: "/ro", Watch: true})
	var data wire.GetDataResponse
	data.Decode(d)
	if h.Err != wire.CodeOK || h.Zxid != last || string(data.Data) != "data" {
		t.Fatalf("getData: %+v %q", h, data.Data)
	}
	for _, r := range []struct {
		op   wire.OpCode
		body encodable
		want wire.Code
	}{
		{wire.OpExists, &wire.PathWatchRequest{Path: "/nope"}, wire.CodeNoNode},
		{wire.OpGetChildren2, &wire.PathWatchRequest{Path: "/"}, wire.CodeOK},
		{wire.OpAddWatch, &wire.AddWatchRequest{Path: "/", Mode: 1}, wire.CodeOK},
		{wire.OpCreate, &wire.CreateRequest{Path: "/w", ACL: worldAll}, wire.CodeNotReadOnly},
		{wire.OpCreate2, &wire.CreateRequest{Path: "/w", ACL: worldAll}, wire.CodeNotReadOnly},
		{wire.OpSetData, &wire.SetDataRequest{Path: "/ro", Version: -1}, wire.CodeNotReadOnly},
		{wire.OpDelete, &wire.DeleteRequest{Path: "/ro", Version: -1}, wire.CodeNotReadOnly},
		{wire.OpSetACL, &wire.SetACLRequest{Path: "/ro", ACL: worldAll, Version: -1}, wire.CodeNotReadOnly},
		{wire.OpCheck, &wire.CheckVersionRequest{Path: "/ro", Version: -1}, wire.CodeNotReadOnly},
		{wire.OpSync, &wire.PathRequest{Path: "/"}, wire.CodeNotReadOnly},
		{wire.OpMulti, nil, wire.CodeNotReadOnly},
		{wire.OpReconfig, nil, wire.CodeNotReadOnly},
	} {
		if h, _ := call(r.op, r.body); h.Err != r.want || h.Zxid != last {
			t.Errorf("%v in read-only mode: %v at zxid %#x, want %v at %#x", r.op, h.Err, h.Zxid, r.want, last)
		}
	}
	// The read-only session re-attaches here on another connection.
	c2 := dialRaw(t, cut.Addr().String())
	if again, ok := c2.roHandshake(wire.ConnectRequest{ReadOnly: true, SessionID: resp.SessionID, Passwd: resp.Passwd}); !ok || again.SessionID != resp.SessionID || !again.ReadOnly {
		t.Fatalf("read-only re-attach: %+v %v", again, ok)
	}
	c.expectClosed()
	// A read-only session expires here when its client is silent for its
	// timeout (ZooKeeper's local sessions).
	short := dialRaw(t, cut.Addr().String())
	brief, ok := short.roHandshake(wire.ConnectRequest{ReadOnly: true, Timeout: 400})
	if !ok || brief.Timeout != 400 {
		t.Fatalf("read-only connect with a short timeout: %+v, %v", brief, ok)
	}
	short.expectClosed()
	if resp, ok := dialRaw(t, cut.Addr().String()).roHandshake(wire.ConnectRequest{ReadOnly: true, SessionID: brief.SessionID, Passwd: brief.Passwd}); !ok || resp.Timeout != 0 {
		t.Fatalf("re-attaching an expired read-only session: %+v, %v", resp, ok)
	}

	network.Heal()
	c2.expectClosed() // read-only mode ended
	waitFor(t, 20*time.Second, "read-write again", func() bool { return isro(cut) == "rw" })
	if resp, ok := dialRaw(t, cut.Addr().String()).roHandshake(wire.ConnectRequest{ReadOnly: true, SessionID: resp.SessionID, Passwd: resp.Passwd}); !ok || resp.Timeout != 0 {
		t.Fatalf("the read-only session after read-only mode: %+v, %v; want expired", resp, ok)
	}
	// The ensemble's session, refused while the member was cut off, is
	// still there: no leader, no expiry.
	back, ok := dialRaw(t, cut.Addr().String()).roHandshake(wire.ConnectRequest{SessionID: gs.SessionID, Passwd: gs.Passwd})
	if !ok || back.SessionID != gs.SessionID || back.Timeout == 0 || back.ReadOnly || !bytes.Equal(back.Passwd, gs.Passwd) {
		t.Fatalf("the ensemble's session after read-only mode: %+v, %v", back, ok)
	}
}

// TestReadOnlyModeOff: without readonlymode.enabled a member cut off
// from its quorum serves nobody, read-only clients included.
func TestReadOnlyModeOff(t *testing.T) {
	network := faultnet.New()
	nodes := startClusterOn(t, network, 3, 200*time.Millisecond)
	cut := followerOf(nodes, leaderOf(nodes))
	var others []string
	for _, s := range nodes {
		if s != cut {
			others = append(others, s.cfg.Raft.RaftAddr)
		}
	}
	network.Isolate(cut.cfg.Raft.RaftAddr, others...)
	waitFor(t, 20*time.Second, "the member to refuse clients", func() bool { return refusesClients(t, cut) })
	// Past the grace after which the member would serve read-only
	// clients with the option: nothing to wait on but time.
	time.Sleep(ReadOnlyGrace(200 * time.Millisecond))
	if resp, ok := dialRaw(t, cut.Addr().String()).roHandshake(wire.ConnectRequest{ReadOnly: true}); ok {
		t.Fatalf("a read-only client was answered %+v", resp)
	}
	if cut.State().IsReadOnly() {
		t.Fatal("read-only mode without readonlymode.enabled")
	}
}

// worldAll is OPEN_ACL_UNSAFE in the wire's terms.
var worldAll = []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}

// TestReadOnlyClient: a client that may be served read-only (zkclient's
// CanBeReadOnly, the Java client's canBeReadOnly) connects to a member
// cut off from its quorum as ConnectedReadOnly, reads there and gets
// NOTREADONLY for a write; once a member of the majority is reachable it
// finds it (isro answers rw), leaves the read-only member and, having had
// only read-only sessions, starts a new session there, as ClientCnxn does.
func TestReadOnlyClient(t *testing.T) {
	network := faultnet.New()
	nodes := startClusterOn(t, network, 3, 200*time.Millisecond, func(_ uint64, cfg *Config) { cfg.ReadOnlyMode = true })
	cut := followerOf(nodes, leaderOf(nodes))
	var others []string
	var majority string
	for _, s := range nodes {
		if s != cut {
			others = append(others, s.cfg.Raft.RaftAddr)
			majority = s.Addr().String()
		}
	}
	setup, _ := dial(t, cut.Addr().String(), 10*time.Second)
	if _, err := setup.Create("/seen", []byte("v"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Sync("/"); err != nil {
		t.Fatal(err)
	}
	network.Isolate(cut.cfg.Raft.RaftAddr, others...)
	waitFor(t, 20*time.Second, "read-only mode", func() bool { return isro(cut) == "ro" })

	var reachMajority atomic.Bool
	var eventsMu sync.Mutex
	var states []int32
	c, err := zkclient.New(zkclient.Config{
		Servers:        []string{cut.Addr().String(), majority},
		SessionTimeout: 4 * time.Second,
		CanBeReadOnly:  true,
		Dial: func(addr string, timeout time.Duration) (net.Conn, error) {
			if addr == majority && !reachMajority.Load() {
				return nil, errors.New("not yet")
			}
			return net.DialTimeout("tcp", addr, timeout)
		},
		Watcher: func(ev zkclient.Event) {
			eventsMu.Lock()
			states = append(states, ev.State)
			eventsMu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, 20*time.Second, "a read-only session", c.ReadOnly)
	roSession := c.SessionID()
	if data, _, err := c.Get("/seen", false); err != nil || string(data) != "v" {
		t.Fatalf("read on the read-only member: %q %v", data, err)
	}
	if _, err := c.Create("/w", nil, worldAll, 0, 0); !zkclient.IsCode(err, wire.CodeNotReadOnly) {
		t.Fatalf("write on the read-only member: %v, want NOTREADONLY", err)
	}

	reachMajority.Store(true)
	waitFor(t, 30*time.Second, "the client to move to the majority", func() bool {
		return c.State() == zkclient.StateConnected && !c.ReadOnly()
	})
	if c.SessionID() == roSession {
		t.Fatal("the read-write session is the read-only one")
	}
	if _, err := c.Create("/w", nil, worldAll, 0, 0); err != nil {
		t.Fatalf("write after finding the majority: %v", err)
	}
	eventsMu.Lock()
	defer eventsMu.Unlock()
	want := []int32{wire.StateConnectedReadOnly, wire.StateDisconnected, wire.StateSyncConnected}
	if !slices.Equal(states, want) {
		t.Fatalf("session events %v, want %v", states, want)
	}
}
