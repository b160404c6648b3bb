package hutchtest

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/trace"
)

// timed returns how long f took.
func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// fastest returns the shortest of five runs of f: what an unshaped link
// costs, free of the odd stall of a loaded machine.
func fastest(f func()) time.Duration {
	best := time.Hour
	for range 5 {
		best = min(best, timed(f))
	}
	return best
}

// TestClientShape: a client's link slowed on the server's side makes its
// requests slow, both ways, and only its own; restored, it is fast again;
// the shape follows the client across a reconnection.
func TestClientShape(t *testing.T) {
	srv := Start(t)
	slow, _ := srv.Connect(10 * time.Second)
	fast, _ := srv.Connect(10 * time.Second)
	_, err := slow.Create("/x", nil, 0, open)
	must(t, err)

	srv.SetClientShape(slow.SessionID(), Shape{Delay: 100 * time.Millisecond})
	if took := timed(func() { _, _, err = slow.Get("/x") }); err != nil || took < 200*time.Millisecond {
		t.Fatalf("a read over a link delayed 100ms each way took %v (%v)", took, err)
	}
	if took := fastest(func() { _, _, err = fast.Get("/x") }); err != nil || took > 100*time.Millisecond {
		t.Fatalf("another client's read took %v (%v)", took, err)
	}
	srv.DropConnection(slow.SessionID())
	srv.WaitForNext("the slow client to re-attach", func(e trace.Event) bool {
		return e.Kind == trace.SessionAttached && e.Session == slow.SessionID()
	})
	if took := timed(func() { _, _, err = slow.Get("/x") }); err != nil || took < 200*time.Millisecond {
		t.Fatalf("after reconnecting, a read took %v (%v)", took, err)
	}
	srv.SetClientShape(slow.SessionID(), Shape{})
	if took := fastest(func() { _, _, err = slow.Get("/x") }); err != nil || took > 100*time.Millisecond {
		t.Fatalf("a read over a restored link took %v (%v)", took, err)
	}
}

// TestEnsembleShapes: a member whose links are slowed answers slowly and
// slows the writes it takes part in; a lossy link between members costs
// retransmission timeouts; Heal restores everything.
func TestEnsembleShapes(t *testing.T) {
	e := StartEnsemble(t, 3)
	lead := e.Leader()
	follower := lead%3 + 1
	c, _ := e.Member(follower).Connect(10 * time.Second)
	_, err := c.Create("/x", nil, 0, open)
	must(t, err)
	e.SetMemberShape(follower, Shape{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond})
	if took := timed(func() { _, _, err = c.Get("/x") }); err != nil || took < 180*time.Millisecond {
		t.Fatalf("a read from a slowed member took %v (%v)", took, err)
	}
	e.Heal()
	if took := fastest(func() { _, _, err = c.Get("/x") }); err != nil || took > 100*time.Millisecond {
		t.Fatalf("a read after Heal took %v (%v)", took, err)
	}
	// A write from the follower is forwarded to the leader: delaying
	// that one direction delays the write.
	e.SetLinkShape(follower, lead, Shape{Delay: 150 * time.Millisecond})
	if took := timed(func() { _, err = c.Set("/x", []byte("1"), -1) }); err != nil || took < 150*time.Millisecond {
		t.Fatalf("a write forwarded over a delayed link took %v (%v)", took, err)
	}
	e.Heal()
	if lead2 := e.WaitLeader(); lead2 < 1 {
		t.Fatal("no leader after Heal")
	}
}

// TestMemberOfAndEnsembleViews: MemberOf names the member a client is
// connected to, and follows it when it moves; the ensemble's WaitFor
// finds a transaction on whichever member applies it first, its Events
// list each transaction once, and its Tree is the leader's.
func TestMemberOfAndEnsembleViews(t *testing.T) {
	e := StartEnsemble(t, 3)
	c, _ := e.Member(2).Connect(10 * time.Second)
	if n, ok := e.MemberOf(c.SessionID()); !ok || n != 2 {
		t.Fatalf("MemberOf = %d, %v; the client is on member 2", n, ok)
	}
	// A client of the whole ensemble moves when its member dies.
	all, _ := e.Connect(10 * time.Second)
	on, ok := e.MemberOf(all.SessionID())
	if !ok {
		t.Fatal("the ensemble's client is on no member")
	}
	e.Kill(on)
	waitUntil(t, "the client to move", func() bool {
		n, ok := e.MemberOf(all.SessionID())
		return ok && n != on
	})
	e.Restart(on)

	_, err := c.Create("/seen", []byte("v"), 0, open)
	must(t, err)
	n, ev := e.WaitFor("the create", By(c.SessionID(), Succeeded("create", "/seen")))
	if n < 1 || ev.Path != "/seen" {
		t.Fatalf("WaitFor: member %d, %v", n, ev)
	}
	if e.Tree()["/seen"] != "v" {
		t.Fatalf("the leader's tree: %v", e.Tree())
	}
	waitUntil(t, "every member to apply it", func() bool {
		for i := 1; i <= 3; i++ {
			if _, ok := e.Member(i).Tree()["/seen"]; !ok {
				return false
			}
		}
		return true
	})
	creates := 0
	var last uint64
	for _, ev := range e.Events() {
		if ev.Seq != last+1 {
			t.Fatalf("Seq %d after %d", ev.Seq, last)
		}
		last = ev.Seq
		if ev.Kind == trace.TxnApplied && ev.Path == "/seen" {
			creates++
		}
	}
	if creates != 1 {
		t.Fatalf("the ensemble's events list the create %d times", creates)
	}
}

// TestKeepConnectedSessions: with KeepConnectedSessions an hour of fake
// time ages a TTL node past its TTL while the connected client's session
// lives on, and a session with no client connected expires; with
// FakeClock alone the connected session expires too.
func TestKeepConnectedSessions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opt       Option
		liveAfter bool
	}{
		{"KeepConnectedSessions", KeepConnectedSessions(), true},
		{"FakeClock", FakeClock(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := Start(t, tc.opt, ContainerCheckInterval(time.Minute))
			c, _ := srv.Connect(10 * time.Second)
			gone, _ := srv.Connect(10 * time.Second)
			_, err := c.CreateTTL("/ttl", nil, zk.FlagTTL, open, time.Minute)
			must(t, err)
			_, err = c.Create("/mine", nil, zk.FlagEphemeral, open)
			must(t, err)
			_, err = gone.Create("/gone", nil, zk.FlagEphemeral, open)
			must(t, err)
			gone.Close()
			srv.WaitFor("the closed client to go", Closed(gone.SessionID()))
			srv.Advance(time.Hour)
			tree := srv.Tree()
			if _, ok := tree["/ttl"]; ok {
				t.Error("a TTL node an hour past its minute is still there")
			}
			if _, ok := tree["/mine"]; ok != tc.liveAfter {
				t.Errorf("the connected client's ephemeral there: %v, want %v", ok, tc.liveAfter)
			}
		})
	}
}
