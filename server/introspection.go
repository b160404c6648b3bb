package server

import (
	"cmp"
	"net"
	"slices"
	"time"

	"github.com/hutchzk/hutch/monitor"
	"github.com/hutchzk/hutch/session"
	"github.com/hutchzk/hutch/zkdb"
)

// The server as its operators see it: Server implements monitor.Source,
// and package monitor renders every four-letter word, admin command and
// metric from the snapshots read here.

// Snapshot reads the parts of the server's state asked for
// (monitor.Source). It waits for no request in flight.
func (s *Server) Snapshot(want monitor.Parts) *monitor.Snapshot {
	snap := &monitor.Snapshot{Taken: time.Now(), Serving: !s.notServing.Load(), Server: s.settings()}
	if want&monitor.PartReplication != 0 {
		snap.Mode, snap.Replication = replicationView(s.Replication())
	} else {
		snap.Mode = s.Mode()
	}
	if want&monitor.PartStats != 0 {
		snap.Stats = s.Stats()
	}
	if want&monitor.PartConnections != 0 {
		snap.Connections = s.connectionReports()
	}
	if want&monitor.PartSessions != 0 {
		snap.Sessions = s.sessionReports(snap.Mode)
	}
	if want&monitor.PartWatches != 0 {
		snap.Watches = s.watchReports()
	}
	if want&monitor.PartDigests != 0 {
		snap.Digests = s.digests()
	}
	return snap
}

// settings are the server's addresses, limits and directories.
func (s *Server) settings() monitor.Server {
	cfg := s.cfg
	var dataDir string
	if cfg.Raft != nil {
		dataDir = cfg.Raft.DataDir
	}
	logDir := cfg.DataLogDir
	if logDir == "" {
		logDir = dataDir
	}
	addr := func(a net.Addr) string {
		if a == nil {
			return ""
		}
		return a.String()
	}
	out := monitor.Server{
		SecureAddr:        addr(s.SecureAddr()),
		AdminAddr:         addr(s.AdminAddr()),
		Started:           s.stats.started,
		TickTime:          cfg.TickTime,
		MinSessionTimeout: cfg.MinSessionTimeout,
		MaxSessionTimeout: cfg.MaxSessionTimeout,
		MaxClientCnxns:    max(cfg.MaxClientConnsPerIP, 0), // ZooKeeper's 0 is unlimited
		InitLimit:         cfg.InitLimit,
		SyncLimit:         cfg.SyncLimit,
		DataDir:           dataDir,
		DataLogDir:        logDir,
		ConfigText:        cfg.ConfigText,
	}
	if s.ln != nil {
		out.ClientAddr = s.ln.Addr().String()
	}
	return out
}

// Stats returns the current counters and the state's sizes.
func (s *Server) Stats() monitor.Stats {
	n := s.db.Counts()
	lo, avg, hi := s.stats.latency.read()
	last, smallest, largest := s.stats.proposalSizes()
	return monitor.Stats{
		PacketsReceived: s.stats.packetsReceived.Load(),
		PacketsSent:     s.stats.packetsSent.Load(),
		BytesReceived:   s.stats.bytesReceived.Load(),
		BytesSent:       s.stats.bytesSent.Load(),
		Txns:            s.stats.txns.Load(),
		Notifications:   s.stats.notifications.Load(),
		Connections:     s.stats.connections.Load(),
		Outstanding:     max(s.stats.outstanding.Load(), 0),
		AuthFailed:      s.stats.authFailed.Load(),
		Forwarded:       s.forwarded(),
		MinLatency:      lo,
		AvgLatency:      avg,
		MaxLatency:      hi,
		ProposalLast:    last,
		ProposalMin:     smallest,
		ProposalMax:     largest,
		Durations:       s.stats.durations.Read(),
		Sessions:        n.Sessions,
		Watches:         n.Watches,
		Nodes:           n.Nodes,
		Ephemerals:      n.Ephemerals,
		DataSize:        n.DataSize,
		LastZxid:        n.LastZxid,
	}
}

// replicationView is the committer's account of the ensemble in the
// monitor's terms: the one place the operators' views read it from.
func replicationView(r ReplicationInfo) (mode string, out monitor.Replication) {
	out = monitor.Replication{NodeID: r.NodeID, LeaderID: r.LeaderID, LeaderAddr: r.LeaderAddr, Term: r.Term,
		LastContact: r.LastContact, Raft: r.Raft, DataDir: r.DataDir}
	for _, m := range r.Members {
		out.Members = append(out.Members, monitor.Member(m))
	}
	return r.Mode, out
}

// connectionReports copies every open connection's statistics, oldest
// connection first.
func (s *Server) connectionReports() []monitor.Connection {
	open := s.openConns()
	slices.SortFunc(open, func(a, b *conn) int { return cmp.Compare(a.id, b.id) })
	out := make([]monitor.Connection, 0, len(open))
	for _, c := range open {
		out = append(out, c.report())
	}
	return out
}

// sessionReports lists the sessions: those on the timers this node
// expires them by first, in timer order, then the others by id. A
// follower reports no timers: the leader's are the ones that expire
// sessions, and ZooKeeper's learners report none either.
func (s *Server) sessionReports(mode string) []monitor.Session {
	var buckets []session.Bucket
	if mode != monitor.Follower {
		buckets = s.db.ExpiryBuckets()
	}
	open := s.db.Sessions()
	ephemerals := s.db.Ephemerals()
	out := make([]monitor.Session, 0, len(open))
	index := map[int64]int{}
	get := func(id int64) *monitor.Session {
		i, ok := index[id]
		if !ok {
			i = len(out)
			index[id] = i
			out = append(out, monitor.Session{ID: id})
		}
		return &out[i]
	}
	for _, b := range buckets {
		for _, id := range b.Sessions {
			get(id).Expires = b.Expires
		}
	}
	for _, info := range open {
		se := get(info.ID)
		se.Timeout = info.Timeout
		if c := s.connByID(info.Conn); c != nil {
			se.Remote = c.nc.RemoteAddr().String()
		}
	}
	owners := make([]int64, 0, len(ephemerals))
	for id := range ephemerals {
		owners = append(owners, id)
	}
	slices.Sort(owners)
	for _, id := range owners {
		get(id).Ephemerals = ephemerals[id]
	}
	return out
}

// watchReports lists the watches with the sessions of the connections
// that set them (the DB keeps them by connection; ZooKeeper reports them
// by session).
func (s *Server) watchReports() []monitor.Watch {
	entries := s.db.Watches()
	out := make([]monitor.Watch, len(entries))
	sessions := map[int64]int64{}
	for i, e := range entries {
		id, ok := sessions[e.Watcher]
		if !ok {
			if c := s.connByID(e.Watcher); c != nil {
				id = c.sessionID.Load()
			}
			sessions[e.Watcher] = id
		}
		out[i] = monitor.Watch{Path: e.Path, Watcher: e.Watcher, Session: id, Child: e.Child, Mode: e.Mode}
	}
	return out
}

// digests reads the tree's digests and the last snapshot.
func (s *Server) digests() monitor.Digests {
	var d monitor.Digests
	d.Tree, d.Zxid = s.db.Digest()
	for _, x := range s.db.DigestLog() {
		d.Log = append(d.Log, monitor.ZxidDigest(x))
	}
	if info := s.db.LastSnapshot(); info != nil {
		d.LastSnapshot = &monitor.SnapshotInfo{Zxid: info.Zxid, Time: info.Time}
	}
	return d
}

// Node reads a znode as an anonymous client would (monitor.Source).
func (s *Server) Node(path string) (monitor.Node, error) {
	n := monitor.Node{Path: path}
	var err error
	s.db.Read(func(v *zkdb.View) {
		if n.Stat, err = v.Tree.Exists(path); err != nil {
			return
		}
		data, _, dataErr := v.Tree.GetData(path, nil)
		acl, _, aclErr := v.Tree.GetACL(path, nil)
		if dataErr == nil && aclErr == nil {
			n.Readable, n.Data, n.ACL = true, data, acl
		}
	})
	return n, err
}

// Children reads one page of a znode's children as an anonymous client
// would (monitor.Source).
func (s *Server) Children(path, after string, limit int) ([]string, error) {
	var names []string
	var err error
	s.db.Read(func(v *zkdb.View) { names, _, err = v.Tree.GetChildren(path, nil) })
	if err != nil {
		return nil, err
	}
	from, found := slices.BinarySearch(names, after)
	if found {
		from++
	}
	to := min(from+max(limit, 0), len(names))
	return slices.Clone(names[from:to]), nil
}

// ResetStats clears what srst clears (monitor.Source).
func (s *Server) ResetStats() { s.stats.reset() }

// ResetConnectionStats clears every connection's statistics, as crst
// (monitor.Source).
func (s *Server) ResetConnectionStats() {
	for _, c := range s.openConns() {
		c.stats.reset()
	}
}

// report copies the connection's statistics for cons, stat and the
// connections admin command.
func (c *conn) report() monitor.Connection {
	cs := c.stats
	r := monitor.Connection{
		ID:          c.id,
		Remote:      c.nc.RemoteAddr().String(),
		Secure:      c.secure,
		Session:     c.sessionID.Load(),
		Timeout:     time.Duration(c.timeout.Load()),
		Outstanding: cs.outstanding.Load(),
		Received:    cs.received.Load(),
		Sent:        cs.sent.Load(),
		Established: cs.established,
	}
	cs.mu.Lock()
	r.LastOp, r.LastCxid, r.LastZxid, r.LastResponse, r.LastLatency = cs.lastOp, cs.lastCxid, cs.lastZxid, cs.lastResponse, cs.lastLatency
	r.MaxLatency = cs.maxLat
	if cs.count > 0 {
		r.MinLatency, r.AvgLatency = cs.minLat, cs.totalLat/cs.count
	}
	cs.mu.Unlock()
	return r
}
