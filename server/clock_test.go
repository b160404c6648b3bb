package server

import (
	"testing"
	"time"

	"github.com/hutchzk/hutch/clock"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// TestExpiryFollowsTheClock: session expiry runs on the injected clock, so
// a test moves time instead of sleeping: a silent session survives
// nine-tenths of its timeout and is closed, with its ephemeral, once the
// clock passes timeout+tick.
func TestExpiryFollowsTheClock(t *testing.T) {
	const tick = 100 * time.Millisecond
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := startServer(t, Config{TickTime: tick, Clock: fake})
	r := dialRaw(t, s.Addr().String())
	resp := r.handshake(1000, 0, nil)
	r.send(1, wire.OpCreate, &wire.CreateRequest{Path: "/mine", Flags: wire.ModeEphemeral,
		ACL: []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}})
	if h, _ := r.reply(); h.Err != wire.CodeOK {
		t.Fatalf("create: %v", h.Err)
	}
	// The expiry and cleanup loops are waiting on the clock.
	advance := func(d time.Duration) {
		for ; d > 0; d -= tick / 2 {
			if !fake.WaitPending(2, 10*time.Second) {
				t.Fatal("the server's loops are not waiting on the clock")
			}
			fake.Advance(tick / 2)
		}
	}
	alive := func() bool {
		_, _, ok := s.db.Session(resp.SessionID)
		return ok
	}
	advance(900 * time.Millisecond)
	if !alive() {
		t.Fatal("session closed before its timeout")
	}
	advance(300 * time.Millisecond)
	waitFor(t, 10*time.Second, "the session to close", func() bool { return !alive() })
	r.expectClosed()
	var exists bool
	s.db.Read(func(v *zkdb.View) { _, err := v.Tree.Exists("/mine"); exists = err == nil })
	if exists {
		t.Fatal("ephemeral outlived its session")
	}
}

// TestExpiryGivesBackAStall: when the whole server was held up (the clock
// jumps past a session's deadline before its expiry loop or its readers
// could run), the session is not blamed: its touch, still unread, arrives
// after the stall and it lives on. Without the shift it expired at once.
func TestExpiryGivesBackAStall(t *testing.T) {
	const tick = 100 * time.Millisecond
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := startServer(t, Config{TickTime: tick, Clock: fake})
	r := dialRaw(t, s.Addr().String())
	resp := r.handshake(1000, 0, nil)
	if !fake.WaitPending(2, 10*time.Second) {
		t.Fatal("the server's loops are not waiting on the clock")
	}
	fake.Jump(1500 * time.Millisecond) // past the 1s timeout (+tick)
	// The expiry loop has run and gone back to sleep.
	if !fake.WaitPending(2, 10*time.Second) {
		t.Fatal("the expiry loop did not come back to the clock")
	}
	if _, _, ok := s.db.Session(resp.SessionID); !ok {
		t.Fatal("the session expired for the server's own stall")
	}
	// The client's ping, sent during the stall, is read after it.
	r.send(-2, wire.OpPing, nil)
	if h, _ := r.reply(); h.Xid != wire.XidPing {
		t.Fatalf("ping answered with xid %d", h.Xid)
	}
}
