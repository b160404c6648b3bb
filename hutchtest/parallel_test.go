package hutchtest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestParallelServers: 200 parallel subtests, each with its own server
// reached through the in-memory dialer: no port to collide on, no start
// to wait out.
func TestParallelServers(t *testing.T) {
	for i := range 200 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			srv := Start(t)
			c, _ := srv.Connect(10 * time.Second)
			_, err := c.Create("/n", []byte(fmt.Sprint(i)), zk.FlagEphemeral, open)
			must(t, err)
			_, _, w, err := c.GetW("/n")
			must(t, err)
			srv.ExpireSession(c.SessionID())
			waitWatch(t, w, zk.EventNodeDeleted)
			if len(srv.Tree()) != 0 {
				t.Fatalf("tree %v", srv.Tree())
			}
		})
	}
}

// TestPipeUnderLoad: the in-memory connection carries pipelined requests
// from many goroutines on one session and a flood of notifications from
// one transaction (a multi deleting 2000 watched nodes) without a stall.
func TestPipeUnderLoad(t *testing.T) {
	srv := Start(t)
	w, _ := srv.Connect(10 * time.Second)
	c, _ := srv.Connect(10 * time.Second)
	_, err := c.Create("/f", nil, 0, open)
	must(t, err)
	const writers, each = 8, 250
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := c.Create(fmt.Sprintf("/f/%d-%d", g, i), make([]byte, 512), 0, open); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	children, _, err := w.Children("/f")
	must(t, err)
	if len(children) != writers*each {
		t.Fatalf("%d children", len(children))
	}
	watches := make([]<-chan zk.Event, 0, len(children))
	ops := make([]any, 0, len(children))
	for _, name := range children {
		_, _, ch, err := w.GetW("/f/" + name)
		must(t, err)
		watches = append(watches, ch)
		ops = append(ops, &zk.DeleteRequest{Path: "/f/" + name, Version: -1})
	}
	_, err = c.Multi(ops...)
	must(t, err)
	for _, ch := range watches {
		waitWatch(t, ch, zk.EventNodeDeleted)
	}
}
