package conformance

import (
	"errors"
	"fmt"
	"log"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// connectGoZK opens a go-zookeeper session to addr and waits until it has
// one. The connection is closed when the test ends; the client's logs are
// shown if it failed.
func connectGoZK(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	logs := newLogBuffer()
	dumpOnFailure(t, "go-zookeeper log ("+addr+")", logs)
	conn, events, err := zk.Connect([]string{addr}, 10*time.Second,
		zk.WithLogger(log.New(logs, "", log.Lmicroseconds)))
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	t.Cleanup(conn.Close)
	timer := time.NewTimer(commandTimeout)
	defer timer.Stop()
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-timer.C:
			t.Fatalf("no session with %s within %v (state %v)", addr, commandTimeout, conn.State())
		}
	}
}

// waitEvent waits for a watch to fire and checks what it reports.
func waitEvent(t *testing.T, what string, ch <-chan zk.Event, typ zk.EventType, path string) {
	t.Helper()
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	select {
	case ev := <-ch:
		if ev.Type != typ || ev.Path != path || ev.Err != nil {
			t.Errorf("%s: event {Type:%v Path:%q Err:%v}, want {Type:%v Path:%q}", what, ev.Type, ev.Path, ev.Err, typ, path)
		}
		if ev.State != zk.StateSyncConnected {
			t.Errorf("%s: event state %v, want %v", what, ev.State, zk.StateSyncConnected)
		}
	case <-timer.C:
		t.Errorf("%s: no %v event for %s within %v", what, typ, path, eventTimeout)
	}
}

// noEvent checks that a watch has not fired. Call it after a reply on the
// same session: the server sends a change's events before replies to later
// requests, so an event that was due is in the channel by then.
func noEvent(t *testing.T, what string, ch <-chan zk.Event) {
	t.Helper()
	select {
	case ev := <-ch:
		t.Errorf("%s: unexpected event {Type:%v Path:%q}", what, ev.Type, ev.Path)
	default:
	}
}

var sequential = regexp.MustCompile(`^/gozk/n-(\d{10})$`)

// TestGoZK drives each target with go-zookeeper/zk through the calls
// applications make most: ephemeral sequential create, list, get and exists
// with watches, stat fields, conditional set and delete, and the events
// those fire in another session.
func TestGoZK(t *testing.T) {
	forEachTarget(t, func(t *testing.T, addr string, l *ledger) {
		a := connectGoZK(t, addr)
		b := connectGoZK(t, addr)
		acl := zk.WorldACL(zk.PermAll)
		owners := map[int64]string{0: "none", a.SessionID(): "a", b.SessionID(): "b"}

		if p, err := a.Create("/gozk", []byte("parent"), 0, acl); err != nil || p != "/gozk" {
			t.Fatalf("create /gozk = %q, %v", p, err)
		}
		// An exists watch on a missing node fires when it is created.
		ok, _, created, err := b.ExistsW("/gozk/n-0000000000")
		if err != nil || ok {
			t.Fatalf("exists /gozk/n-0000000000 before create = %v, %v", ok, err)
		}

		var nodes []string
		for i, data := range []string{"hello", "second"} {
			p, err := a.Create("/gozk/n-", []byte(data), zk.FlagEphemeral|zk.FlagSequence, acl)
			if err != nil {
				t.Fatalf("create -s -e /gozk/n-: %v", err)
			}
			m := sequential.FindStringSubmatch(p)
			if m == nil || m[1] != fmt.Sprintf("%010d", i) {
				t.Fatalf("create -s -e #%d returned %q, want /gozk/n-%010d", i, p, i)
			}
			nodes = append(nodes, p)
			l.record("create -s -e: %s", p)
		}
		node := nodes[0]
		waitEvent(t, "exists watch", created, zk.EventNodeCreated, node)

		children, pst, err := a.Children("/gozk")
		slices.Sort(children)
		l.record("ls /gozk: %v %s", children, statLine(pst, owners))
		if err != nil || !slices.Equal(children, []string{"n-0000000000", "n-0000000001"}) {
			t.Errorf("ls /gozk = %v, %v; want [n-0000000000 n-0000000001]", children, err)
		}

		data, st, changed, err := a.GetW(node)
		if err != nil || string(data) != "hello" {
			t.Fatalf("get -w %s = %q, %v; want hello", node, data, err)
		}
		l.record("get %s: %s", node, statLine(st, owners))
		checkStat(t, "get "+node, st, zk.Stat{
			Version: 0, Cversion: 0, Aversion: 0, DataLength: 5, NumChildren: 0,
			EphemeralOwner: a.SessionID(),
		})
		if st.Czxid <= 0 || st.Czxid != st.Mzxid || st.Czxid != st.Pzxid {
			t.Errorf("new node %s: czxid %#x, mzxid %#x, pzxid %#x; want all equal and > 0", node, st.Czxid, st.Mzxid, st.Pzxid)
		}
		if st.Ctime <= 0 || st.Ctime != st.Mtime {
			t.Errorf("new node %s: ctime %d, mtime %d; want equal and > 0", node, st.Ctime, st.Mtime)
		} else if d := time.Since(time.UnixMilli(st.Ctime)); d < -time.Minute || d > time.Minute {
			t.Errorf("new node %s: ctime %v is %v away from now", node, time.UnixMilli(st.Ctime), d)
		}
		_, second, err := a.Exists(nodes[1])
		if err != nil {
			t.Fatal(err)
		}
		if second.Czxid != st.Czxid+1 {
			t.Errorf("czxid of %s = %#x, want %#x + 1: one zxid per transaction", nodes[1], second.Czxid, st.Czxid)
		}
		checkStat(t, "stat /gozk", pst, zk.Stat{
			Czxid: pst.Czxid, Mzxid: pst.Mzxid, Ctime: pst.Ctime, Mtime: pst.Mtime,
			Version: 0, Cversion: 2, DataLength: 6, NumChildren: 2, Pzxid: second.Czxid,
		})

		// A watch on the parent's children, a watch on the node's data: a
		// set from another session fires the data watch only.
		_, _, childrenChanged, err := a.ChildrenW("/gozk")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Set(node, []byte("x"), 7); !errors.Is(err, zk.ErrBadVersion) {
			t.Errorf("set %s with version 7 = %v, want %v", node, err, zk.ErrBadVersion)
		}
		st2, err := b.Set(node, []byte("world!"), 0)
		if err != nil {
			t.Fatalf("set %s: %v", node, err)
		}
		l.record("set %s: %s", node, statLine(st2, owners))
		waitEvent(t, "get watch", changed, zk.EventNodeDataChanged, node)
		if st2.Version != 1 || st2.DataLength != 6 || st2.Czxid != st.Czxid || st2.Mzxid <= st.Mzxid || st2.EphemeralOwner != a.SessionID() {
			t.Errorf("stat after set = %+v; want version 1, dataLength 6, czxid %#x, mzxid > %#x, owner %#x", *st2, st.Czxid, st.Mzxid, a.SessionID())
		}
		if data, st3, err := a.Get(node); err != nil || string(data) != "world!" || *st3 != *st2 {
			t.Errorf("get after set = %q, %+v, %v; want world! and the stat set returned %+v", data, st3, err, *st2)
		}
		// The get's reply came after any event the set fired for a.
		noEvent(t, "children watch after a set on a child", childrenChanged)

		// Errors map to the client's sentinel errors.
		for _, c := range []struct {
			what string
			err  error
			want error
		}{
			{"create existing", createErr(a, "/gozk", 0), zk.ErrNodeExists},
			{"create under ephemeral", createErr(a, node+"/c", 0), zk.ErrNoChildrenForEphemerals},
			{"create without parent", createErr(a, "/gozk/none/c", 0), zk.ErrNoNode},
			{"delete non-empty", a.Delete("/gozk", -1), zk.ErrNotEmpty},
			{"delete missing", a.Delete("/gozk/none", -1), zk.ErrNoNode},
			{"delete bad version", a.Delete(node, 0), zk.ErrBadVersion},
			{"get missing", getErr(a, "/gozk/none"), zk.ErrNoNode},
		} {
			if !errors.Is(c.err, c.want) {
				t.Errorf("%s: err = %v, want %v", c.what, c.err, c.want)
			}
		}

		// Delete from the other session: the exists watch reports
		// NodeDeleted on the node, the children watch NodeChildrenChanged
		// on the parent.
		_, _, deleted, err := a.ExistsW(node)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Delete(node, 1); err != nil {
			t.Fatalf("delete %s: %v", node, err)
		}
		waitEvent(t, "exists watch", deleted, zk.EventNodeDeleted, node)
		waitEvent(t, "children watch", childrenChanged, zk.EventNodeChildrenChanged, "/gozk")
		if ok, _, err := b.Exists(node); err != nil || ok {
			t.Errorf("exists %s after delete = %v, %v", node, ok, err)
		}

		// Closing a's session removes its other ephemeral node.
		_, _, gone, err := b.ExistsW(nodes[1])
		if err != nil {
			t.Fatal(err)
		}
		a.Close()
		waitEvent(t, "exists watch on a's ephemeral", gone, zk.EventNodeDeleted, nodes[1])
		children, pst, err = b.Children("/gozk")
		if err != nil || len(children) != 0 {
			t.Errorf("ls /gozk after a's session closed = %v, %v; want []", children, err)
		}
		// pzxid is the zxid of a's closeSession, which deleted the node.
		l.record("ls /gozk after a closed: %v %s", children, statLine(pst, owners))
	})
}

// statLine shows a stat for a ledger: session ids by name, times left out.
func statLine(st *zk.Stat, owners map[int64]string) string {
	if st == nil {
		return "no stat"
	}
	owner, ok := owners[st.EphemeralOwner]
	if !ok {
		owner = "unknown session"
	}
	return fmt.Sprintf("czxid=%#x mzxid=%#x pzxid=%#x version=%d cversion=%d aversion=%d dataLength=%d numChildren=%d owner=%s",
		st.Czxid, st.Mzxid, st.Pzxid, st.Version, st.Cversion, st.Aversion, st.DataLength, st.NumChildren, owner)
}

// checkStat compares every field of got with want.
func checkStat(t *testing.T, what string, got *zk.Stat, want zk.Stat) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: no stat", what)
		return
	}
	want.Czxid, want.Mzxid, want.Pzxid = pick(want.Czxid, got.Czxid), pick(want.Mzxid, got.Mzxid), pick(want.Pzxid, got.Pzxid)
	want.Ctime, want.Mtime = pick(want.Ctime, got.Ctime), pick(want.Mtime, got.Mtime)
	if *got != want {
		t.Errorf("%s: stat\n got %+v\nwant %+v", what, *got, want)
	}
}

// pick returns want, or got when want is zero: zxids and times are checked
// relative to each other by the caller, not against fixed values.
func pick(want, got int64) int64 {
	if want == 0 {
		return got
	}
	return want
}

func createErr(c *zk.Conn, path string, flags int32) error {
	_, err := c.Create(path, nil, flags, zk.WorldACL(zk.PermAll))
	return err
}

func getErr(c *zk.Conn, path string) error {
	_, _, err := c.Get(path)
	return err
}
