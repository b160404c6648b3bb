package monitor_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/monitor"
	"github.com/hutchzk/hutch/server"
	"github.com/hutchzk/hutch/wire"
)

// The live view's cost to the request path, measured as the brief for it
// asks: one server holding a 1,000,000-znode tree and 10,000 sessions,
// clients reading and writing as fast as they can, first with nobody
// looking, then with ten viewers each redrawing a panel every second (as
// the page's script does) and streaming the event trace; the arms
// alternate within one run, and the ratio of their throughputs is
// reported. Run it briefly (building the tree takes most of the time):
//
//	go test ./monitor -run '^$' -bench ViewCost -benchtime 5x -timeout 30m

const (
	benchDirs     = 1000 // /t/d000 ... /t/d999
	benchPerDir   = 1000 // children of each: 1,001,002 znodes in all
	benchSessions = 10000
	benchViewers  = 10
	benchSlice    = 750 * time.Millisecond // one slice of an arm
	benchWorkers  = 16
	benchWriteOne = 10 // one request in ten is a setData
)

var benchQuiet = slog.New(slog.DiscardHandler)

// benchFixture is the server under measure, built once per process.
type benchFixture struct {
	srv   *server.Server
	ui    *httptest.Server
	conns []*zk.Conn // the workers' clients
	idle  []net.Conn // the 10,000 sessions' connections
}

var (
	fixtureOnce sync.Once
	fixture     *benchFixture
)

func benchServer(b *testing.B) *benchFixture {
	b.Helper()
	fixtureOnce.Do(func() { fixture = buildFixture(b) })
	if fixture == nil {
		b.Fatal("fixture failed")
	}
	return fixture
}

func buildFixture(b *testing.B) *benchFixture {
	start := time.Now()
	srv := server.New(server.Config{NoClientPort: true, Logger: benchQuiet,
		MaxSessionTimeout: time.Hour, MaxClientConnsPerIP: -1})
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	world := []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
	if err := srv.CreateNode("/t", nil, world, wire.ModePersistent, 0); err != nil {
		b.Fatal(err)
	}
	// Creates in parallel: the committer batches them.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 64 {
		wg.Go(func() {
			for d := w; d < benchDirs; d += 64 {
				dir := fmt.Sprintf("/t/d%03d", d)
				if err := srv.CreateNode(dir, nil, world, wire.ModePersistent, 0); err != nil {
					errs <- err
					return
				}
				for n := range benchPerDir {
					if err := srv.CreateNode(fmt.Sprintf("%s/n%03d", dir, n), []byte("value of a node"), world, wire.ModePersistent, 0); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	f := &benchFixture{srv: srv}
	for range benchSessions {
		f.idle = append(f.idle, idleSession(b, srv))
	}
	for range benchWorkers / 4 {
		f.conns = append(f.conns, benchConnect(b, srv))
	}
	// A lock queue for the locks panel: fifty waiters watching their
	// predecessors.
	for i := range 50 {
		c := benchConnect(b, srv)
		p, err := c.Create("/t/d000/n000/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			b.Fatal(err)
		}
		if i > 0 {
			if _, _, _, err := c.ExistsW(fmt.Sprintf("/t/d000/n000/lock-%010d", i-1)); err != nil {
				b.Fatal(err)
			}
		}
		_ = p
		f.conns = append(f.conns, c)
	}
	f.ui = httptest.NewServer(monitor.New(srv, monitor.Config{Logger: benchQuiet}).UIHandler("127.0.0.1:0"))
	st := srv.Stats()
	b.Logf("fixture: %d znodes, %d sessions, built in %v", st.Nodes, st.Sessions, time.Since(start).Round(time.Second))
	return f
}

// benchConnect opens a go-zookeeper session in memory.
func benchConnect(b *testing.B, srv *server.Server) *zk.Conn {
	dial := zk.WithDialer(func(string, string, time.Duration) (net.Conn, error) { return srv.DialMemory() })
	c, ev, err := zk.Connect([]string{"127.0.0.1:2181"}, time.Minute, dial, zk.WithLogger(zkQuiet{}))
	if err != nil {
		b.Fatal(err)
	}
	for e := range ev {
		if e.State == zk.StateHasSession {
			break
		}
	}
	return c
}

type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// cpuTime is the CPU time this process has used, user and system: the
// request path's cost per request, which other processes on the machine
// disturb less than its throughput.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// idleSession opens a session with an hour's timeout that sends nothing
// more: one of the 10,000.
func idleSession(b *testing.B, srv *server.Server) net.Conn {
	nc, err := srv.DialMemory()
	if err != nil {
		b.Fatal(err)
	}
	var e wire.Encoder
	at := e.BeginFrame()
	(&wire.ConnectRequest{Timeout: int32(time.Hour.Milliseconds()), Passwd: make([]byte, 16)}).Encode(&e)
	e.EndFrame(at)
	if _, err := nc.Write(e.Bytes()); err != nil {
		b.Fatal(err)
	}
	if _, err := wire.ReadFrame(bufio.NewReader(nc), 1<<20, nil); err != nil {
		b.Fatal(err)
	}
	return nc
}

// requests runs the workers for d and returns the requests answered.
func (f *benchFixture) requests(d time.Duration) int64 {
	var done atomic.Int64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range benchWorkers {
		c := f.conns[w%(benchWorkers/4)]
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for i := 0; time.Now().Before(stop); i++ {
				p := fmt.Sprintf("/t/d%03d/n%03d", r.IntN(benchDirs), r.IntN(benchPerDir))
				var err error
				if i%benchWriteOne == 0 {
					_, err = c.Set(p, []byte("new value of a node"), -1)
				} else {
					_, _, err = c.Get(p)
				}
				if err != nil {
					panic(err)
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return done.Load()
}

// viewers starts n viewers on the live view: each streams the trace and
// redraws a panel every second, moving through the panels (a page of a
// directory's children, the sessions, the watches, the lock queue, the
// ensemble). stop ends them and reports the pages they drew and the
// trace lines they read.
func (f *benchFixture) viewers(n int) (stop func() (pages, lines int64)) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var pages, lines atomic.Int64
	get := func(ctx context.Context, url string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		return http.DefaultClient.Do(req)
	}
	opened := make(chan struct{}, n)
	mode := os.Getenv("HUTCH_VIEW_BENCH")
	for v := range n {
		wg.Go(func() {
			if mode == "panels" || mode == "none" {
				opened <- struct{}{}
				return
			}
			resp, err := get(ctx, f.ui.URL+"/trace?rate=100")
			if err != nil {
				opened <- struct{}{}
				return
			}
			opened <- struct{}{}
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				lines.Add(1)
			}
			resp.Body.Close()
		})
		wg.Go(func() {
			var replayAt func(string) string
			panels := []string{"/ui/tree?fragment=1&path=/t/d" + fmt.Sprintf("%03d", v*37%benchDirs),
				"/ui/sessions?fragment=1&page=" + strconv.Itoa(v), "/ui/watches?fragment=1", "/ui/locks?fragment=1",
				"/ui/ensemble?fragment=1", "/ui/tree?fragment=1&path=/t&after=d" + fmt.Sprintf("%03d", v*50)}
			if mode == "replay" {
				// Replaying: each redraw is a panel at a point of the
				// trace's history, each viewer its own point, moving
				// with the window: the lock queue, its part of the
				// tree, the sessions, the watches, and the queue with
				// its steps scoped to the lock's path.
				panels = []string{"/ui/locks?fragment=1", "/ui/tree?fragment=1&path=/t/d000/n000",
					"/ui/sessions?fragment=1&page=" + strconv.Itoa(v), "/ui/watches?fragment=1",
					"/ui/locks?fragment=1&rpath=/t/d000/n000/"}
				h := f.srv.Trace().History()
				back := uint64(1000 * (v + 1))
				for i, p := range panels {
					panels[i] = p + "&at=%d"
				}
				at := func(p string) string {
					st := h.Stats()
					return fmt.Sprintf(p, max(st.FirstSeq, st.LastSeq-min(back, st.LastSeq)))
				}
				replayAt = at
			}
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			if mode == "trace" || mode == "none" {
				return
			}
			for i := 0; ; i++ {
				page := panels[i%len(panels)]
				if replayAt != nil {
					page = replayAt(page)
				}
				resp, err := get(ctx, f.ui.URL+page)
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					panic(resp.Status)
				}
				pages.Add(1)
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	for range n {
		<-opened
	}
	return func() (int64, int64) {
		cancel()
		wg.Wait()
		return pages.Load(), lines.Load()
	}
}

// BenchmarkViewCost measures, each round, the request path alone and
// with ten viewers in eight short slices (alone, viewed, viewed, alone,
// viewed, alone, alone, viewed), so that drift, other processes and the
// collector's cycles over the 1,000,000 nodes fall on both arms alike.
// It reports both throughputs, their ratio (viewed over alone: 1 is
// free, 0.95 a 5% cost), the median of the ratios of adjacent slices,
// which a burst of load from another process on one slice moves less,
// and the process's CPU time and bytes allocated per request in each
// arm: the viewers' whole cost shows there, their HTTP clients (which in
// life run elsewhere) included.
//
// HUTCH_VIEW_BENCH=none makes the viewers idle (an A/A run: the spread
// of its ratio is the machine's noise); =trace or =panels keeps only
// their trace streams or only their pages; =replay makes every page a
// replay at a point of the trace's history (each viewer its own), the
// trace streamed as well.
func BenchmarkViewCost(b *testing.B) {
	f := benchServer(b)
	// Warm up until the trace's window holds only the load's events: the
	// fixture's 10,054 session creations and 1,000,000 node creations
	// would otherwise fill it for the first rounds, and a replay of a
	// window of session creations undoes (copies) each, which is not the
	// steady state of a server under this load.
	h := f.srv.Trace().History()
	fixtureEnd := h.Stats().LastSeq
	for deadline := time.Now().Add(2 * time.Minute); ; {
		f.requests(time.Second)
		if h.Stats().FirstSeq > fixtureEnd || time.Now().After(deadline) {
			break
		}
	}
	var alone, viewed, drawn, traced, aloneAlloc, viewedAlloc int64
	var aloneTime, viewedTime, aloneCPU, viewedCPU time.Duration
	var pairs []float64
	for b.Loop() {
		order := []bool{false, true, true, false, true, false, false, true}
		rates := make([]float64, len(order))
		for i, watched := range order {
			// Every slice starts just after a collection: a cycle over
			// the million nodes costs more than a slice's requests, and
			// would otherwise fall on one arm or the other by chance. The
			// bytes each arm allocates (what drives the collector) are
			// reported instead.
			runtime.GC()
			var stop func() (int64, int64)
			if watched {
				stop = f.viewers(benchViewers)
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			start, cpu0, alloc0 := time.Now(), cpuTime(), ms.TotalAlloc
			n := f.requests(benchSlice)
			took, cpu := time.Since(start), cpuTime()-cpu0
			runtime.ReadMemStats(&ms)
			allocated := int64(ms.TotalAlloc - alloc0)
			rates[i] = float64(n) / took.Seconds()
			if watched {
				p, l := stop()
				drawn, traced = drawn+p, traced+l
				viewed, viewedTime, viewedCPU, viewedAlloc = viewed+n, viewedTime+took, viewedCPU+cpu, viewedAlloc+allocated
			} else {
				alone, aloneTime, aloneCPU, aloneAlloc = alone+n, aloneTime+took, aloneCPU+cpu, aloneAlloc+allocated
			}
		}
		for i := 0; i < len(order); i += 2 {
			a, v := rates[i], rates[i+1]
			if order[i] {
				a, v = v, a
			}
			pairs = append(pairs, v/a)
		}
	}
	slices.Sort(pairs)
	rateAlone := float64(alone) / aloneTime.Seconds()
	rateViewed := float64(viewed) / viewedTime.Seconds()
	b.ReportMetric(rateAlone, "req/s-alone")
	b.ReportMetric(rateViewed, "req/s-viewed")
	b.ReportMetric(rateViewed/rateAlone, "ratio")
	b.ReportMetric(pairs[len(pairs)/2], "median-ratio")
	b.ReportMetric(float64(aloneCPU.Nanoseconds())/float64(alone), "cpu-ns/req-alone")
	b.ReportMetric(float64(viewedCPU.Nanoseconds())/float64(viewed), "cpu-ns/req-viewed")
	b.ReportMetric(float64(aloneAlloc)/float64(alone), "B/req-alone")
	b.ReportMetric(float64(viewedAlloc)/float64(viewed), "B/req-viewed")
	b.ReportMetric(float64(drawn)/viewedTime.Seconds(), "pages/s")
	b.ReportMetric(float64(traced)/viewedTime.Seconds(), "trace-lines/s")
}
