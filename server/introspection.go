package server

import (
	"cmp"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/monitor"
	"github.com/hutchzk/hutch/session"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// The server as its operators see it: Server implements monitor.Source,
// and package monitor renders every four-letter word, admin command and
// metric from the snapshots read here.

// Snapshot reads the parts of the server's state asked for
// (monitor.Source). It waits for no request in flight.
func (s *Server) Snapshot(want monitor.Parts) *monitor.Snapshot {
	snap := &monitor.Snapshot{Taken: time.Now(), Serving: (!s.notServing.Load() || s.isReadOnly()) && !s.removed.Load(), Server: s.settings()}
	if want&monitor.PartReplication != 0 {
		snap.Mode, snap.Replication = replicationView(s.Replication())
	} else {
		snap.Mode = s.State()
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
		UIAddr:            addr(s.UIAddr()),
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
func replicationView(r ReplicationInfo) (membership.State, monitor.Replication) {
	out := monitor.Replication{NodeID: r.NodeID, LeaderID: r.LeaderID, LeaderAddr: r.LeaderAddr, Term: r.Term,
		Config: r.Members, LastContact: r.LastContact, Raft: r.Raft, DataDir: r.DataDir}
	voting := make(map[uint64]bool, len(r.Replicas))
	for _, rep := range r.Replicas {
		voting[rep.ID] = rep.Voter
	}
	for _, m := range r.Members.Members {
		out.Members = append(out.Members, monitor.Member{ID: m.ID, Addr: m.RaftAddr(), Role: m.Role,
			Client: m.ClientAddr(), Voter: voting[m.ID]})
	}
	if r.Members.IsZero() {
		// Before the first leader has written the membership (or in a
		// group that never had one), Raft's configuration is all there is.
		for _, rep := range r.Replicas {
			role := membership.Participant
			if !rep.Voter {
				role = membership.Observer
			}
			out.Members = append(out.Members, monitor.Member{ID: rep.ID, Addr: rep.Addr, Role: role, Voter: rep.Voter})
		}
	}
	slices.SortFunc(out.Members, func(a, b monitor.Member) int { return cmp.Compare(a.ID, b.ID) })
	return r.State, out
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

// introspectionPiece is how many sessions, or watching connections, one
// hold of the DB's locks reads for a snapshot: a snapshot of 10,000
// sessions is taken in pieces, so a write waits at most for one piece.
const introspectionPiece = 256

// sessionReports lists the sessions: those on the timers this node
// expires them by first, in timer order, then the others by id. A
// follower reports no timers: the leader's are the ones that expire
// sessions, and ZooKeeper's learners report none either. Sessions closed
// while the pieces are read are left out.
func (s *Server) sessionReports(mode membership.State) []monitor.Session {
	var buckets []session.Bucket
	if mode.RunsSessionTimers() {
		buckets = s.db.ExpiryBuckets()
	}
	ids := s.db.SessionIDs() // ascending
	// at[k] is where session ids[k] goes in out: its place on the
	// timers, else after them by id. Positions rather than a map by id:
	// the live view takes this snapshot of every session each second.
	at := make([]int32, len(ids))
	for k := range at {
		at[k] = -1
	}
	out := make([]monitor.Session, len(ids))
	next := int32(0)
	for _, b := range buckets {
		for _, id := range b.Sessions {
			if k, ok := slices.BinarySearch(ids, id); ok && at[k] < 0 {
				at[k], out[next].Expires = next, b.Expires
				next++
			}
		}
	}
	for k := range at {
		if at[k] < 0 {
			at[k] = next
			next++
		}
	}
	for start := 0; start < len(ids); start += introspectionPiece {
		piece := ids[start:min(start+introspectionPiece, len(ids))]
		if mode.RunsSessionTimers() {
			for i, t := range s.db.LastTouches(piece) {
				out[at[start+i]].LastHeard = t
			}
		}
		k, end := start, start+len(piece)
		for _, info := range s.db.SessionDetails(piece) { // in piece's order, the closed left out
			for k < end && ids[k] != info.ID {
				k++
			}
			if k == end {
				break
			}
			se := &out[at[k]]
			se.ID, se.Timeout, se.Node, se.Ephemerals = info.ID, info.Timeout, info.Node, info.Ephemerals
			if c := s.connByID(info.Conn); c != nil {
				s.describeConn(se, c)
			}
		}
	}
	// Sessions closed while the pieces were read were never filled in.
	return slices.DeleteFunc(out, func(se monitor.Session) bool { return se.ID == 0 })
}

// describeConn adds what this node knows of a session attached through
// one of its connections: the client's address, the identities it added
// (a digest's user, never its hash) and the watches it holds here; and,
// where no timer says when the session was last heard, its last request.
func (s *Server) describeConn(se *monitor.Session, c *conn) {
	se.Remote = c.remoteText()
	se.WatchCount = s.db.WatchCount(c.id)
	se.Auth = c.authText()
	if se.LastHeard.IsZero() {
		r := c.report()
		se.LastHeard = r.LastResponse
		if se.LastHeard.IsZero() {
			se.LastHeard = r.Established
		}
	}
}

// watchReports lists the watches with the sessions of the connections
// that set them (the DB keeps them by connection; ZooKeeper reports them
// by session), reading them a piece of connections at a time.
func (s *Server) watchReports() []monitor.Watch {
	var out []monitor.Watch
	for piece := range slices.Chunk(s.db.Watchers(), introspectionPiece) {
		sessions := map[int64]int64{}
		for _, e := range s.db.WatchesOf(piece) {
			id, ok := sessions[e.Watcher]
			if !ok {
				if c := s.connByID(e.Watcher); c != nil {
					id = c.sessionID.Load()
				}
				sessions[e.Watcher] = id
			}
			out = append(out, monitor.Watch{Path: e.Path, Watcher: e.Watcher, Session: id, Child: e.Child, Mode: e.Mode})
		}
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
		var ttl int64
		n.Container, ttl, _ = v.Tree.Mode(path)
		n.TTL = time.Duration(ttl) * time.Millisecond
		data, _, dataErr := v.Tree.GetData(path, nil)
		acl, _, aclErr := v.Tree.GetACL(path, nil)
		if dataErr == nil && aclErr == nil {
			n.Readable, n.Data, n.ACL = true, data, acl
		}
	})
	return n, err
}

// Children reads one page of a znode's children as an anonymous client
// would (monitor.Source). A page of a small node is picked in one pass
// over its children under the read lock; a node with many children is
// copied once under the lock, sorted outside it and kept while its
// children stay the same, so paging through 100,000 children costs the
// writes one copy, not a pass per page.
func (s *Server) Children(path, after string, limit int) ([]string, error) {
	if names, ok := s.children.page(s.db, path, after, limit); ok {
		return names, nil
	}
	var names []string
	var st wire.Stat
	var err error
	s.db.Read(func(v *zkdb.View) {
		st, err = v.Tree.Exists(path)
		if err != nil {
			return
		}
		if st.NumChildren < manyChildren {
			names, _, err = v.Tree.ChildrenPage(path, after, limit, nil)
			return
		}
		names, st, err = v.Tree.ChildNames(path, nil)
	})
	if err != nil || st.NumChildren < manyChildren {
		return names, err
	}
	slices.Sort(names)
	s.children.keep(path, st, names)
	return pageAfter(names, after, limit), nil
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

// authText is the connection's identities as an operator's view shows
// them (a digest's user, never its hash), shared by the snapshots (which
// never change them) and made again only when the identities change
// (each change stores a new list); nil for none.
func (c *conn) authText() []string {
	ids := c.auth.Load()
	if shown := c.authShown.Load(); shown != nil && shown.of == ids {
		return shown.text
	}
	var text []string
	for _, id := range *ids {
		name := id.ID
		if id.Scheme == "digest" {
			name, _, _ = strings.Cut(name, ":")
		}
		text = append(text, id.Scheme+":"+name)
	}
	c.authShown.Store(&shownAuth{of: ids, text: text})
	return text
}

// shownAuth is a list of identities as text, and the list it was made of.
type shownAuth struct {
	of   *[]wire.ID
	text []string
}

// remoteText is the client's address as text, made once.
func (c *conn) remoteText() string {
	c.remoteOnce.Do(func() { c.remote = c.nc.RemoteAddr().String() })
	return c.remote
}

// report copies the connection's statistics for cons, stat and the
// connections admin command.
func (c *conn) report() monitor.Connection {
	cs := c.stats
	r := monitor.Connection{
		ID:          c.id,
		Remote:      c.remoteText(),
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
