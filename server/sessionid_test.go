package server

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hutchzk/hutch/clock"
	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/session"
	"github.com/hutchzk/hutch/wire"
)

// TestSessionIDAfterClockStepBack: session ids carry the server's start
// time, so a durable node restarted with its clock where it was at its
// previous start mints the ids of sessions that are still live. The
// create must not take such a session over: the new client gets another
// id, and the first session keeps its ephemeral, password, timeout and
// owner. Before the fix the second client was handed the first session.
// The node then skips every id of its own in use, in one step.
func TestSessionIDAfterClockStepBack(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	raftAddr := fmt.Sprintf("127.0.0.1:%d", realzk.FreePort(t))
	open := func() *Server {
		t.Helper()
		s := New(Config{
			ListenAddr: "127.0.0.1:0",
			Logger:     testLogger(),
			Clock:      clock.NewFake(start), // the same time at every start
			Raft:       &raftstore.Config{NodeID: 1, RaftAddr: raftAddr, DataDir: dir},
		})
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		waitFor(t, 20*time.Second, "leadership", func() bool { return isLeader(s) })
		return s
	}
	createEphemeral := func(r *rawClient, path string) {
		t.Helper()
		r.send(1, wire.OpCreate, &wire.CreateRequest{Path: path, Flags: wire.ModeEphemeral,
			ACL: []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}})
		if h, _ := r.reply(); h.Err != wire.CodeOK {
			t.Fatalf("create %s: %v", path, h.Err)
		}
	}

	s := open()
	r := dialRaw(t, s.Addr().String())
	first := r.handshake(10000, 0, nil)
	if want := session.NewIDGenerator(1, start).Next(); first.SessionID != want {
		t.Fatalf("first session %#x, want %#x: the restart would not mint it again", first.SessionID, want)
	}
	createEphemeral(r, "/first")
	// More live sessions with the ids that follow: the restarted node must
	// skip them all, not collide with each in turn.
	const more = 4
	for range more {
		dialRaw(t, s.Addr().String()).handshake(10000, 0, nil)
	}
	_ = s.Close()

	s = open()
	waitFor(t, 20*time.Second, "the log to replay", func() bool {
		return slices.Equal(s.db.Ephemerals()[first.SessionID], []string{"/first"})
	})
	r = dialRaw(t, s.Addr().String())
	second := r.handshake(6000, 0, nil)
	if second.Timeout == 0 || second.SessionID == 0 {
		t.Fatalf("second client got no session: %+v", second)
	}
	if second.SessionID == first.SessionID {
		t.Fatalf("second client was handed the live session %#x", first.SessionID)
	}
	if want := first.SessionID + more + 1; second.SessionID != want {
		t.Fatalf("second session %#x, want %#x (past the ids in use)", second.SessionID, want)
	}
	createEphemeral(r, "/second")

	timeout, pw, ok := s.db.Session(first.SessionID)
	if !ok || timeout != 10*time.Second || !bytes.Equal(pw, first.Passwd) {
		t.Fatalf("first session now: timeout %v password %x (%v), want 10s %x", timeout, pw, ok, first.Passwd)
	}
	eph := s.db.Ephemerals()
	if !slices.Equal(eph[first.SessionID], []string{"/first"}) || !slices.Equal(eph[second.SessionID], []string{"/second"}) {
		t.Fatalf("ephemerals by session: %v", eph)
	}
	// The first client, reconnecting with its password, gets its session.
	back := dialRaw(t, s.Addr().String()).handshake(10000, first.SessionID, first.Passwd)
	if back.SessionID != first.SessionID || back.Timeout != 10000 {
		t.Fatalf("first client's re-attach: %+v", back)
	}
}
