package monitor

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/trace"
	"github.com/hutchzk/hutch/wire"
)

// memSource is a Source over state held in memory: a server's state laid
// out by hand. Snapshot fills only the parts asked for, so a view that
// reads a part it did not ask for renders it empty and its test fails;
// the resets and membership changes change the state the next snapshot
// reads.
type memSource struct {
	mu    sync.Mutex // guards every field
	state Snapshot
	nodes map[string]Node
	calls int // snapshots taken
	// broker is the trace; a test publishes to it.
	broker trace.Broker
}

func (m *memSource) Trace() *trace.Broker { return &m.broker }

func (m *memSource) Snapshot(want Parts) *Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	st := m.state
	out := &Snapshot{Taken: st.Taken, Serving: st.Serving, Mode: st.Mode, Server: st.Server}
	if want&PartStats != 0 {
		out.Stats = st.Stats
	}
	if want&PartReplication != 0 {
		out.Replication = st.Replication
		out.Replication.Members = slices.Clone(st.Replication.Members)
	}
	if want&PartConnections != 0 {
		out.Connections = slices.Clone(st.Connections)
	}
	if want&PartSessions != 0 {
		out.Sessions = slices.Clone(st.Sessions)
	}
	if want&PartWatches != 0 {
		out.Watches = slices.Clone(st.Watches)
	}
	if want&PartDigests != 0 {
		out.Digests = st.Digests
	}
	return out
}

var errNoNode = errors.New("no node")

func (m *memSource) Node(path string) (Node, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.nodes[path]
	if !ok {
		return Node{}, errNoNode
	}
	return n, nil
}

func (m *memSource) Children(path, after string, limit int) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.nodes[path]; !ok {
		return nil, errNoNode
	}
	var names []string
	for p := range m.nodes {
		parent, name := p[:strings.LastIndexByte(p, '/')], p[strings.LastIndexByte(p, '/')+1:]
		if parent == "" {
			parent = "/"
		}
		if parent == path && name != "" && name > after {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names[:min(limit, len(names))], nil
}

func (m *memSource) ResetStats() {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := &m.state.Stats
	st.PacketsReceived, st.PacketsSent = 0, 0
	st.MinLatency, st.AvgLatency, st.MaxLatency = 0, 0, 0
	st.ProposalLast, st.ProposalMin, st.ProposalMax = -1, -1, -1
}

func (m *memSource) ResetConnectionStats() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.state.Connections {
		c := &m.state.Connections[i]
		c.Received, c.Sent = 0, 0
		c.LastOp, c.LastCxid, c.LastZxid, c.LastResponse = "NA", -1, -1, time.Time{}
		c.LastLatency, c.MinLatency, c.AvgLatency, c.MaxLatency = 0, 0, 0, 0
	}
}

var errNotLeader = errors.New("not the leader")

var errBadVersion = errors.New("bad version")

// ReconfigureFrom changes the fixture's membership as a reconfig would;
// only the fixture's leader takes it, and only from its version.
func (m *memSource) ReconfigureFrom(_ context.Context, from int64, joining []string, leaving []uint64) (membership.Config, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state.Mode != Leader {
		return membership.Config{}, errNotLeader
	}
	if from != -1 && from != m.state.Replication.Config.Version {
		return membership.Config{}, errBadVersion
	}
	var ids []string
	for _, id := range leaving {
		ids = append(ids, strconv.FormatUint(id, 10))
	}
	r := &m.state.Replication
	cfg, err := membership.Incremental(r.Config, []byte(strings.Join(joining, ",")), []byte(strings.Join(ids, ",")), true)
	if err != nil {
		return cfg, err
	}
	cfg.Version = r.Config.Version + 1
	r.Config, r.Members = cfg, nil
	for _, mem := range cfg.Members {
		r.Members = append(r.Members, Member{ID: mem.ID, Addr: mem.RaftAddr(), Role: mem.Role, Client: mem.ClientAddr(), Voter: mem.Votes()})
	}
	slices.SortFunc(r.Members, func(a, b Member) int { return int(a.ID) - int(b.ID) })
	return cfg, nil
}

// The fixture's moments: the server started at t0, the snapshot is taken
// 90 seconds later.
var t0 = time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// Session ids of the fixture.
const (
	sid1 = 0x0100000000000001
	sid2 = 0x0100000000000002
	sid3 = 0x0100000000000003
)

// standalone is a single node with two sessions connected (one of them
// through a connection that has answered requests), a third session
// whose client went away, and a raw connection that has not handshaken.
func standalone() *memSource {
	return &memSource{state: Snapshot{
		Taken:   at(90 * time.Second),
		Serving: true,
		Mode:    Standalone,
		Server: Server{
			ClientAddr: "127.0.0.1:2181", AdminAddr: "127.0.0.1:8080", Started: t0,
			TickTime: 2 * time.Second, MinSessionTimeout: 4 * time.Second, MaxSessionTimeout: 40 * time.Second,
			MaxClientCnxns: 60, InitLimit: 10, SyncLimit: 5, ConfigText: "tickTime=2000\n",
		},
		Stats: Stats{
			PacketsReceived: 12, PacketsSent: 11, BytesReceived: 300, BytesSent: 900, Txns: 31, Notifications: 2,
			Connections: 3, AuthFailed: 1, MinLatency: 0, AvgLatency: 0.3333, MaxLatency: 1,
			ProposalLast: -1, ProposalMin: -1, ProposalMax: -1,
			Sessions: 3, Watches: 3, Nodes: 7, Ephemerals: 3, DataSize: 40, LastZxid: 0x1f,
		},
		Replication: Replication{NodeID: 1},
		Connections: []Connection{
			{ID: 10, Remote: "127.0.0.1:50001", Session: sid1, Timeout: 30 * time.Second, Received: 6, Sent: 6,
				Established: at(time.Second), LastOp: "GETD", LastCxid: 5, LastZxid: 0x1e, LastResponse: at(2500 * time.Millisecond),
				LastLatency: 1, MinLatency: 0, AvgLatency: 0, MaxLatency: 1},
			{ID: 11, Remote: "127.0.0.1:50002", Session: sid2, Timeout: 10 * time.Second, Secure: true, Received: 2, Sent: 2,
				Established: at(2 * time.Second), LastOp: "CREA", LastCxid: -1, LastZxid: 0x1f, LastResponse: at(3 * time.Second)},
			{ID: 12, Remote: "127.0.0.1:50003", Received: 1, Established: at(89 * time.Second), LastOp: "NA", LastCxid: -1, LastZxid: -1},
		},
		Sessions: []Session{ // timer order: sid2 was touched before sid1
			{ID: sid2, Timeout: 10 * time.Second, Remote: "127.0.0.1:50002", Ephemerals: []string{"/b/e1", "/b/e2"}, Expires: at(120 * time.Second)},
			{ID: sid1, Timeout: 30 * time.Second, Remote: "127.0.0.1:50001", Ephemerals: []string{"/a/e"}, Expires: at(120 * time.Second)},
			{ID: sid3, Timeout: 4 * time.Second, Expires: at(122 * time.Second)},
		},
		Watches: []Watch{
			{Path: "/a", Watcher: 10, Session: sid1, Mode: "standard"},
			{Path: "/a", Watcher: 10, Session: sid1, Child: true, Mode: "standard"},
			{Path: "/b", Watcher: 11, Session: sid2, Mode: "persistent"},
			{Path: "/b", Watcher: 11, Session: sid2, Child: true, Mode: "persistent"},
			{Path: "/a", Watcher: 9, Session: 0, Mode: "standard"}, // its connection closed
		},
		Digests: Digests{Tree: 0xdeadbeef, Zxid: 0x1f, Log: []ZxidDigest{{Zxid: 0x80, Digest: 123}, {Zxid: 0x100, Digest: 456}}},
	}, nodes: map[string]Node{
		"/":    {Path: "/", Readable: true},
		"/a":   {Path: "/a", Readable: true, Data: []byte("x"), ACL: []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}},
		"/a/e": {Path: "/a/e", Readable: true},
		"/b":   {Path: "/b", Readable: true},
		"/c":   {Path: "/c"},
	}}
}

// ensemble is the standalone fixture as one node of a three-node
// ensemble in mode (leader or follower); node 2 leads.
func ensemble(mode membership.State) *memSource {
	m := standalone()
	st := &m.state
	st.Mode = mode
	st.Server.DataDir, st.Server.DataLogDir = "", ""
	st.Replication = Replication{
		NodeID: 2, LeaderID: 2, LeaderAddr: "127.0.0.1:7002", Term: 4,
		Config: membership.FromMembers(0x100000000, []membership.Member{
			{ID: 1, Host: "127.0.0.1", QuorumPort: 7001, ElectionPort: 7101},
			{ID: 2, Host: "127.0.0.1", QuorumPort: 7002, ElectionPort: 7102, ClientHost: "127.0.0.1", ClientPort: 2182},
			{ID: 3, Host: "127.0.0.1", QuorumPort: 7003, ElectionPort: 7103, Role: membership.Observer}}),
		Members: []Member{{ID: 1, Addr: "127.0.0.1:7001", Voter: true}, {ID: 2, Addr: "127.0.0.1:7002", Client: "127.0.0.1:2182", Voter: true},
			{ID: 3, Addr: "127.0.0.1:7003", Role: membership.Observer}},
		Raft: map[string]string{"commit_index": "40", "applied_index": "40", "fsm_applied_index": "40",
			"last_log_index": "41", "first_log_index": "2", "last_snapshot_index": "0"},
	}
	st.Stats.ProposalLast, st.Stats.ProposalMin, st.Stats.ProposalMax = 50, 40, 60
	if mode == Follower {
		st.Replication.NodeID = 1
		st.Replication.LastContact = at(89500 * time.Millisecond)
		for i := range st.Sessions {
			st.Sessions[i].Expires = time.Time{} // the leader runs the timers
		}
	}
	return m
}

func newMonitor(tb testing.TB, src Source, cfg Config) *Monitor {
	tb.Helper()
	if cfg.ListenAddr == "" {
		cfg.ListenAddr = "127.0.0.1:2181"
	}
	if cfg.MaxMemberID == 0 {
		cfg.MaxMemberID = 254
	}
	return New(src, cfg)
}
