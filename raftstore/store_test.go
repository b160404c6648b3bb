package raftstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

func TestSingleNodeInMemory(t *testing.T) {
	n := openNode(t, testConfig(1), newTestApp())
	waitLeader(t, 5*time.Second, n)

	propose(t, n, createCommand(1, "/a"), createCommand(1, "/b"))
	if !n.app.exists("/a") || !n.app.exists("/b") {
		t.Fatal("proposed nodes missing after commit")
	}
	if _, zxid := n.app.state(); zxid != 2 {
		t.Fatalf("last zxid %d, want 2", zxid)
	}

	// Forward on the leader proposes without waiting; WaitApplied catches up.
	forward(t, n, createCommand(1, "/c"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.WaitApplied(ctx); err != nil {
		t.Fatalf("wait applied: %v", err)
	}
	if !n.app.exists("/c") {
		t.Fatal("forwarded node missing after WaitApplied")
	}
	if id, addr := n.Leader(); id != 1 || addr != n.Addr() {
		t.Fatalf("leader %d %q, want 1 %q", id, addr, n.Addr())
	}
	if st := n.Stats(); st["state"] != "Leader" || st["fsm_applied_index"] == "0" {
		t.Fatalf("stats %v", st)
	}
}

// TestLeaderStampsTime: the transaction time is the leader's clock, not
// the clock of the node that took the write.
func TestLeaderStampsTime(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, 5*time.Second, nodes...)
	f := followers(nodes, leader)[0]
	before := time.Now().UnixMilli()
	forward(t, f, createCommand(f.cfg.NodeID, "/stamped"))
	waitAllApplied(t, nodes...)
	after := time.Now().UnixMilli()
	for _, n := range nodes {
		if ts := n.app.db.LastTime(); ts < before || ts > after {
			t.Fatalf("node %d: transaction time %d outside [%d, %d]", n.cfg.NodeID, ts, before, after)
		}
	}
}

func TestForwardRejectsMismatchedRequest(t *testing.T) {
	nodes := startCluster(t, 2, nil)
	leader := waitLeader(t, 5*time.Second, nodes...)
	f := followers(nodes, leader)[0]
	bad := zkdb.Command{Kind: zkdb.KindTxn, Txn: tree.Txn{Op: wire.OpDelete, Req: &wire.SetDataRequest{Path: "/x"}}}
	if err := f.Forward(context.Background(), encode(t, []zkdb.Command{bad})); err == nil {
		t.Fatal("the leader took a delete carrying a SetDataRequest")
	}
}

func TestSingleNodeDataDirRestart(t *testing.T) {
	type restartCase struct {
		name       string
		store      string
		snapshotAt int // batch after which to take a snapshot; -1 for none
	}
	var cases []restartCase
	for _, store := range LogStores {
		cases = append(cases, restartCase{store + "/log replay", store, -1},
			restartCase{store + "/snapshot and replay", store, 60},
			restartCase{store + "/snapshot at end", store, 99})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(1)
			cfg.DataDir = t.TempDir()
			cfg.LogStore = tc.store
			n := openNode(t, cfg, newTestApp())
			waitLeader(t, 5*time.Second, n)
			for i := range 100 {
				propose(t, n, createCommand(1, fmt.Sprintf("/n%d", i)))
				if i == tc.snapshotAt {
					if err := n.Snapshot(); err != nil {
						t.Fatalf("snapshot: %v", err)
					}
				}
			}
			wantDigest, wantZxid := n.app.state()
			if wantZxid != 100 {
				t.Fatalf("last zxid %d, want 100", wantZxid)
			}
			if err := n.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}

			cfg.RaftAddr = n.Addr()
			r := openNode(t, cfg, newTestApp())
			waitLeader(t, 5*time.Second, r)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := r.WaitApplied(ctx); err != nil {
				t.Fatalf("wait applied: %v", err)
			}
			if d, z := r.app.state(); d != wantDigest || z != wantZxid {
				t.Fatalf("after restart digest %x zxid %d, want %x %d", d, z, wantDigest, wantZxid)
			}
			if got := r.Stats()["log_store"]; got != tc.store {
				t.Fatalf("log store after restart %q, want %q", got, tc.store)
			}
			// A snapshot restored at start-up replaces no live state.
			if r.app.restoreCount() != 0 {
				t.Fatalf("start-up restore asked for %d resets", r.app.restoreCount())
			}
			// The restarted node keeps accepting writes with the next zxid.
			propose(t, r, createCommand(1, "/after"))
			if _, z := r.app.state(); z != wantZxid+1 {
				t.Fatalf("zxid after restart %d, want %d", z, wantZxid+1)
			}
		})
	}
}

// TestSnapshotIsExact: a snapshot holds exactly the state at its index, and
// replaying the log from there applies nothing twice.
func TestSnapshotIsExact(t *testing.T) {
	app := newTestApp()
	f := &fsm{db: app.db, log: testLogger()}
	apply := func(i uint64) {
		b := zkdb.AppendEntry(nil, 1, encode(t, []zkdb.Command{createCommand(1, fmt.Sprintf("/s%d", i))}))
		f.Apply(&raftLog{Index: i, Data: b})
	}
	for i := uint64(1); i <= 5; i++ {
		apply(i)
	}
	snap, err := f.Snapshot() // taken at index 5 ...
	if err != nil {
		t.Fatal(err)
	}
	d5, z5 := app.state()
	apply(6) // ... and a later apply does not leak into it
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	d6, z6 := app.state()

	app2 := newTestApp()
	f2 := &fsm{db: app2.db, log: testLogger()}
	if err := f2.Restore(sink.reader()); err != nil {
		t.Fatal(err)
	}
	if d, z := app2.state(); d != d5 || z != z5 {
		t.Fatalf("restored digest %x zxid %d, want %x %d", d, z, d5, z5)
	}
	for i := uint64(1); i <= 6; i++ { // a replay from the start skips 1..5
		b := zkdb.AppendEntry(nil, 1, encode(t, []zkdb.Command{createCommand(1, fmt.Sprintf("/s%d", i))}))
		f2.Apply(&raftLog{Index: i, Data: b})
	}
	if d, z := app2.state(); d != d6 || z != z6 {
		t.Fatalf("after restore+replay digest %x zxid %d, want %x %d", d, z, d6, z6)
	}
}

// TestConfigRefusals: an in-memory member of an ensemble, or one without a
// secret, never starts.
func TestConfigRefusals(t *testing.T) {
	peers := map[uint64]string{1: "127.0.0.1:1", 2: "127.0.0.1:2", 3: "127.0.0.1:3"}
	for _, tc := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"peers without a data dir", Config{NodeID: 1, RaftAddr: "127.0.0.1:0", Peers: peers, Secret: testSecret}, ErrVolatileEnsemble},
		{"peers without a secret", Config{NodeID: 1, RaftAddr: "127.0.0.1:0", Peers: peers, DataDir: t.TempDir()}, ErrNoSecret},
		{"node id 0", Config{RaftAddr: "127.0.0.1:0"}, nil},
		{"two peers on one address", Config{NodeID: 1, RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Secret: testSecret,
			Peers: map[uint64]string{1: "127.0.0.1:1", 2: "127.0.0.1:1"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(tc.cfg, newTestApp().db)
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// TestPeersAuthenticate: a node with another secret cannot join, forward
// or be dialled; a raw connection that fails the handshake is closed
// before anything it sends is read; an oversized frame from an
// authenticated peer ends its connection.
func TestPeersAuthenticate(t *testing.T) {
	nodes := startCluster(t, 2, nil)
	leader := waitLeader(t, 5*time.Second, nodes...)

	// A stranger with the wrong secret.
	cfg := testConfig(9)
	cfg.Secret = []byte("some other secret")
	cfg.Peers = map[uint64]string{1: leader.Addr()}
	stranger := openNode(t, cfg, newTestApp())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := stranger.call(ctx, frameIndex, nil); err == nil {
		t.Fatal("a node with the wrong secret asked the leader for its index")
	}
	if _, err := dialPeer(stranger.Store.cfg.Dial, cfg.Secret, leader.Addr(), tagPipe, 2*time.Second); err == nil {
		t.Fatal("handshake with the wrong secret succeeded")
	}
	if _, err := dialPeer(leader.Store.cfg.Dial, leader.Store.cfg.Secret, stranger.Addr(), tagRaft, 2*time.Second); err == nil {
		t.Fatal("the leader accepted a peer that does not know the secret")
	}

	// A raw client that knocks without the secret is closed before it is
	// sent anything.
	c, err := net.DialTimeout("tcp", leader.Addr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	junk := append([]byte(knockMagic+string(tagPipe)), bytes.Repeat([]byte{'F'}, nonceSize+macSize)...)
	if _, err := c.Write(junk); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("the leader answered %d bytes to a forged knock", n)
	}

	// An authenticated peer announcing a frame past the bound.
	f := followers(nodes, leader)[0]
	pc, err := dialPeer(f.Store.cfg.Dial, f.Store.cfg.Secret, leader.Addr(), tagPipe, 2*time.Second)
	if err != nil {
		t.Fatalf("authenticated dial: %v", err)
	}
	defer pc.Close()
	_ = pc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := pc.Write([]byte{0xff, 0xff, 0xff, 0xff, frameCommands}); err != nil {
		t.Fatal(err)
	}
	if n, err := pc.Read(make([]byte, 1)); err == nil {
		t.Fatalf("the leader answered %d bytes to a 4 GiB frame", n)
	}
	// The real followers are unharmed.
	forward(t, f, createCommand(f.cfg.NodeID, "/after-attacks"))
	waitAllApplied(t, nodes...)
}

// blockingSink is a snapshot sink whose writes wait until released, like
// a slow disk.
type blockingSink struct {
	memSink
	release chan struct{}
}

func (s *blockingSink) Write(p []byte) (int, error) {
	<-s.release
	return s.memSink.Write(p)
}

// TestPersistDoesNotBlockApply: writing a snapshot out holds no lock, so
// commands keep applying however slow the disk is.
func TestPersistDoesNotBlockApply(t *testing.T) {
	app := newTestApp()
	f := &fsm{db: app.db, log: testLogger()}
	entry := func(i uint64) *raftLog {
		return &raftLog{Index: i, Data: zkdb.AppendEntry(nil, 1, encode(t, []zkdb.Command{createCommand(1, fmt.Sprintf("/p%d", i))}))}
	}
	f.Apply(entry(1))
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &blockingSink{release: make(chan struct{})}
	persisted := make(chan error, 1)
	go func() { persisted <- snap.Persist(sink) }()
	applied := make(chan struct{})
	go func() {
		for i := uint64(2); i <= 50; i++ {
			f.Apply(entry(i))
		}
		close(applied)
	}()
	select {
	case <-applied:
	case <-time.After(10 * time.Second):
		t.Fatal("applies waited for a snapshot being written")
	}
	close(sink.release)
	if err := <-persisted; err != nil {
		t.Fatal(err)
	}
	if _, z := app.state(); z != 50 {
		t.Fatalf("zxid %d after 50 applies", z)
	}
}
