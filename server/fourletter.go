package server

import (
	"cmp"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hutchzk/hutch/session"
)

// Version is what hutch reports as ZooKeeper's version: the release whose
// protocol and behaviour it follows. Clients parse the leading x.y.z
// (kazoo's server_version reads it from envi).
const Version = "3.8.0-hutch"

// notServingText is ZooKeeper's answer to most words while the server
// cannot serve clients (here: an ensemble member that knows no leader).
const notServingText = "This ZooKeeper instance is not currently serving requests\n"

// fourLetterWords are the commands a raw connection may send instead of a
// handshake, as ZooKeeper 3.8's FourLetterCommands.
var fourLetterWords = map[string]func(s *Server, b *strings.Builder){
	"ruok": func(_ *Server, b *strings.Builder) { b.WriteString("imok") },
	"conf": serving((*Server).writeConf),
	"cons": serving(func(s *Server, b *strings.Builder) { s.writeConnections(b, false) }),
	"crst": serving(func(s *Server, b *strings.Builder) {
		s.resetConnectionStats()
		b.WriteString("Connection stats reset.\n")
	}),
	"dump": serving((*Server).writeDump),
	"envi": func(s *Server, b *strings.Builder) {
		b.WriteString("Environment:\n")
		for _, kv := range environment() {
			fmt.Fprintf(b, "%s=%s\n", kv[0], kv[1])
		}
	},
	"srst": serving(func(s *Server, b *strings.Builder) {
		s.stats.reset()
		b.WriteString("Server stats reset.\n")
	}),
	"srvr": serving(func(s *Server, b *strings.Builder) { s.writeStat(b, false) }),
	"stat": serving(func(s *Server, b *strings.Builder) { s.writeStat(b, true) }),
	"wchs": serving((*Server).writeWatchSummary),
	"wchc": serving(func(s *Server, b *strings.Builder) { s.writeWatches(b, false) }),
	"wchp": serving(func(s *Server, b *strings.Builder) { s.writeWatches(b, true) }),
	"mntr": serving(func(s *Server, b *strings.Builder) {
		for _, kv := range s.monitorValues(s.Stats(), s.Replication()) {
			if f, ok := kv.value.(float64); ok {
				fmt.Fprintf(b, "zk_%s\t%s\n", kv.key, javaDouble(f))
				continue
			}
			fmt.Fprintf(b, "zk_%s\t%v\n", kv.key, kv.value)
		}
	}),
	"isro": func(s *Server, b *strings.Builder) {
		if s.notServing.Load() {
			b.WriteString("null")
		} else {
			b.WriteString("rw")
		}
	},
	"hash": serving(func(s *Server, b *strings.Builder) {
		for _, d := range s.db.DigestLog() {
			fmt.Fprintf(b, "%x: %d\n", d.Zxid, d.Digest)
		}
	}),
	"dirs": serving(func(s *Server, b *strings.Builder) {
		data, log := s.dirSizes()
		fmt.Fprintf(b, "datadir_size: %d\nlogdir_size: %d\n", data, log)
	}),
}

// serving wraps a word that ZooKeeper answers only while it serves.
func serving(f func(s *Server, b *strings.Builder)) func(s *Server, b *strings.Builder) {
	return func(s *Server, b *strings.Builder) {
		if s.notServing.Load() {
			b.WriteString(notServingText)
			return
		}
		f(s, b)
	}
}

// fourLetterWord answers word if it is one, and reports whether it was.
// A word left off the whitelist gets ZooKeeper's refusal.
func (c *conn) fourLetterWord(word string) bool {
	cmd, ok := fourLetterWords[word]
	if !ok {
		return false
	}
	s := c.srv
	c.received(4)
	s.log.Debug("four-letter word", "cmd", word, "ip", c.ip)
	var b strings.Builder
	if s.wordEnabled(word) {
		cmd(s, &b)
	} else {
		b.WriteString(word + " is not executed because it is not in the whitelist.\n")
	}
	c.out.sendRaw([]byte(b.String()))
	s.stats.packetsSent.Add(1)
	return true
}

// enabledWords resolves the configured whitelist: nil means every word
// on a loopback-only client port, DefaultFourLetterWords otherwise.
func enabledWords(cfg Config) map[string]bool {
	list := cfg.FourLetterWords
	if list == nil {
		if loopbackOnly(cfg.ListenAddr) {
			list = []string{"*"}
		} else {
			list = DefaultFourLetterWords
		}
	}
	on := map[string]bool{"srvr": true} // zkServer.sh status relies on it
	for _, w := range list {
		w = strings.TrimSpace(w)
		if w == "*" {
			for name := range fourLetterWords {
				on[name] = true
			}
			continue
		}
		on[w] = true
	}
	return on
}

func (s *Server) wordEnabled(word string) bool { return s.words[word] }

// loopbackOnly reports whether addr's host can be reached only from this
// machine.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// writeStat writes srvr, or with clients stat: ZooKeeper's StatCommand.
func (s *Server) writeStat(b *strings.Builder, clients bool) {
	fmt.Fprintf(b, "Zookeeper version: %s\n", Version)
	if clients {
		b.WriteString("Clients:\n")
		s.writeConnections(b, true)
	}
	st := s.Stats()
	fmt.Fprintf(b, "Latency min/avg/max: %d/%s/%d\n", st.MinLatency, javaDouble(st.AvgLatency), st.MaxLatency)
	fmt.Fprintf(b, "Received: %d\nSent: %d\nConnections: %d\nOutstanding: %d\n", st.PacketsReceived, st.PacketsSent, st.Connections, st.Outstanding)
	fmt.Fprintf(b, "Zxid: 0x%x\nMode: %s\nNode count: %d\n", st.LastZxid, s.Mode(), st.Nodes)
	if s.Mode() == "leader" {
		last, lo, hi := s.stats.proposalSizes()
		fmt.Fprintf(b, "Proposal sizes last/min/max: %d/%d/%d\n", last, lo, hi)
	}
}

// writeConnections writes cons (or, brief, stat's client list): one line
// per connection, then an empty line, as ServerCnxn.dumpConnectionInfo.
func (s *Server) writeConnections(b *strings.Builder, brief bool) {
	for _, r := range s.connectionReports() {
		interest := "1"
		if r.Session == 0 {
			interest = "0"
		}
		fmt.Fprintf(b, " /%s[%s](queued=%d,recved=%d,sent=%d", r.Remote, interest, r.Outstanding, r.Received, r.Sent)
		if !brief && r.Session != 0 {
			fmt.Fprintf(b, ",sid=0x%x,lop=%s,est=%d,to=%d", r.Session, r.LastOp, r.Established.UnixMilli(), r.Timeout.Milliseconds())
			if r.LastCxid >= 0 {
				fmt.Fprintf(b, ",lcxid=0x%x", r.LastCxid)
			}
			fmt.Fprintf(b, ",lzxid=0x%x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d",
				uint64(r.LastZxid), s.elapsedMillis(r.LastResponse), r.LastLatency, r.MinLatency, r.AvgLatency, r.MaxLatency)
		}
		b.WriteString(")\n")
	}
	b.WriteString("\n")
}

// elapsedMillis is ZooKeeper's Time.currentElapsedTime for t: milliseconds
// on a monotonic clock (here: since the server started), 0 for never.
func (s *Server) elapsedMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Sub(s.stats.started).Milliseconds()
}

// connectionReports copies every open connection's statistics, oldest
// connection first.
func (s *Server) connectionReports() []connReport {
	open := s.openConns()
	slices.SortFunc(open, func(a, b *conn) int { return int(a.id - b.id) })
	out := make([]connReport, 0, len(open))
	for _, c := range open {
		out = append(out, c.report())
	}
	return out
}

func (s *Server) resetConnectionStats() {
	for _, c := range s.openConns() {
		c.stats.reset()
	}
}

// writeConf writes conf: ZooKeeperServer.dumpConf, and for an ensemble
// member QuorumZooKeeperServer's additions.
func (s *Server) writeConf(b *strings.Builder) {
	cfg := s.cfg
	data, logSize := s.dirSizes()
	dataDir, logDir := s.dataDirs()
	maxConns := cfg.MaxClientConnsPerIP
	if maxConns < 0 {
		maxConns = 0 // ZooKeeper's "unlimited"
	}
	fmt.Fprintf(b, "clientPort=%d\n", addrPort(s.Addr()))
	fmt.Fprintf(b, "secureClientPort=%d\n", addrPort(s.SecureAddr()))
	fmt.Fprintf(b, "dataDir=%s\ndataDirSize=%d\ndataLogDir=%s\ndataLogSize=%d\n", dataDir, data, logDir, logSize)
	fmt.Fprintf(b, "tickTime=%d\nmaxClientCnxns=%d\nminSessionTimeout=%d\nmaxSessionTimeout=%d\n",
		cfg.TickTime.Milliseconds(), maxConns, cfg.MinSessionTimeout.Milliseconds(), cfg.MaxSessionTimeout.Milliseconds())
	b.WriteString("clientPortListenBacklog=-1\n")
	r := s.Replication()
	if r.Mode == "standalone" {
		b.WriteString("serverId=0\n")
		return
	}
	fmt.Fprintf(b, "serverId=%d\n", r.NodeID)
	// Raft elects and replicates over one port: it stands for both.
	port := ""
	for _, m := range r.Members {
		if m.ID == r.NodeID {
			_, port, _ = net.SplitHostPort(m.Addr)
		}
	}
	fmt.Fprintf(b, "initLimit=%d\nsyncLimit=%d\nelectionAlg=3\nelectionPort=%s\nquorumPort=%s\npeerType=0\n", cfg.InitLimit, cfg.SyncLimit, port, port)
	b.WriteString("membership: \n")
	for _, m := range r.Members {
		role := "participant"
		if !m.Voter {
			role = "observer"
		}
		host, p, _ := net.SplitHostPort(m.Addr)
		fmt.Fprintf(b, "server.%d=%s:%s:%s:%s\n", m.ID, host, p, p, role)
	}
	b.WriteString("version=0\n")
}

// addrPort is a listener's port, or -1 without one (ZooKeeper's value for
// an unset secure port).
func addrPort(a net.Addr) int {
	if ta, ok := a.(*net.TCPAddr); ok && ta != nil {
		return ta.Port
	}
	return -1
}

// dataDirs names the snapshot and log directories as conf shows them.
func (s *Server) dataDirs() (data, log string) {
	if s.cfg.Raft != nil {
		data = s.cfg.Raft.DataDir
	}
	log = s.cfg.DataLogDir
	if log == "" {
		log = data
	}
	return data, log
}

// dirSizes adds up the bytes under the data and log directories, as dirs
// and conf report them; an in-memory node has none.
func (s *Server) dirSizes() (data, log int64) {
	d, l := s.dataDirs()
	data = dirSize(d)
	if l == d {
		return data, data
	}
	return data, dirSize(l)
}

func dirSize(dir string) int64 {
	if dir == "" {
		return 0
	}
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// javaDate formats t as Java's Date.toString does.
func javaDate(t time.Time) string { return t.Format("Mon Jan 02 15:04:05 MST 2006") }

// writeDump writes dump: the session expiry buckets, each session's
// ephemeral nodes and the connections, as ZooKeeper's DumpCommand.
func (s *Server) writeDump(b *strings.Builder) {
	b.WriteString("SessionTracker dump:\n")
	buckets := s.expiryBuckets()
	if s.Mode() == "follower" {
		// A follower does not expire sessions: like ZooKeeper's learner
		// it lists the sessions connected through it, with their timeouts.
		type entry struct {
			id      int64
			timeout time.Duration
		}
		var list []entry
		for _, c := range s.openConns() {
			if id := c.sessionID.Load(); id != 0 {
				list = append(list, entry{id, time.Duration(c.timeout.Load())})
			}
		}
		slices.SortFunc(list, func(a, b entry) int { return cmp.Compare(a.id, b.id) })
		fmt.Fprintf(b, "Global Sessions(%d):\n", len(list))
		for _, e := range list {
			fmt.Fprintf(b, "0x%x\t%dms\n", e.id, e.timeout.Milliseconds())
		}
	} else {
		total := 0
		for _, bk := range buckets {
			total += len(bk.Sessions)
		}
		fmt.Fprintf(b, "Session Sets (%d)/(%d):\n", len(buckets), total)
	}
	expiry := map[int64]time.Time{}
	for _, bk := range buckets {
		fmt.Fprintf(b, "%d expire at %s:\n", len(bk.Sessions), javaDate(bk.Expires))
		ids := slices.Clone(bk.Sessions)
		slices.Sort(ids)
		for _, id := range ids {
			fmt.Fprintf(b, "\t0x%x\n", id)
			expiry[id] = bk.Expires
		}
	}
	eph := s.db.Ephemerals()
	owners := make([]int64, 0, len(eph))
	for id := range eph {
		owners = append(owners, id)
	}
	slices.Sort(owners)
	fmt.Fprintf(b, "ephemeral nodes dump:\nSessions with Ephemerals (%d):\n", len(owners))
	for _, id := range owners {
		fmt.Fprintf(b, "0x%x:\n", id)
		for _, p := range eph[id] {
			fmt.Fprintf(b, "\t%s\n", p)
		}
	}
	// A connection lives as long as its session, or, before a session,
	// until the handshake deadline.
	type connExpiry struct {
		at    time.Time
		lines []string
	}
	var groups []*connExpiry
	byTime := map[time.Time]*connExpiry{}
	for _, r := range s.connectionReports() {
		at, ok := expiry[r.Session]
		if !ok {
			at = r.Established.Add(s.cfg.MaxSessionTimeout).Truncate(s.cfg.TickTime)
		}
		g := byTime[at]
		if g == nil {
			g = &connExpiry{at: at}
			byTime[at] = g
			groups = append(groups, g)
		}
		g.lines = append(g.lines, fmt.Sprintf("\tip: /%s sessionId: 0x%x\n", r.Remote, r.Session))
	}
	slices.SortFunc(groups, func(a, b *connExpiry) int { return a.at.Compare(b.at) })
	conns := 0
	for _, g := range groups {
		conns += len(g.lines)
	}
	fmt.Fprintf(b, "Connections dump:\nConnections Sets (%d)/(%d):\n", len(groups), conns)
	for _, g := range groups {
		fmt.Fprintf(b, "%d expire at %s:\n", len(g.lines), javaDate(g.at))
		for _, l := range g.lines {
			b.WriteString(l)
		}
	}
}

// sessionWatches maps the DB's data watches, kept by connection, to the
// sessions of those connections, as ZooKeeper reports them.
func (s *Server) sessionWatches() map[int64][]string {
	out := map[int64][]string{}
	for connID, paths := range s.db.DataWatches() {
		var session int64
		if c := s.connByID(connID); c != nil {
			session = c.sessionID.Load()
		}
		out[session] = append(out[session], paths...)
	}
	return out
}

// watchSummary counts data watches as wchs and watch_summary report them.
type watchSummary struct{ connections, paths, total int }

func (s *Server) watchSummary() watchSummary {
	w := s.db.DataWatches()
	paths := map[string]bool{}
	total := 0
	for _, ps := range w {
		total += len(ps)
		for _, p := range ps {
			paths[p] = true
		}
	}
	return watchSummary{connections: len(w), paths: len(paths), total: total}
}

// watchersByPath turns sessionWatches around: the sessions watching each
// path, in id order (wchp, watches_by_path).
func (s *Server) watchersByPath() map[string][]int64 {
	watchers := map[string][]int64{}
	for id, paths := range s.sessionWatches() {
		for _, p := range paths {
			watchers[p] = append(watchers[p], id)
		}
	}
	for _, ids := range watchers {
		slices.Sort(ids)
	}
	return watchers
}

// expiryBuckets are the session expiry buckets dump reports: none on a
// follower, which expires nothing (ZooKeeper's learner reports none either).
func (s *Server) expiryBuckets() []session.Bucket {
	if s.Mode() == "follower" {
		return nil
	}
	return s.db.ExpiryBuckets()
}

func (s *Server) writeWatchSummary(b *strings.Builder) {
	w := s.watchSummary()
	fmt.Fprintf(b, "%d connections watching %d paths\nTotal watches:%d\n", w.connections, w.paths, w.total)
}

// writeWatches writes wchc (by session) or wchp (by path). Paths come in
// the order of Java's HashSet and HashMap of strings, as in ZooKeeper.
func (s *Server) writeWatches(b *strings.Builder, byPath bool) {
	bySession := s.sessionWatches()
	if !byPath {
		ids := make([]int64, 0, len(bySession))
		for id := range bySession {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			fmt.Fprintf(b, "0x%x\n", id)
			for _, p := range javaHashOrder(bySession[id]) {
				fmt.Fprintf(b, "\t%s\n", p)
			}
		}
		b.WriteString("\n")
		return
	}
	watchers := s.watchersByPath()
	paths := make([]string, 0, len(watchers))
	for p := range watchers {
		paths = append(paths, p)
	}
	for _, p := range javaHashOrder(paths) {
		fmt.Fprintf(b, "%s\n", p)
		for _, id := range watchers[p] {
			fmt.Fprintf(b, "\t0x%x\n", id)
		}
	}
	b.WriteString("\n")
}

// javaHashOrder sorts keys into the iteration order of a java.util.HashMap
// (or HashSet) holding them: by bucket in a table sized for their number.
// Keys sharing a bucket come out in insertion order in Java; here, in
// string order.
func javaHashOrder(keys []string) []string {
	size := 16
	for len(keys) > size*3/4 {
		size *= 2
	}
	bucket := func(k string) int32 {
		h := javaStringHash(k)
		return (h ^ int32(uint32(h)>>16)) & int32(size-1)
	}
	out := slices.Clone(keys)
	slices.SortFunc(out, func(a, b string) int {
		if ba, bb := bucket(a), bucket(b); ba != bb {
			return int(ba - bb)
		}
		return strings.Compare(a, b)
	})
	return out
}

// javaDouble formats f as Java's Double.toString does for the values
// latencies take.
func javaDouble(f float64) string {
	if f != 0 && (f < 1e-3 || f >= 1e7) {
		m := strconv.FormatFloat(f, 'E', -1, 64)
		mant, exp, _ := strings.Cut(m, "E")
		if !strings.Contains(mant, ".") {
			mant += ".0"
		}
		e, _ := strconv.Atoi(exp)
		return mant + "E" + strconv.Itoa(e)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// environment lists envi's keys in ZooKeeper's order. hutch is not a JVM:
// the java.* keys carry the Go runtime's equivalents, so tools that parse
// the list find every key.
func environment() [][2]string {
	host, _ := os.Hostname()
	exe, _ := os.Executable()
	wd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	name := strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mb := func(n uint64) string { return strconv.FormatUint(n>>20, 10) + "MB" }
	osName := runtime.GOOS
	if osName != "" {
		osName = strings.ToUpper(osName[:1]) + osName[1:]
	}
	return [][2]string{
		{"zookeeper.version", Version + ", built with " + runtime.Version()},
		{"host.name", host},
		{"java.version", runtime.Version()},
		{"java.vendor", "hutch (Go)"},
		{"java.home", runtime.GOROOT()},
		{"java.class.path", exe},
		{"java.library.path", ""},
		{"java.io.tmpdir", os.TempDir()},
		{"java.compiler", "<NA>"},
		{"os.name", osName},
		{"os.arch", runtime.GOARCH},
		{"os.version", kernelRelease()},
		{"user.name", name},
		{"user.home", home},
		{"user.dir", wd},
		{"os.memory.free", mb(ms.HeapIdle)},
		{"os.memory.max", mb(ms.Sys)},
		{"os.memory.total", mb(ms.HeapSys)},
	}
}

// kernelRelease reads the running kernel's release, as Java's os.version.
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// monitorValue is one mntr line.
type monitorValue struct {
	key   string
	value any
}

// monitorValues lists mntr's keys: version and state first, then the
// metrics hutch keeps, in the order ZooKeeper 3.8 prints them.
// It takes the statistics and replication state the caller read, so one
// scrape reads each once.
func (s *Server) monitorValues(st StatsSnapshot, r ReplicationInfo) []monitorValue {
	fds, maxFDs := fileDescriptors()
	v := []monitorValue{
		{"version", Version},
		{"server_state", r.Mode},
		{"ephemerals_count", st.Ephemerals},
		{"num_alive_connections", st.Connections},
		{"avg_latency", st.AvgLatency},
		{"outstanding_requests", st.Outstanding},
		{"znode_count", st.Nodes},
		{"global_sessions", st.Sessions},
		{"packets_sent", st.PacketsSent},
		{"packets_received", st.PacketsReceived},
		{"watch_count", st.Watches},
		{"auth_failed_count", st.AuthFailed},
		{"min_latency", st.MinLatency},
		{"max_file_descriptor_count", maxFDs},
		{"approximate_data_size", st.DataSize},
		{"open_file_descriptor_count", fds},
		{"local_sessions", 0},
		{"uptime", st.Uptime.Milliseconds()},
		{"max_latency", st.MaxLatency},
		{"bytes_received_count", st.BytesReceived},
	}
	if r.Mode == "leader" {
		synced := 0
		for _, m := range r.Members {
			if m.ID != r.NodeID && m.Voter {
				synced++
			}
		}
		last, lo, hi := s.stats.proposalSizes()
		v = append(v,
			monitorValue{"learners", len(r.Members) - 1},
			monitorValue{"synced_followers", synced},
			monitorValue{"synced_non_voting_followers", 0},
			monitorValue{"synced_observers", 0},
			monitorValue{"pending_syncs", 0},
			monitorValue{"last_proposal_size", last},
			monitorValue{"max_proposal_size", hi},
			monitorValue{"min_proposal_size", lo},
		)
	}
	return v
}

func maxFileDescriptors() int64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return -1
	}
	return int64(lim.Cur)
}

// fileDescriptors counts this process's open descriptors and its limit.
func fileDescriptors() (open, limit int64) {
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		open = int64(len(ents))
	}
	limit = maxFileDescriptors()
	return open, limit
}
