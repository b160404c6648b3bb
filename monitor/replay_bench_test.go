package monitor_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/monitor"
	"github.com/hutchzk/hutch/server"
	"github.com/hutchzk/hutch/wire"
)

// BenchmarkReplayPage is the cost of one replayed page on a server like
// BenchmarkViewCost's, without the million nodes: 10,000 idle sessions, a
// queue of fifty, and a full trace window of setData churn on nodes the
// pages do not show. Each iteration asks a page at a point no viewer
// asked before (as a viewer stepping through the history does); points
// between the same two events that matter to a page replay to the same
// state, which viewers share (with this churn, all of them), with what is
// drawn from it. With HUTCH_REPLAY_CHURN=queue the window's churn is a
// contender joining the queue and leaving it instead, so that every point
// replays to a state of its own and nothing is shared but the window and
// the snapshot. Beside each, the same page live. It reports the
// process's CPU time per page (the client's included) beside the time a
// page takes.
func BenchmarkReplayPage(b *testing.B) {
	srv := server.New(server.Config{NoClientPort: true, Logger: benchQuiet, MaxSessionTimeout: time.Hour, MaxClientConnsPerIP: -1})
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	world := []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
	for _, p := range []string{"/t", "/t/d000", "/t/d000/n000", "/t/d001"} {
		if err := srv.CreateNode(p, nil, world, wire.ModePersistent, 0); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 1000 {
		if err := srv.CreateNode(fmt.Sprintf("/t/d001/n%03d", i), []byte("value of a node"), world, wire.ModePersistent, 0); err != nil {
			b.Fatal(err)
		}
	}
	for range 10000 {
		idleSession(b, srv)
	}
	for i := range 50 {
		c := benchConnect(b, srv)
		if _, err := c.Create("/t/d000/n000/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			b.Fatal(err)
		}
		if i > 0 {
			if _, _, _, err := c.ExistsW(fmt.Sprintf("/t/d000/n000/lock-%010d", i-1)); err != nil {
				b.Fatal(err)
			}
		}
	}
	c := benchConnect(b, srv)
	for i := range 25000 {
		var err error
		if os.Getenv("HUTCH_REPLAY_CHURN") == "queue" {
			// A contender joins the queue, and the next write takes
			// it out.
			if i%2 == 0 {
				_, err = c.Create("/t/d000/n000/lock-", []byte("churn"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
			} else {
				err = c.Delete(fmt.Sprintf("/t/d000/n000/lock-%010d", 50+i/2), -1)
			}
		} else {
			_, err = c.Set(fmt.Sprintf("/t/d001/n%03d", i%1000), []byte("new value"), -1)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	ui := httptest.NewServer(monitor.New(srv, monitor.Config{Logger: benchQuiet}).UIHandler("127.0.0.1:0"))
	b.Cleanup(ui.Close)
	h := srv.Trace().History()
	for _, page := range []string{"/ui/locks?fragment=1", "/ui/sessions?fragment=1", "/ui/watches?fragment=1", "/ui/tree?fragment=1&path=/t/d000/n000"} {
		for _, replay := range []bool{true, false} {
			name := page[4:strings.IndexByte(page, '?')] + "/live"
			if replay {
				name = page[4:strings.IndexByte(page, '?')] + "/replay"
			}
			b.Run(name, func(b *testing.B) {
				st := h.Stats()
				i := 0
				cpu0 := cpuTime()
				for b.Loop() {
					url := ui.URL + page
					if replay {
						url += "&at=" + strconv.FormatUint(st.LastSeq-uint64(1+i*7%int(st.LastSeq-st.FirstSeq)), 10)
					}
					i++
					resp, err := ui.Client().Get(url)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				// The process's CPU time a page, the client's included:
				// what other processes on the machine disturb less than
				// the time a page takes.
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/page")
			})
		}
	}
}
