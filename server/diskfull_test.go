package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/diskfault"
)

// TestMemberThatCannotPersistLeaves: a member whose disk fills, or whose
// fsync fails, stops serving: it closes its clients and refuses new ones,
// so they move to a member that is current, and it says why. Issue 26
// saw a follower on a full disk answer the old value 27-57s after the new
// one was acknowledged, its watch never firing and its pings answered,
// and a full leader step down and then serve frozen reads as a follower;
// ZooKeeper exits ("Severe unrecoverable error ... No space left on
// device") and its clients move within 2s. Nothing acknowledged is lost,
// and once the disk is freed (or replaced) the member comes back.
func TestMemberThatCannotPersistLeaves(t *testing.T) {
	const moveWithin = 10 * time.Second
	tests := []struct {
		name     string
		leader   bool
		failSync bool
		want     []string // one of them in the member's halt error
	}{
		{"full disk on a follower", false, false, []string{"no space left on device"}},
		{"full disk on the leader", true, false, []string{"no space left on device"}},
		// ext4 reports the loop device's failed writeback as EIO, or as
		// ENOSPC when it knows the device ran out of room.
		{"failing fsync on a follower", false, true, []string{"sync", "input/output error", "no space left on device"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			disks := make([]*diskfault.Disk, 3)
			dirs := make([]string, 3)
			for i := range disks {
				if tc.failSync {
					disks[i] = diskfault.FailingSync(t, 24<<20, 256<<20)
				} else {
					disks[i] = diskfault.Full(t, 64<<20)
				}
				dirs[i] = disks[i].Dir
			}
			c := startDurable(t, 3, dirs, "", 100*time.Millisecond)
			target := c.follower()
			if tc.leader {
				target = c.index(c.leader())
			}
			other := (target + 1) % 3

			w, _ := dialVia(t, c.addrs(other)[0], 10*time.Second, nil)
			if _, err := w.Create("/balance", []byte("v0"), 0, openACL); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, "the target to apply v0", func() bool {
				return c.members[target].db.LastZxid() >= c.members[other].db.LastZxid()
			})
			// A client on the target, watching.
			r, _ := dialAll(t, c.addrs(target), 10*time.Second)
			if _, _, _, err := r.GetW("/balance"); err != nil {
				t.Fatal(err)
			}
			fill := disks[target].Fill
			if tc.failSync {
				fill = disks[target].FailSyncs
			}
			if err := fill(); err != nil {
				t.Fatal(err)
			}

			// Writes go on through the others; the writer's session is on
			// a member that is not the target, and retries across an
			// election.
			acked := ""
			ws, _, err := zk.Connect(c.addrs(other)[:1], 4*time.Second, zk.WithLogger(discardLogger{}))
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			deadline := time.Now().Add(30 * time.Second)
			// Values of 128 KB, so the log grows past what its files
			// already hold: a full disk refuses only new blocks, and a
			// store may allocate ahead (seglog zero-fills 1 MB at a time,
			// as ZooKeeper preallocates 64 MB).
			pad := strings.Repeat(".", 128<<10)
			for i := 1; i <= 20 && time.Now().Before(deadline); {
				v := fmt.Sprintf("v%d", i)
				if _, err := ws.Set("/balance", []byte(v+pad), -1); err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				acked = v
				i++
			}
			if acked != "v20" {
				t.Fatalf("the others took writes only up to %q in 30s", acked)
			}
			ackedAt := time.Now()

			// The target's client saw its connection go, and reads the
			// newest value from another member.
			waitFor(t, moveWithin, "the target's client to read "+acked, func() bool {
				got, _, err := r.Get("/balance")
				return err == nil && strings.TrimRight(string(got), ".") == acked
			})
			t.Logf("its client read %s %v after the last write was acknowledged", acked, time.Since(ackedAt).Round(time.Millisecond))
			waitFor(t, moveWithin, "the member that cannot persist to stop itself", func() bool {
				return c.members[target].HaltError() != nil
			})
			if err := c.members[target].HaltError(); !containsAny(err.Error(), tc.want) {
				t.Fatalf("halt error %q says none of %q", err, tc.want)
			}
			t.Logf("member %d stopped itself: %v", target+1, c.members[target].HaltError())
			if !turnsAway(c.cfgs[target].ListenAddr) {
				t.Fatal("the stopped member still takes clients")
			}

			if at := r.Server(); at == c.cfgs[target].ListenAddr {
				t.Errorf("the target's client is still on the stopped member (%s)", at)
			}

			// The member comes back once its disk is freed (replaced, for
			// the failing one), and has every acknowledged write.
			c.stop(target)
			if tc.failSync {
				err = disks[target].Reset()
			} else {
				err = disks[target].Free()
			}
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, 20*time.Second, "a leader among the others", func() bool { return c.leader() != nil })
			if err := c.start(target); err != nil {
				t.Fatalf("restart after the disk was freed: %v", err)
			}
			back, _ := dial(t, c.addrs(target)[0], 10*time.Second)
			waitFor(t, 20*time.Second, "the member to catch up", func() bool {
				if _, err := back.Sync("/balance"); err != nil {
					return false
				}
				got, _, err := back.Get("/balance")
				return err == nil && strings.TrimRight(string(got), ".") == acked
			})
		})
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
