package hutchtest

import (
	"reflect"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestEnsembleKillRestart: a client naming every member carries on when
// the leader is killed; the killed member, restarted from its log,
// catches up with what was written without it.
func TestEnsembleKillRestart(t *testing.T) {
	e := StartEnsemble(t, 3)
	c, _ := e.Connect(10 * time.Second)
	_, err := c.Create("/before", []byte("1"), 0, open)
	must(t, err)
	old := e.Leader()
	e.Kill(old)
	if next := e.Leader(); next == old {
		t.Fatalf("member %d still leads after it was killed", old)
	}
	waitUntil(t, "a write after the failover", func() bool {
		_, err := c.Create("/after", []byte("2"), 0, open)
		return err == nil || err == zk.ErrNodeExists
	})
	e.Restart(old)
	want := map[string]string{"/before": "1", "/after": "2"}
	waitUntil(t, "the restarted member to catch up", func() bool {
		return reflect.DeepEqual(e.Member(old).Tree(), want)
	})
}

// TestEnsemblePartition: the leader cut off from the others silently
// loses its place; the majority elects another, and a client of the
// minority moves to it. After Heal the old leader follows and holds the
// writes made without it.
func TestEnsemblePartition(t *testing.T) {
	e := StartEnsemble(t, 3)
	old := e.Leader()
	c, _ := e.Connect(10 * time.Second)
	e.Partition([]int{old})
	if next := e.Leader(); next == old {
		t.Fatalf("Leader() = %d, the member just cut off", old)
	}
	waitUntil(t, "a write during the partition", func() bool {
		_, err := c.Create("/during", nil, 0, open)
		return err == nil || err == zk.ErrNodeExists
	})
	if _, ok := e.Member(old).Tree()["/during"]; ok {
		t.Fatal("the cut-off member applied a write made without it")
	}
	e.Heal()
	waitUntil(t, "the old leader to catch up", func() bool {
		_, ok := e.Member(old).Tree()["/during"]
		return ok
	})
	if lead := e.WaitLeader(); e.Member(old).Server().State().Leads() && lead != old {
		t.Fatal("two leaders")
	}
}

// TestEnsembleCutOneWayAndPause: a follower that cannot reach the leader
// (while the leader reaches it) still applies the leader's writes; a
// paused follower applies nothing until it resumes.
func TestEnsembleCutOneWayAndPause(t *testing.T) {
	e := StartEnsemble(t, 3)
	lead := e.Leader()
	f1, f2 := lead%3+1, (lead+1)%3+1
	c, _ := e.Connect(10 * time.Second)

	e.CutOneWay(f1, lead)
	// A client of f1 loses its connection (f1 cannot forward its write)
	// and moves to another member.
	waitUntil(t, "a write with one link cut", func() bool {
		_, err := c.Create("/one-way", nil, 0, open)
		return err == nil || err == zk.ErrNodeExists
	})
	waitUntil(t, "the follower to hear the leader's write", func() bool {
		_, ok := e.Member(f1).Tree()["/one-way"]
		return ok
	})
	e.Heal()

	e.Pause(f2)
	if !e.Member(f2).Server().Paused() {
		t.Fatal("member not paused")
	}
	waitUntil(t, "a write with one member paused", func() bool {
		_, err := c.Create("/paused", nil, 0, open)
		return err == nil || err == zk.ErrNodeExists
	})
	if _, ok := e.Member(f2).Tree()["/paused"]; ok {
		t.Fatal("a paused member applied a write")
	}
	e.Resume(f2)
	waitUntil(t, "the resumed member to catch up", func() bool {
		_, ok := e.Member(f2).Tree()["/paused"]
		return ok
	})
}

// TestEnsembleExpireAndAdvance: ExpireSession goes through the leader
// and is replicated; on fake clocks Advance expires a session the leader
// has not heard from in fake time, on every member.
func TestEnsembleExpireAndAdvance(t *testing.T) {
	e := StartEnsemble(t, 3, FakeClock())
	a, aEvents := e.Connect(10 * time.Second)
	b, bEvents := e.Connect(10 * time.Second)
	_, err := a.Create("/a", nil, zk.FlagEphemeral, open)
	must(t, err)
	_, err = b.Create("/b", nil, zk.FlagEphemeral, open)
	must(t, err)

	e.ExpireSession(a.SessionID())
	waitState(t, aEvents, zk.StateExpired)
	for i := 1; i <= e.Size(); i++ {
		waitUntil(t, "the expiry on every member", func() bool {
			_, ok := e.Member(i).Tree()["/a"]
			return !ok
		})
	}
	if _, ok := e.Member(e.Leader()).Tree()["/b"]; !ok {
		t.Fatal("the other session's ephemeral went too")
	}

	e.Advance(15 * time.Second)
	if _, ok := e.Member(e.Leader()).Tree()["/b"]; ok {
		t.Fatal("session alive on the leader past its timeout in fake time")
	}
	waitState(t, bEvents, zk.StateExpired)
	for i := 1; i <= e.Size(); i++ {
		waitUntil(t, "the advance's expiry on every member", func() bool {
			_, ok := e.Member(i).Tree()["/b"]
			return !ok
		})
	}
}
