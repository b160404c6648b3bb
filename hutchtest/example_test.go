package hutchtest_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/hutchtest"
	"github.com/hutchzk/hutch/trace"
)

// A lock test in a few lines: two clients of one in-memory server; the
// holder's session expires on the server, so the other gets the lock.
func TestLockPassesOnExpiry(t *testing.T) {
	srv := hutchtest.Start(t)
	a, _ := srv.Connect(10 * time.Second)
	b, _ := srv.Connect(10 * time.Second)

	if err := zk.NewLock(a, "/lock", zk.WorldACL(zk.PermAll)).Lock(); err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 1)
	go func() { locked <- zk.NewLock(b, "/lock", zk.WorldACL(zk.PermAll)).Lock() }()
	srv.WaitFor("b to queue behind a", func(e trace.Event) bool {
		return e.Op == "create" && e.Session == b.SessionID()
	})

	srv.ExpireSession(a.SessionID())
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
}

// The same with time: on the fake clock the holder's session times out
// when the test moves time past its 10 s timeout (and a 2 s tick), not a
// moment before, and no real time passes: its lock node goes with it.
func TestLockPassesOnTimeout(t *testing.T) {
	srv := hutchtest.Start(t, hutchtest.FakeClock())
	a, aEvents := srv.Connect(10 * time.Second)
	if err := zk.NewLock(a, "/lock", zk.WorldACL(zk.PermAll)).Lock(); err != nil {
		t.Fatal(err)
	}

	srv.Advance(9 * time.Second)
	if len(srv.Sessions()) != 1 {
		t.Fatal("the holder's session timed out early")
	}
	srv.Advance(5 * time.Second)
	srv.WaitFor("the holder's expiry", hutchtest.Expired(a.SessionID()))
	for ev := range aEvents {
		if ev.State == zk.StateExpired {
			break
		}
	}
	if children := srv.Tree(); len(children) != 1 { // only /lock itself
		t.Fatalf("tree after the expiry: %v", children)
	}
}
