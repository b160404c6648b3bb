package server

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/clock"
)

// TestClockPutRightAfterJumpAhead: the server's clock jumps an hour ahead
// and is put right. Writes made after that carry the real time again, and
// a TTL node created then expires by its TTL. Before the fix the
// transaction time stayed an hour ahead until real time caught up: the
// node's ctime was an hour in the future and it could not expire.
func TestClockPutRightAfterJumpAhead(t *testing.T) {
	off := clock.NewOffset(clock.System, 0)
	s := startServer(t, Config{Clock: off, ContainerCheckInterval: 50 * time.Millisecond})
	c, _ := dial(t, s.Addr().String(), 10*time.Second)

	off.Set(time.Hour)
	if _, err := c.Create("/ahead", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	off.Set(0)
	before := time.Now()
	if _, err := c.CreateTTL("/ttl", nil, zk.FlagTTL, openACL, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	_, st, err := c.Get("/ttl")
	if err != nil {
		t.Fatal(err)
	}
	if ctime := time.UnixMilli(st.Ctime); ctime.Sub(before) > time.Minute {
		t.Fatalf("ctime %v, an hour after real time %v: the transaction time stayed ahead", ctime, before)
	}
	waitFor(t, 20*time.Second, "the TTL node to expire", func() bool {
		ok, _, err := c.Exists("/ttl")
		return err == nil && !ok
	})
}
