package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/raftstore"
	"github.com/hutchzk/hutch/server"
)

// A program that embeds its coordinator: one hutch node with no port at
// all, whose clients (go-zookeeper, here) connect in memory. The
// program's own code takes a lock and elects a leader with it.
func ExampleServer_DialMemory() {
	node := server.New(server.Config{NoClientPort: true, Logger: slog.New(slog.DiscardHandler)})
	if err := node.Start(); err != nil {
		fmt.Println("start:", err)
		return
	}
	defer node.Close()
	dial := func(string, string, time.Duration) (net.Conn, error) { return node.DialMemory() }

	worker := connect([]string{"127.0.0.1:0"}, dial)
	defer worker.Close()
	lock := zk.NewLock(worker, "/jobs/lock", zk.WorldACL(zk.PermAll))
	if err := lock.Lock(); err != nil {
		fmt.Println("lock:", err)
		return
	}
	fmt.Println("worker holds the lock")
	_ = lock.Unlock()

	for _, name := range []string{"a", "b", "c"} {
		c := connect([]string{"127.0.0.1:0"}, dial)
		defer c.Close()
		volunteer(c, name)
	}
	fmt.Println("leader:", leader(worker))
	// Output:
	// worker holds the lock
	// leader: a
}

// The same program with a three-node coordinator in one process: Raft
// between the nodes over loopback, on ports the kernel picks (the first
// node starts alone, the others join it), clients in memory, each
// connected to a different node.
func ExampleServer_AddMembers() {
	dir, err := os.MkdirTemp("", "coordinator-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	secret := []byte("the nodes' shared secret, 16 bytes or more")
	quiet := slog.New(slog.DiscardHandler)
	node := func(id uint64, peers map[uint64]string) (*server.Server, error) {
		n := server.New(server.Config{NoClientPort: true, Logger: quiet, Raft: &raftstore.Config{
			NodeID: id, RaftAddr: "127.0.0.1:0", Peers: peers, Secret: secret,
			DataDir: filepath.Join(dir, strconv.FormatUint(id, 10))}})
		return n, n.Start()
	}
	first, err := node(1, nil) // a lone voter: it leads at once
	if err != nil {
		fmt.Println(err)
		return
	}
	defer first.Close()
	<-first.Ready()
	firstAddr := first.Replication().Raft["raft_addr"]
	nodes := []*server.Server{first}
	for id := uint64(2); id <= 3; id++ {
		n, err := node(id, map[uint64]string{1: firstAddr}) // waits to be added
		if err != nil {
			fmt.Println(err)
			return
		}
		defer n.Close()
		host, port, _ := net.SplitHostPort(n.Replication().Raft["raft_addr"])
		quorumPort, _ := strconv.Atoi(port)
		if _, err := first.AddMembers(context.Background(), membership.Member{ID: id, Host: host, QuorumPort: quorumPort}); err != nil {
			fmt.Println("add member:", err)
			return
		}
		<-n.Ready()
		nodes = append(nodes, n)
	}
	// In-memory names for the three nodes: 127.0.0.1:1, :2 and :3.
	dial := func(_, addr string, _ time.Duration) (net.Conn, error) {
		_, port, _ := net.SplitHostPort(addr)
		i, _ := strconv.Atoi(port)
		return nodes[i-1].DialMemory()
	}
	for i, name := range []string{"a", "b", "c"} {
		c := connect([]string{"127.0.0.1:" + strconv.Itoa(i+1)}, dial) // one node each
		defer c.Close()
		lock := zk.NewLock(c, "/jobs/lock", zk.WorldACL(zk.PermAll))
		if err := lock.Lock(); err != nil {
			fmt.Println("lock:", err)
			return
		}
		fmt.Printf("%s holds the lock through node %d\n", name, i+1)
		_ = lock.Unlock()
		volunteer(c, name)
	}
	all := connect([]string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, dial)
	defer all.Close()
	_, _ = all.Sync("/election")
	fmt.Println("leader:", leader(all))
	// Output:
	// a holds the lock through node 1
	// b holds the lock through node 2
	// c holds the lock through node 3
	// leader: a
}

// connect opens a session through dial and waits for it.
func connect(servers []string, dial zk.Dialer) *zk.Conn {
	c, events, err := zk.Connect(servers, 10*time.Second, zk.WithDialer(dial), zk.WithLogger(quietZK{}))
	if err != nil {
		panic(err)
	}
	for c.State() != zk.StateHasSession {
		<-events
	}
	return c
}

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// volunteer enters name into the election: an ephemeral sequential node
// under /election, the lowest of which leads.
func volunteer(c *zk.Conn, name string) {
	if _, err := c.Create("/election", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
		panic(err)
	}
	if _, err := c.Create("/election/n_", []byte(name), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		panic(err)
	}
}

// leader is the name in the lowest election node.
func leader(c *zk.Conn) string {
	children, _, err := c.Children("/election")
	if err != nil || len(children) == 0 {
		return fmt.Sprint("none: ", err)
	}
	sort.Strings(children)
	data, _, err := c.Get("/election/" + children[0])
	if err != nil {
		return err.Error()
	}
	return string(data)
}
