package bench

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

const (
	// busyClients is how many concurrent sessions write in the throughput
	// runs, spread round-robin over the ensemble's servers.
	busyClients = 16
	// warmUp writes go untimed before each measured run: the JVM compiles
	// its hot paths and both sides' files and buffers grow.
	warmUp = 1000
	// payloadSize is the size of every setData's data.
	payloadSize = 100
	// sessionTimeout is what each client asks for.
	sessionTimeout = 10 * time.Second
	// writesTimeout bounds one batch of writes, however large b.N is.
	writesTimeout = 5 * time.Minute
	// opTimeout bounds one setData: go-zookeeper has no per-call deadline,
	// so a stuck call is abandoned by the batch rather than waited on.
	opTimeout = 30 * time.Second
)

// writers are the client sessions of one target, each owning a znode.
type writers struct {
	conns []*zk.Conn
	paths []string
}

// connectWriters opens n sessions, client i on addrs[i mod len(addrs)],
// and creates each one's znode.
func connectWriters(tb testing.TB, t target, n int, addrs []string) *writers {
	tb.Helper()
	w := &writers{}
	payload := make([]byte, payloadSize)
	for i := range n {
		addr := addrs[i%len(addrs)]
		c, _, err := zk.Connect([]string{addr}, sessionTimeout, zk.WithLogger(discardLogger{}))
		if err != nil {
			tb.Fatalf("%s: connect %s: %v", t.name, addr, err)
		}
		tb.Cleanup(c.Close)
		p := fmt.Sprintf("/bench-%d", i)
		if _, err := c.Create(p, payload, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			tb.Fatalf("%s: create %s on %s: %v", t.name, p, addr, err)
		}
		w.conns = append(w.conns, c)
		w.paths = append(w.paths, p)
	}
	return w
}

// close ends the sessions; cleanups would too, but only after the next
// target has run.
func (w *writers) close() {
	for _, c := range w.conns {
		c.Close()
	}
}

// result is what one batch of writes measured.
type result struct {
	writes    int
	elapsed   time.Duration
	latencies []time.Duration // sorted
}

func (r result) perSecond() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.writes) / r.elapsed.Seconds()
}

// write does total setData calls of payloadSize bytes, shared by every
// session, each client on its own znode, and times them. It stops at the
// first error or once writesTimeout has passed.
func (w *writers) write(total int) (result, error) {
	var (
		next     atomic.Int64 // writes handed out so far
		failed   atomic.Bool
		mu       sync.Mutex // guards firstErr
		firstErr error
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		failed.Store(true)
	}
	perClient := make([][]time.Duration, len(w.conns))
	start := time.Now()
	deadline := start.Add(writesTimeout)
	for i, c := range w.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			payload := make([]byte, payloadSize)
			lat := make([]time.Duration, 0, total/len(w.conns)+1)
			// The loop is bounded by total: each pass claims one write.
			for next.Add(1) <= int64(total) && !failed.Load() {
				if time.Now().After(deadline) {
					fail(fmt.Errorf("%d writes not done within %v", total, writesTimeout))
					break
				}
				payload[0]++
				t0 := time.Now()
				if _, err := setData(c, w.paths[i], payload); err != nil {
					fail(fmt.Errorf("setData %s: %w", w.paths[i], err))
					break
				}
				lat = append(lat, time.Since(t0))
			}
			perClient[i] = lat
		}()
	}
	wg.Wait()
	r := result{elapsed: time.Since(start)}
	if firstErr != nil {
		return r, firstErr
	}
	for _, lat := range perClient {
		r.latencies = append(r.latencies, lat...)
	}
	slices.Sort(r.latencies)
	r.writes = len(r.latencies)
	return r, nil
}

// setData is c.Set bounded by opTimeout.
func setData(c *zk.Conn, path string, data []byte) (*zk.Stat, error) {
	type reply struct {
		st  *zk.Stat
		err error
	}
	done := make(chan reply, 1)
	go func() {
		st, err := c.Set(path, data, -1)
		done <- reply{st, err}
	}()
	timer := time.NewTimer(opTimeout)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.st, r.err
	case <-timer.C:
		return nil, fmt.Errorf("no reply within %v", opTimeout)
	}
}

// BenchmarkEnsembleWrites: sessions on a three-server ensemble each
// overwrite their own znode with payloadSize bytes, b.N writes in all:
// one session on a follower (latency: the path of a lock handoff through
// a follower), then busyClients sessions spread over all servers
// (throughput). ZooKeeper runs first and is stopped before hutch starts,
// so the two never share the CPU. Compare with
//
//	go test -run '^$' -bench EnsembleWrites -benchtime 5000x -count 3 ./bench
func BenchmarkEnsembleWrites(b *testing.B) {
	for _, ts := range ensembleTargets {
		t := ts.start(b)
		runs := []struct {
			name  string
			n     int
			addrs []string
		}{
			{"follower-1", 1, []string{followerAddr(b, t)}},
			{fmt.Sprintf("spread-%d", busyClients), busyClients, t.addrs},
		}
		for _, run := range runs {
			w := connectWriters(b, t, run.n, run.addrs)
			b.Run(t.name+"/"+run.name, func(b *testing.B) {
				if _, err := w.write(warmUp); err != nil {
					b.Fatalf("%s: warm-up: %v", t.name, err)
				}
				b.ResetTimer()
				r, err := w.write(b.N)
				b.StopTimer()
				if err != nil {
					b.Fatalf("%s: %v", t.name, err)
				}
				b.ReportMetric(r.perSecond(), "writes/s")
				b.ReportMetric(Ms(Percentile(r.latencies, 0.50)), "p50-ms")
				b.ReportMetric(Ms(Percentile(r.latencies, 0.99)), "p99-ms")
			})
			w.close()
		}
		t.stop()
	}
}
