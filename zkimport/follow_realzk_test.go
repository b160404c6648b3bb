package zkimport_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/zkimport"
)

// TestFollowCutOver is the live cut-over: ZooKeeper under a steady write
// load, the import following its log; ZooKeeper stopped, the follow's
// final catch-up, hutch started on the address the clients also know. The
// writers' sessions move to hutch and go on writing, and no write either
// server acknowledged is missing from hutch.
func TestFollowCutOver(t *testing.T) {
	logDir := t.TempDir()
	zks := realzk.Start(t,
		realzk.Config("snapCount", "300"),
		realzk.Config("dataLogDir", logDir),
		realzk.Config("preAllocSize", "256"),
		realzk.SystemProperty("zookeeper.DigestAuthenticationProvider.superDigest", superDigest()),
	)
	hutchAddr := "127.0.0.1:" + strconv.Itoa(realzk.FreePort(t))
	admin := connect(t, zks.Addr)
	if _, err := admin.Create("/w", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	// Writers: each its own session knowing both servers, writing in
	// order and recording what was acknowledged.
	const writers = 3
	var mu sync.Mutex
	acked := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		c, ev, err := zk.Connect([]string{zks.Addr, hutchAddr}, 30*time.Second, zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		waitSession(t, ev)
		wg.Go(func() {
			for i := 0; i < 50000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := fmt.Sprintf("/w/%d-%06d", w, i)
				_, err := c.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll))
				if errors.Is(err, zk.ErrNodeExists) {
					err = nil // the create was applied, its reply lost in the move
				}
				if err != nil {
					i-- // retry the same node once the client has reconnected
					time.Sleep(20 * time.Millisecond)
					continue
				}
				mu.Lock()
				acked[p] = true
				mu.Unlock()
				time.Sleep(2 * time.Millisecond) // steady, not flat out
			}
		})
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitFor(t, 30*time.Second, "writes before the follow", func() bool { return count() > 100 })

	out := filepath.Join(t.TempDir(), "hutch-data")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan *zkimport.Report, 1)
	type result struct {
		r   *zkimport.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := zkimport.Follow(ctx, zkimport.Options{
			Source: zkimport.Source{DataDir: filepath.Join(zks.Dir, "data"), LogDir: logDir},
			Output: zkimport.Output{Dir: out},
		}, zkimport.FollowOptions{Poll: 50 * time.Millisecond, Checkpoint: 500 * time.Millisecond, Ready: func(r *zkimport.Report) {
			ready <- r
		}})
		done <- result{r, err}
	}()
	select {
	case r := <-ready:
		t.Logf("following from zxid %#x", r.LastZxid)
	case res := <-done:
		t.Fatalf("follow ended before it began: %v", res.err)
	case <-time.After(60 * time.Second):
		t.Fatal("follow not ready within 60s")
	}
	mark := count()
	waitFor(t, 30*time.Second, "writes while following", func() bool { return count() > mark+200 })

	// The cut-over: stop ZooKeeper, finish the follow, start hutch.
	admin.Close()
	cut := time.Now()
	if err := zks.Stop(); err != nil {
		t.Fatal(err)
	}
	cancel()
	res := <-done
	if res.err != nil {
		t.Fatalf("follow: %v", res.err)
	}
	srv := startHutch(t, hutchAddr, out)
	t.Logf("cut-over: ZooKeeper stopped to hutch serving in %v; the follow replayed %d transactions to zxid %#x",
		time.Since(cut), res.r.Transactions, res.r.LastZxid)
	before := count()
	waitFor(t, 60*time.Second, "writes on hutch", func() bool { return count() > before+100 })
	close(stop)
	wg.Wait()

	h := connect(t, srv.Addr().String())
	missing := 0
	for p := range acked {
		if ok, _, err := h.Exists(p); err != nil || !ok {
			missing++
			if missing < 5 {
				t.Errorf("%s: acknowledged, missing in hutch (%v)", p, err)
			}
		}
	}
	t.Logf("%d writes acknowledged (%d by ZooKeeper before the cut-over), %d missing in hutch", len(acked), before, missing)
	if missing > 0 {
		t.Fatalf("%d acknowledged writes missing", missing)
	}
}
