package monitor_test

import (
	"fmt"
	"io"
	"net/http/httptest"
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
// queue of fifty, and a full trace window of setData churn. Each
// iteration asks a page at a point no viewer asked before (as a viewer
// stepping through the history does), so only what every replay shares
// (the window as read, the snapshot's sessions) is shared; beside it, the
// same page live.
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
		if _, err := c.Set(fmt.Sprintf("/t/d001/n%03d", i%1000), []byte("new value"), -1); err != nil {
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
			})
		}
	}
}
