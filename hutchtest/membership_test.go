package hutchtest

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestEnsembleMembership grows an ensemble of three by an observer, which
// serves and forwards a write, promotes it to participant, removes
// another member, which stops serving, and adds a fifth member: each
// change is in the membership and srvr, and every member left holds every
// write.
func TestEnsembleMembership(t *testing.T) {
	e := StartEnsemble(t, 3)
	mode := func(n int) string {
		for ln := range strings.SplitSeq(e.Member(n).FourLetterWord("srvr"), "\n") {
			if m, ok := strings.CutPrefix(ln, "Mode: "); ok {
				return m
			}
		}
		return "not serving"
	}
	write := func(n int, path string) {
		t.Helper()
		c, _ := e.Member(n).Connect(10 * time.Second)
		waitUntil(t, "a write through member "+path, func() bool {
			_, err := c.Create(path, nil, 0, open)
			return err == nil || err == zk.ErrNodeExists
		})
	}
	voters := func() int { return e.Membership().Voters() }

	obs := e.AddObserver()
	if obs != 4 || e.Size() != 4 || voters() != 3 {
		t.Fatalf("observer %d of %d members, %d voting", obs, e.Size(), voters())
	}
	waitUntil(t, "member 4 to serve as an observer", func() bool { return mode(obs) == "observer" })
	write(obs, "/through-observer")

	e.Promote(obs)
	if voters() != 4 {
		t.Fatalf("%d voters after promoting the observer: %s", voters(), e.Membership().Text())
	}
	waitUntil(t, "member 4 to serve as a participant", func() bool { m := mode(obs); return m == "follower" || m == "leader" })

	gone := 1
	if gone == e.Leader() {
		gone = 2
	}
	e.RemoveMember(gone)
	if _, in := e.Membership().Member(uint64(gone)); in || voters() != 3 {
		t.Fatalf("member %d still in the membership: %s", gone, e.Membership().Text())
	}
	waitUntil(t, "the removed member to stop serving", func() bool { return mode(gone) == "not serving" })

	five := e.AddMember()
	write(five, "/through-five")
	if voters() != 4 {
		t.Fatalf("%d voters after adding member 5: %s", voters(), e.Membership().Text())
	}
	for n := 1; n <= e.Size(); n++ {
		if n == gone {
			continue
		}
		waitUntil(t, "every member left to hold every write", func() bool {
			tree := e.Member(n).Tree()
			_, a := tree["/through-observer"]
			_, b := tree["/through-five"]
			return a && b
		})
	}
}
