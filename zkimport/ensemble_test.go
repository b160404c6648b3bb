package zkimport

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/server"
)

// TestImportSeedsEnsemble: the same import, given the members' --peers,
// seeds three data directories; the three members start from them as one
// ensemble that serves the imported tree from every member, continues
// its sequence and zxids, and replicates new writes.
func TestImportSeedsEnsemble(t *testing.T) {
	src := fixture(t)
	peers := map[uint64]string{}
	for id := uint64(1); id <= 3; id++ {
		peers[id] = fmt.Sprintf("127.0.0.1:%d", realzk.FreePort(t))
	}
	secret := bytes.Repeat([]byte("s"), 32)
	var servers []*server.Server
	for id := uint64(1); id <= 3; id++ {
		dir := filepath.Join(t.TempDir(), "member")
		if _, err := Import(Options{Source: src, Output: Output{Dir: dir, Members: peers}}); err != nil {
			t.Fatal(err)
		}
		srv := server.New(server.Config{ListenAddr: "127.0.0.1:0", Raft: &raftstore.Config{
			NodeID: id, RaftAddr: peers[id], Peers: peers, DataDir: dir, Secret: secret}})
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		servers = append(servers, srv)
	}
	var conns []*zk.Conn
	for _, srv := range servers {
		c, _, err := zk.Connect([]string{srv.Addr().String()}, 30*time.Second, zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		conns = append(conns, c)
	}
	// Every member serves the imported tree (/c was set to "x" at 0x2d).
	for i, c := range conns {
		data, st, err := getWithin(c, "/c", 30*time.Second)
		if err != nil || string(data) != "x" || st.Mzxid != 0x2d {
			t.Fatalf("member %d: /c = %q %+v (%v)", i+1, data, st, err)
		}
	}
	p, err := conns[0].Create("/n", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil || p != "/n0000000044" {
		t.Fatalf("sequential create on the ensemble: %s (%v), want /n0000000044", p, err)
	}
	if _, err := conns[2].Sync("/"); err != nil {
		t.Fatal(err)
	}
	_, st, err := conns[2].Get(p)
	if err != nil || st.Czxid <= 0x34 {
		t.Fatalf("%s on member 3: %+v (%v), want a zxid after 0x34", p, st, err)
	}
}

// getWithin reads path, retrying while the ensemble elects its leader.
func getWithin(c *zk.Conn, path string, d time.Duration) ([]byte, *zk.Stat, error) {
	deadline := time.Now().Add(d)
	for {
		data, st, err := c.Get(path)
		if err == nil || time.Now().After(deadline) {
			return data, st, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
