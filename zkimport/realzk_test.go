package zkimport_test

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/server"
	"github.com/hutchzk/hutch/zkexport"
	"github.com/hutchzk/hutch/zkformat"
	"github.com/hutchzk/hutch/zkimport"
)

func TestMain(m *testing.M) { realzk.Main(m) }

// bulkNodes is how many plain nodes the real-ZooKeeper import test adds
// beside the special ones: small in CI, 100,000 by hand (see
// docs/operations.md for that run's figures).
var bulkNodes = flag.Int("zkimport.nodes", 3000, "plain znodes the real-ZooKeeper import test creates")

const superSecret = "super:hutch-import-test"

func superDigest() string {
	sum := sha1.Sum([]byte(superSecret))
	user, _, _ := strings.Cut(superSecret, ":")
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// served is one znode as a server serves it.
type served struct {
	data []byte
	acl  []zk.ACL
	stat zk.Stat
}

// TestImportFromRealZooKeeper fills Debian's ZooKeeper 3.8 with every kind
// of node, with several snapshots and logs in a separate dataLogDir, stops
// it, imports, and compares what hutch serves with what ZooKeeper served:
// every node's data, ACL and Stat; a session re-attaches; the next
// sequential node continues the counter; ZooKeeper's digest of what hutch
// serves equals the one ZooKeeper logged last. The second run compresses
// snapshots with gzip and kills ZooKeeper with SIGKILL under a write load:
// every write ZooKeeper acknowledged is in hutch.
func TestImportFromRealZooKeeper(t *testing.T) {
	for _, run := range []struct {
		name     string
		compress string
		kill     bool
	}{
		{"stopped", "", false},
		{"gzip-killed", "gz", true},
	} {
		t.Run(run.name, func(t *testing.T) {
			importRun(t, run.compress, run.kill)
		})
	}
}

func importRun(t *testing.T, compress string, kill bool) {
	logDir := t.TempDir()
	opts := []realzk.Option{
		realzk.Config("snapCount", strconv.Itoa(max(200, *bulkNodes/8))),
		realzk.Config("dataLogDir", logDir),
		realzk.Config("preAllocSize", "256"),
		realzk.TickTime(2 * time.Second),
		realzk.SystemProperty("zookeeper.DigestAuthenticationProvider.superDigest", superDigest()),
		realzk.SystemProperty("jute.maxbuffer", strconv.Itoa(2<<20)),
		// The x509 scheme's provider, so that ZooKeeper takes an x509
		// ACL; no client here logs in over TLS, but the ACL must come
		// across as any other.
		realzk.SystemProperty("zookeeper.authProvider.x509", "org.apache.zookeeper.server.auth.X509AuthenticationProvider"),
	}
	if compress != "" {
		opts = append(opts, realzk.SystemProperty("zookeeper.snapshot.compression.method", compress))
	}
	zks := realzk.Start(t, opts...)
	hutchAddr := "127.0.0.1:" + strconv.Itoa(realzk.FreePort(t))

	admin := connect(t, zks.Addr)
	populate(t, admin, *bulkNodes)

	// Session A lives on and moves to hutch: its client knows both
	// addresses, so it re-attaches when ZooKeeper goes away.
	a, aEvents, err := zk.Connect([]string{zks.Addr, hutchAddr}, 30*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	waitSession(t, aEvents)
	for _, p := range []string{"/eph/a1", "/eph/a2"} {
		if _, err := a.Create(p, []byte("held by A"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Create("/eph/a-", nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	sessionA := a.SessionID()

	if kill {
		if _, err := admin.Create("/load", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	before := walk(t, admin, "/")
	// The second run writes until ZooKeeper is killed under it.
	var acked []string
	var load sync.WaitGroup
	stopLoad := make(chan struct{})
	if kill {
		var mu sync.Mutex
		for w := range 4 {
			load.Go(func() {
				for i := 0; i < 100000; i++ {
					select {
					case <-stopLoad:
						return
					default:
					}
					p := fmt.Sprintf("/load/w%d-%06d", w, i)
					if _, err := admin.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll)); err != nil {
						return
					}
					mu.Lock()
					acked = append(acked, p)
					mu.Unlock()
				}
			})
		}
		waitFor(t, 30*time.Second, "load writes", func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) > 300 })
	}

	if kill {
		if err := zks.Kill(); err != nil {
			t.Fatal(err)
		}
		close(stopLoad)
		load.Wait()
	} else {
		if err := zks.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	admin.Close()

	dataDir := filepath.Join(zks.Dir, "data")
	snaps, _ := zkformat.List(filepath.Join(dataDir, "version-2"), "snapshot")
	logs, _ := zkformat.List(filepath.Join(logDir, "version-2"), "log")
	if len(snaps) < 3 || len(logs) < 3 {
		t.Fatalf("ZooKeeper wrote %d snapshots and %d logs; the test wants several of each", len(snaps), len(logs))
	}
	if compress != "" && !strings.HasSuffix(snaps[len(snaps)-1].Path, "."+compress) {
		t.Fatalf("newest snapshot %s is not compressed", snaps[len(snaps)-1].Path)
	}
	lastDigest := lastLoggedDigest(t, logs)

	out := filepath.Join(t.TempDir(), "hutch-data")
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	report, err := zkimport.Import(zkimport.Options{
		Source: zkimport.Source{DataDir: dataDir, LogDir: logDir},
		Output: zkimport.Output{Dir: out},
	})
	if err != nil {
		t.Fatalf("import: %v\nZooKeeper's log:\n%s", err, zks.LogTail(3000))
	}
	took := time.Since(start)
	runtime.ReadMemStats(&m1)
	snapSize := int64(0)
	if fi, err := os.Stat(report.Snapshot); err == nil {
		snapSize = fi.Size()
	}
	t.Logf("import of %d znodes took %v, allocated %d MB in all (snapshot %s: %d KB); %+v",
		report.Nodes, took, (m1.TotalAlloc-m0.TotalAlloc)>>20, filepath.Base(report.Snapshot), snapSize>>10, *report)
	if report.ZKDigest != lastDigest.Digest || report.LastZxid != lastDigest.Zxid {
		t.Fatalf("imported tree: digest %d at %#x; ZooKeeper logged %d at %#x", report.ZKDigest, report.LastZxid, lastDigest.Digest, lastDigest.Zxid)
	}

	srv := startHutch(t, hutchAddr, out)
	// hutch starts at ZooKeeper's last zxid.
	if srvr, err := realzk.FourLetterWord(hutchAddr, "srvr", 10*time.Second); err != nil || !strings.Contains(srvr, fmt.Sprintf("Zxid: %#x\n", lastDigest.Zxid)) {
		t.Fatalf("hutch's srvr (%v), want Zxid %#x:\n%s", err, lastDigest.Zxid, srvr)
	}
	h := connect(t, srv.Addr().String())
	after := walk(t, h, "/")

	// Every node ZooKeeper served is served alike; in the killed run the
	// load's nodes were still changing while ZooKeeper was read, so they
	// are checked by the acknowledgements instead.
	for p, want := range before {
		if kill && (p == "/load" || strings.HasPrefix(p, "/load/")) {
			continue
		}
		got, ok := after[p]
		if !ok {
			t.Errorf("%s: missing in hutch", p)
			continue
		}
		if !bytes.Equal(got.data, want.data) {
			t.Errorf("%s: data %q, ZooKeeper served %q", p, trim(got.data), trim(want.data))
		}
		if !slices.Equal(got.acl, want.acl) {
			t.Errorf("%s: ACL %v, ZooKeeper served %v", p, got.acl, want.acl)
		}
		if got.stat != want.stat {
			t.Errorf("%s: Stat\n hutch     %+v\n zookeeper %+v", p, got.stat, want.stat)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok && !(kill && strings.HasPrefix(p, "/load/")) {
			t.Errorf("%s: in hutch, not in ZooKeeper", p)
		}
	}
	for _, p := range acked {
		if _, ok := after[p]; !ok {
			t.Errorf("%s: acknowledged by ZooKeeper, missing in hutch", p)
		}
	}
	if kill {
		t.Logf("killed under load: %d writes acknowledged, all in hutch; %d load nodes in hutch", len(acked), countPrefix(after, "/load/"))
	}
	// ZooKeeper's digest of what hutch serves is the digest ZooKeeper
	// logged with its last transaction.
	if d := zkDigestOfServed(after); d != lastDigest.Digest {
		t.Errorf("ZooKeeper's digest of the tree hutch serves is %d; ZooKeeper logged %d", d, lastDigest.Digest)
	}

	// Session A is re-attached by its own client, same id and password,
	// and keeps its ephemerals.
	waitFor(t, 60*time.Second, "session A on hutch", func() bool {
		return a.State() == zk.StateHasSession && a.Server() == hutchAddr
	})
	if a.SessionID() != sessionA {
		t.Fatalf("session A came back as %#x, was %#x", a.SessionID(), sessionA)
	}
	for _, p := range []string{"/eph/a1", "/eph/a2"} {
		_, st, err := a.Get(p)
		if err != nil || st.EphemeralOwner != sessionA {
			t.Fatalf("%s after the move: %v, owner %#x", p, err, st.EphemeralOwner)
		}
	}
	// The next sequential node continues ZooKeeper's counter.
	seq := before["/seq"].stat
	next := (seq.Cversion + seq.NumChildren) / 2
	p, err := a.Create("/seq/item-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil || p != fmt.Sprintf("/seq/item-%010d", next) {
		t.Fatalf("next sequential node: %s (%v), want suffix %010d", p, err, next)
	}
	// hutch's zxids go on after ZooKeeper's.
	if _, st, err := a.Get(p); err != nil || st.Czxid <= lastDigest.Zxid || st.Czxid > lastDigest.Zxid+3 {
		t.Fatalf("a write on hutch: czxid %#x (%v), want just after %#x", st.Czxid, err, lastDigest.Zxid)
	}

	if !kill {
		exportRun(t, srv, h, out, opts)
	}
}

// exportRun is the way back: hutch's data directory exported, ZooKeeper
// 3.8 started from it serves the same tree, field for field, and finds the
// snapshot's digest right.
func exportRun(t *testing.T, srv *server.Server, h *zk.Conn, dataDir string, opts []realzk.Option) {
	if _, err := h.Create("/written-on-hutch", []byte("x"), 0, zk.DigestACL(zk.PermAll, "alice", "pw")); err != nil {
		t.Fatal(err)
	}
	before := walk(t, h, "/")
	h.Close()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	zkDir := filepath.Join(t.TempDir(), "zookeeper-data")
	res, err := zkexport.Export(zkexport.Options{DataDir: dataDir, Out: zkDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("export: %+v", *res)
	zks := realzk.Start(t, append(slices.Clone(opts), realzk.Config("dataDir", zkDir), realzk.Config("dataLogDir", zkDir))...)
	c := connect(t, zks.Addr)
	after := walk(t, c, "/")
	for p, want := range before {
		got, ok := after[p]
		switch {
		case !ok:
			t.Errorf("%s: missing in ZooKeeper after export", p)
		case !bytes.Equal(got.data, want.data) || !slices.Equal(got.acl, want.acl) || got.stat != want.stat:
			t.Errorf("%s: ZooKeeper serves %q %v %+v, hutch served %q %v %+v", p, trim(got.data), got.acl, got.stat, trim(want.data), want.acl, want.stat)
		}
	}
	if len(after) != len(before) {
		t.Errorf("ZooKeeper serves %d nodes after export, hutch served %d", len(after), len(before))
	}
	mntr, err := realzk.FourLetterWord(zks.Addr, "mntr", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(mntr, "digest_mismatches_count\t0") {
		t.Errorf("ZooKeeper found the exported snapshot's digest wrong:\n%s", mntr)
	}
	if !strings.Contains(zks.LogTail(1<<20), "digest") {
		t.Logf("ZooKeeper's log does not mention the digest")
	}
}

func connect(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect([]string{addr}, 30*time.Second, zk.WithLogInfo(false), zk.WithMaxBufferSize(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitSession(t, ev)
	if err := c.AddAuth("digest", []byte(superSecret)); err != nil {
		t.Fatal(err)
	}
	return c
}

func waitSession(t *testing.T, ev <-chan zk.Event) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return
			}
		case <-deadline:
			t.Fatal("no session within 60s")
		}
	}
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// populate creates every kind of node ZooKeeper has, with writes that
// leave every Stat field away from its default somewhere.
func populate(t *testing.T, c *zk.Conn, bulk int) {
	t.Helper()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	open := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"/seq", "/eph", "/acl", "/bulk"} {
		must(c.Create(p, []byte(p), 0, open))
	}
	for range 25 {
		must(c.Create("/seq/item-", []byte("s"), zk.FlagSequence, open))
	}
	must(nil, c.Delete("/seq/item-0000000003", -1))
	// ACLs of every scheme ZooKeeper takes (x509 with its provider
	// loaded, as a server with TLS has it).
	must(c.Create("/acl/x509", []byte("x"), 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: "CN=client,OU=test,O=hutch"}, {Perms: zk.PermRead, Scheme: "world", ID: "anyone"}}))
	must(c.Create("/acl/digest", []byte("d"), 0, zk.DigestACL(zk.PermRead|zk.PermWrite, "alice", "pw")))
	must(c.Create("/acl/ip", []byte("i"), 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1"}, {Perms: zk.PermRead, Scheme: "ip", ID: "10.0.0.0/8"}}))
	must(nil, c.AddAuth("digest", []byte("bob:secret")))
	must(c.Create("/acl/auth", []byte("a"), 0, zk.AuthACL(zk.PermAll)))
	must(c.Create("/acl/none", nil, 0, zk.WorldACL(zk.PermRead)))
	must(c.SetACL("/acl/none", zk.WorldACL(zk.PermRead|zk.PermAdmin), -1))
	// A container that has had a child, and TTL nodes.
	must(c.CreateContainer("/cont", []byte("c"), zk.FlagContainer, open))
	must(c.Create("/cont/kid", nil, 0, open))
	must(c.Create("/cont/kid2", nil, 0, open))
	must(nil, c.Delete("/cont/kid", -1))
	must(c.CreateTTL("/ttl", []byte("t"), zk.FlagTTL, open, time.Hour))
	must(c.CreateTTL("/ttlseq-", []byte("t"), zk.FlagPersistentSequentialWithTTL, open, 90*time.Minute))
	// A node of 1 MB, set twice.
	big := bytes.Repeat([]byte("0123456789abcdef"), 1_000_000/16)
	must(c.Create("/big", big[:10], 0, open))
	must(c.Set("/big", big, -1))
	// A failed multi: nothing of it applies, and it takes a zxid.
	if _, err := c.Multi(&zk.CreateRequest{Path: "/multi-never", Data: []byte("x"), Acl: open},
		&zk.DeleteRequest{Path: "/does-not-exist", Version: -1}); err == nil {
		t.Fatal("the failing multi succeeded")
	}
	must(c.Multi(&zk.CreateRequest{Path: "/multi-ok", Data: []byte("m"), Acl: open},
		&zk.SetDataRequest{Path: "/multi-ok", Data: []byte("mm"), Version: -1}))
	// A session that ends: its ephemerals go with a closeSession.
	b, _, err := zk.Connect([]string{c.Server()}, 30*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/eph/b1", "/eph/b2"} {
		if _, err := b.Create(p, nil, zk.FlagEphemeral, open); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	waitFor(t, 30*time.Second, "b's ephemerals gone", func() bool {
		ok, _, _ := c.Exists("/eph/b1")
		return !ok
	})
	// A quota on /bulk, made as setquota makes it: ZooKeeper counts the
	// bulk into its stats as it goes in, and hutch counts them afresh
	// when it imports (the snapshots hold them half way).
	must(c.Create("/zookeeper/quota/bulk", nil, 0, open))
	must(c.Create("/zookeeper/quota/bulk/zookeeper_limits", []byte("count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=10000000"), 0, open))
	must(c.Create("/zookeeper/quota/bulk/zookeeper_stats", []byte("count=0,bytes=0"), 0, open))
	// The bulk: many nodes across many parents, written concurrently,
	// with some changed and deleted.
	var wg sync.WaitGroup
	var failed atomic.Value
	const writers = 8
	for w := range writers {
		wg.Go(func() {
			for i := w; i < bulk; i += writers {
				g := fmt.Sprintf("/bulk/g%03d", i%100)
				if i < 100 {
					if _, err := c.Create(g, nil, 0, open); err != nil {
						failed.Store(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for w := range writers {
		wg.Go(func() {
			for i := w; i < bulk; i += writers {
				p := fmt.Sprintf("/bulk/g%03d/n%06d", i%100, i)
				if _, err := c.Create(p, []byte(p), 0, open); err != nil {
					failed.Store(fmt.Errorf("%s: %w", p, err))
					return
				}
				if i%10 == 0 {
					if _, err := c.Set(p, []byte("changed"), -1); err != nil {
						failed.Store(err)
						return
					}
				}
				if i%25 == 0 {
					if err := c.Delete(p, -1); err != nil {
						failed.Store(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
}

// walk reads every node under root: data, ACL and Stat.
func walk(t *testing.T, c *zk.Conn, root string) map[string]served {
	t.Helper()
	out := map[string]served{}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		data, st, err := c.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue // the killed run's load, or the TTL cleanup
		}
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		acl, _, err := c.GetACL(p)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("getACL %s: %v", p, err)
		}
		out[p] = served{data: data, acl: acl, stat: *st}
		kids, _, err := c.Children(p)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("children %s: %v", p, err)
		}
		for _, k := range kids {
			queue = append(queue, strings.TrimSuffix(p, "/")+"/"+k)
		}
	}
	return out
}

// lastLoggedDigest reads the digest ZooKeeper wrote with its last whole
// log entry.
func lastLoggedDigest(t *testing.T, logs []zkformat.File) zkformat.ZxidDigest {
	t.Helper()
	var last zkformat.ZxidDigest
	for _, f := range logs {
		lr, err := zkformat.OpenLog(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		for {
			e, err := lr.Next()
			if err != nil {
				break
			}
			if e.Digest != nil {
				last = zkformat.ZxidDigest{Zxid: e.Header.Zxid, Version: e.Digest.Version, Digest: e.Digest.Digest}
			}
		}
		lr.Close()
	}
	if last.Zxid == 0 {
		t.Fatal("ZooKeeper logged no digest")
	}
	return last
}

func startHutch(t *testing.T, addr, dataDir string) *server.Server {
	t.Helper()
	srv := server.New(server.Config{
		ListenAddr:   addr,
		SuperDigest:  superDigest(),
		MaxFrameSize: 2 << 20,
		Raft:         &raftstore.Config{NodeID: 1, RaftAddr: "127.0.0.1:0", DataDir: dataDir},
	})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// zkDigestOfServed computes ZooKeeper's digest (DigestCalculator) from
// what a server serves: the stored cversion is (cversion+numChildren)/2,
// and the nodes whose stored owner the Stat hides are this test's
// container and TTL nodes.
func zkDigestOfServed(nodes map[string]served) int64 {
	var sum int64
	for p, n := range nodes {
		if strings.HasPrefix(p, "/zookeeper/") {
			continue
		}
		st := n.stat
		owner := st.EphemeralOwner
		switch {
		case p == "/cont":
			owner = math.MinInt64
		case p == "/ttl":
			owner = -0x0100000000000000 | time.Hour.Milliseconds()
		case strings.HasPrefix(p, "/ttlseq-"):
			owner = -0x0100000000000000 | (90 * time.Minute).Milliseconds()
		}
		var b bytes.Buffer
		if p != "/" {
			b.WriteString(p)
		}
		b.Write(n.data)
		for _, v := range []any{st.Czxid, st.Mzxid, st.Pzxid, st.Ctime, st.Mtime, st.Version, (st.Cversion + st.NumChildren) / 2, st.Aversion, owner} {
			_ = binary.Write(&b, binary.BigEndian, v)
		}
		sum += int64(crc32.ChecksumIEEE(b.Bytes()))
	}
	return sum
}

func countPrefix(m map[string]served, prefix string) int {
	n := 0
	for p := range m {
		if strings.HasPrefix(p, prefix) {
			n++
		}
	}
	return n
}

func trim(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
