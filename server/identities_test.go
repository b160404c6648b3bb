package server

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/trace"
)

// logBytes is what member s has appended to its log, in bytes.
func logBytes(t *testing.T, s *Server) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s.Replication().Raft["log_appended_bytes"], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestIdentitiesDoNotTravelWithWrites: a connection with many long
// identities makes tiny writes, and the members' logs grow by the
// writes, not by the identities. Issue 26 saw ten addAuth calls with
// ~1 MB digest names, then five 4-byte creates, grow every member's
// raft.db to 95 MB (ZooKeeper wrote 4 KB): each write carried the
// connection's whole identity list.
func TestIdentitiesDoNotTravelWithWrites(t *testing.T) {
	const writes = 300
	c := startDurable(t, 3, nil, "", 100*time.Millisecond)
	leader := c.index(c.leader())
	cl, _ := dial(t, c.addrs(leader)[0], 10*time.Second)
	for i := range 10 {
		name := fmt.Sprintf("user%d-%s", i, strings.Repeat("x", 1400))
		if err := cl.AddAuth("digest", []byte(name+":pw")); err != nil {
			t.Fatal(err)
		}
	}
	before := make([]int64, 3)
	for i, s := range c.members {
		before[i] = logBytes(t, s)
	}
	for i := range writes {
		if _, err := cl.Create(fmt.Sprintf("/w%d", i), []byte("four"), 0, openACL); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "every member to apply the writes", func() bool {
		for _, s := range c.members {
			if s.db.LastZxid() < c.members[leader].db.LastZxid() {
				return false
			}
		}
		return true
	})
	// About 14 KB of identities: they would add over 4 MB; the writes
	// themselves take a few tens of KB.
	for i, s := range c.members {
		grew := logBytes(t, s) - before[i]
		t.Logf("member %d's log grew %d bytes for %d writes", i+1, grew, writes)
		if grew > 256<<10 {
			t.Errorf("member %d's log grew %d bytes for %d 4-byte creates: the identities travel with the writes", i+1, grew, writes)
		}
	}
}

// TestIdentitiesBounded: a connection may hold only so many identities,
// and so many bytes of them: past either, addAuth is answered AUTHFAILED
// and the connection closed, as a failed addAuth is.
func TestIdentitiesBounded(t *testing.T) {
	s := startServer(t, Config{})
	tests := []struct {
		name  string
		names []string
	}{
		{"too many", func() []string {
			var out []string
			for i := range maxIdentities {
				out = append(out, fmt.Sprintf("u%d", i)) // with ip, one too many
			}
			return out
		}()},
		{"too long", []string{strings.Repeat("n", maxIdentityBytes)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, events := dial(t, s.Addr().String(), 10*time.Second)
			var err error
			for i, n := range tc.names {
				if err = c.AddAuth("digest", []byte(n+":pw")); err != nil {
					if i != len(tc.names)-1 {
						t.Fatalf("identity %d refused: %v", i+1, err)
					}
					break
				}
			}
			if !errors.Is(err, zk.ErrAuthFailed) {
				t.Fatalf("past the bound addAuth said %v, want AUTHFAILED", err)
			}
			waitState(t, events, zk.StateDisconnected) // the server closed it
		})
	}
	// Within the bounds, as many as a client adds.
	c, _ := dial(t, s.Addr().String(), 10*time.Second)
	for i := range 3 {
		if err := c.AddAuth("digest", []byte(fmt.Sprintf("user%d:pw", i))); err != nil {
			t.Fatal(err)
		}
	}
}

// waitState waits for a session event of state st.
func waitState(t *testing.T, events <-chan zk.Event, st zk.State) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == st {
				return
			}
		case <-deadline:
			t.Fatalf("no %v event in 10s", st)
		}
	}
}

// TestWriteAfterSetACLRefused: writes prepared on a follower race a
// setACL, made through the leader, that takes their permission away:
// none ordered after the setACL succeeds. A write's ACL check is decided
// where it is prepared (no identities travel), so one prepared before
// the follower applied the setACL must still be refused where it
// applies after it.
func TestWriteAfterSetACLRefused(t *testing.T) {
	nodes := startCluster(t, 3, 100*time.Millisecond)
	leader := leaderOf(nodes)
	follower := followerOf(nodes, leader)
	rec := leader.Trace().Record(trace.Filter{}, 1<<20)
	defer rec.Close()

	alice := zk.DigestACL(zk.PermAll, "alice", "pw")
	admin := zk.DigestACL(zk.PermAll, "admin", "pw")
	adm, _ := dial(t, leader.Addr().String(), 10*time.Second)
	if err := adm.AddAuth("digest", []byte("admin:pw")); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.Create("/x", nil, 0, append(alice, admin...)); err != nil {
		t.Fatal(err)
	}
	var aliceSessions sync.Map
	const rounds, writers = 8, 6
	var wrote, refused atomic.Int64
	for round := range rounds {
		if _, err := adm.SetACL("/x", append(alice, admin...), -1); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					c, _, err := zk.Connect([]string{follower.Addr().String()}, 4*time.Second, zk.WithLogger(discardLogger{}))
					if err != nil {
						return
					}
					func() {
						defer c.Close()
						if err := c.AddAuth("digest", []byte("alice:pw")); err != nil {
							return
						}
						aliceSessions.Store(c.SessionID(), true)
						for i := 0; ; i++ {
							select {
							case <-stop:
								return
							default:
							}
							_, err := c.Set("/x", []byte(fmt.Sprintf("r%d-w%d-%d", round, w, i)), -1)
							switch {
							case err == nil:
								wrote.Add(1)
							case errors.Is(err, zk.ErrNoAuth):
								refused.Add(1)
								time.Sleep(5 * time.Millisecond)
							default:
								return // connection dropped: a write prepared against the old ACL
							}
						}
					}()
				}
			})
		}
		time.Sleep(100 * time.Millisecond)
		if _, err := adm.SetACL("/x", admin, -1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		close(stop)
		wg.Wait()
	}
	// In the leader's order of applied transactions, no setData of
	// alice's after a setACL that left her out.
	revoked, setACLs, violations := false, 0, 0
	for _, e := range rec.Events() {
		switch {
		case e.Kind != trace.TxnApplied:
		case e.Op == "setACL" && e.Path == "/x" && e.Err == "":
			setACLs++
			revoked = setACLs%2 == 0 // they alternate: granted, then revoked
		case e.Op == "setData" && e.Path == "/x" && e.Err == "" && revoked:
			if _, ok := aliceSessions.Load(e.Session); ok {
				violations++
			}
		}
	}
	t.Logf("%d rounds: %d writes succeeded, %d refused NOAUTH", rounds, wrote.Load(), refused.Load())
	if violations > 0 {
		t.Fatalf("%d of alice's writes applied after a setACL that took her permission away", violations)
	}
	if wrote.Load() == 0 || refused.Load() == 0 {
		t.Fatal("the race was not run: no write succeeded, or none was refused")
	}
}
