package server

import (
	"net"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/hutchzk/hutch/wire"
)

// heapInUse is the server process's heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestClientsThatDoNotReadAreBounded: 60 clients from one address send
// getData after getData for a 512 KB node and never read a reply. The
// server stops reading them (back-pressure) and holds at most a few MB
// for each, disconnects them once they have left their replies unread
// for their session timeout, and comes back to its idle size after they
// go. Issue 26 saw 20 such clients take a server from 19 MB to 2.83 GB
// and keep it there: a 64 MiB reply queue each, read on regardless.
// Meanwhile the server answers an ordinary client.
func TestClientsThatDoNotReadAreBounded(t *testing.T) {
	const (
		clients   = 60
		requests  = 400 // 200 MB of replies each, if all were queued
		valueSize = 512 << 10
		perClient = 3 << 20 // "a few MB"
	)
	s := startServer(t, Config{TickTime: 100 * time.Millisecond, MaxSessionTimeout: 4 * time.Second, MaxClientConnsPerIP: clients + 1})
	c, _ := dial(t, s.Addr().String(), 10*time.Second)
	if _, err := c.Create("/big", make([]byte, valueSize), 0, openACL); err != nil {
		t.Fatal(err)
	}
	idle := heapInUse()

	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	get := frame(func(e *wire.Encoder) {
		(&wire.RequestHeader{Xid: 1, Type: wire.OpGetData}).Encode(e)
		(&wire.PathWatchRequest{Path: "/big"}).Encode(e)
	})
	for range clients {
		r := dialRaw(t, s.Addr().String())
		r.handshake(3000, 0, nil)
		mu.Lock()
		conns = append(conns, r.nc)
		mu.Unlock()
		wg.Go(func() {
			// Sends until the server stops reading and the sockets fill,
			// or the server closes the connection.
			_ = r.nc.SetWriteDeadline(time.Now().Add(20 * time.Second))
			for range requests {
				if _, err := r.nc.Write(get); err != nil {
					return
				}
			}
		})
	}
	// Let the queues fill as far as they will.
	peak := uint64(0)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		peak = max(peak, heapInUse())
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("heap in use: idle %d MB, with %d clients not reading %d MB (%.1f MB each)",
		idle>>20, clients, peak>>20, float64(peak-min(peak, idle))/clients/(1<<20))
	if peak > idle+clients*perClient {
		t.Errorf("%d clients that do not read hold %d MB, more than %d MB each", clients, (peak-idle)>>20, perClient>>20)
	}
	// The server still answers others.
	if _, _, err := c.Get("/big"); err != nil {
		t.Fatalf("an ordinary client while the others do not read: %v", err)
	}
	// Past their session timeout (3s), they are disconnected.
	waitFor(t, 20*time.Second, "the clients that do not read to be disconnected", func() bool {
		return s.stats.connections.Load() <= 1
	})
	for _, nc := range conns {
		nc.Close()
	}
	wg.Wait()
	var after uint64
	waitFor(t, 10*time.Second, "the heap to come back to its idle size", func() bool {
		after = heapInUse()
		return after <= idle+16<<20
	})
	t.Logf("heap in use after they left: %d MB", after>>20)
}
