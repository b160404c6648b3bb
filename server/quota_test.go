package server

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/quota"
)

// TestQuotaLoggerRateLimits: like ZooKeeper's RateLogger, the first of a
// run of equal messages is written at once, repeats within 100 ms are
// counted and written as "[N times] ..." when the message comes again
// later or another message comes.
func TestQuotaLoggerRateLimits(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	q := quotaLogger{log: slog.New(slog.NewTextHandler(&buf, nil)), now: func() time.Time { return now }}
	a := quota.Exceeded{Path: "/a", Current: 3, Limit: 2}
	b := quota.Exceeded{Path: "/a", Bytes: true, Current: 9, Limit: 5, Hard: true}
	step := func(d time.Duration, e quota.Exceeded) {
		now = now.Add(d)
		q.passed(e)
	}
	step(0, a)
	step(10*time.Millisecond, a)
	step(10*time.Millisecond, a)
	step(10*time.Millisecond, b) // flushes a's two repeats
	step(10*time.Millisecond, b)
	step(200*time.Millisecond, b) // after the interval: the count so far
	step(0, b)
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		_, m, _ := strings.Cut(line, "msg=")
		msgs = append(msgs, m)
	}
	want := []string{
		`"Quota exceeded: /a [current count=3, softCountLimit=2]" path=/a hard=false`,
		`"[2 times] Quota exceeded: /a [current count=3, softCountLimit=2]"`,
		`"Quota exceeded: /a [current bytes=9, hardByteLimit=5]" path=/a hard=true`,
		`"[2 times] Quota exceeded: /a [current bytes=9, hardByteLimit=5]"`,
	}
	if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("logged:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
}

// TestEnforceQuota runs setquota's nodes and writes through a client:
// the stats follow, a hard limit refuses with QUOTAEXCEEDED (-125) and is
// logged, a soft one is logged and let through; without EnforceQuota
// nothing is refused.
func TestEnforceQuota(t *testing.T) {
	for _, enforce := range []bool{false, true} {
		logs := &syncBuffer{}
		s := startServer(t, Config{EnforceQuota: enforce, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		c, _ := dial(t, s.Addr().String(), 10*time.Second)
		must := func(_ any, err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(c.Create("/a", []byte("x"), 0, zk.WorldACL(zk.PermAll)))
		must(c.Create("/zookeeper/quota/a", nil, 0, zk.WorldACL(zk.PermAll)))
		must(c.Create("/zookeeper/quota/a/zookeeper_limits", []byte("count=2,bytes=-1=;byteHardLimit=-1;countHardLimit=3"), 0, zk.WorldACL(zk.PermAll)))
		must(c.Create("/zookeeper/quota/a/zookeeper_stats", []byte("count=0,bytes=0"), 0, zk.WorldACL(zk.PermAll)))
		must(c.Create("/a/1", []byte("yy"), 0, zk.WorldACL(zk.PermAll)))
		must(c.Create("/a/2", nil, 0, zk.WorldACL(zk.PermAll)))
		_, err := c.Create("/a/3", nil, 0, zk.WorldACL(zk.PermAll))
		stats, _, gerr := c.Get("/zookeeper/quota/a/zookeeper_stats")
		must(nil, gerr)
		if enforce {
			// go-zookeeper v1.0.4 has no name for -125.
			if err == nil || err.Error() != "unknown error: -125" {
				t.Fatalf("create past the hard count: %v, want QUOTAEXCEEDED", err)
			}
			if string(stats) != "count=3,bytes=3" {
				t.Fatalf("stats %q", stats)
			}
			waitFor(t, 10*time.Second, "the hard limit's warning", func() bool {
				return strings.Contains(logs.String(), `level=WARN msg="Quota exceeded: /a [current count=4, hardCountLimit=3]"`)
			})
		} else {
			if err != nil {
				t.Fatalf("create without enforcement: %v", err)
			}
			if string(stats) != "count=4,bytes=3" {
				t.Fatalf("stats %q", stats)
			}
			if strings.Contains(logs.String(), "Quota exceeded") {
				t.Fatalf("logged without enforcement:\n%s", logs)
			}
		}
	}
}

// TestQuotaAcrossRestart: the stats are part of the replicated state, so a
// member restarted from its log has them as they were, and goes on
// counting and enforcing (which paths have quotas is rebuilt from the
// zookeeper_limits nodes).
func TestQuotaAcrossRestart(t *testing.T) {
	d := startDurable(t, 1, nil, "", DefaultTickTime, func(_ uint64, cfg *Config) { cfg.EnforceQuota = true })
	addr := d.cfgs[0].ListenAddr
	c, _ := dial(t, addr, 10*time.Second)
	for _, n := range []struct{ path, data string }{
		{"/a", "12"}, {"/zookeeper/quota/a", ""},
		{"/zookeeper/quota/a/zookeeper_limits", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=3"},
		{"/zookeeper/quota/a/zookeeper_stats", "count=0,bytes=0"}, {"/a/b", "345"},
	} {
		if _, err := c.Create(n.path, []byte(n.data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	d.stop(0)
	if err := d.start(0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "leadership", func() bool { return d.leader() != nil })
	c, _ = dial(t, addr, 10*time.Second)
	stats, _, err := c.Get("/zookeeper/quota/a/zookeeper_stats")
	if err != nil || string(stats) != "count=2,bytes=5" {
		t.Fatalf("stats after restart: %q %v", stats, err)
	}
	if _, err := c.Create("/a/c", []byte("6"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/a/d", nil, 0, zk.WorldACL(zk.PermAll)); err == nil || err.Error() != "unknown error: -125" {
		t.Fatalf("create past the hard count after restart: %v, want QUOTAEXCEEDED", err)
	}
	if stats, _, _ = c.Get("/zookeeper/quota/a/zookeeper_stats"); string(stats) != "count=3,bytes=6" {
		t.Fatalf("stats: %q", stats)
	}
}
