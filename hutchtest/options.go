package hutchtest

import (
	"log/slog"
	"time"

	"github.com/hutchzk/hutch/tree"
)

// Option configures Start and StartEnsemble.
type Option func(*options)

type options struct {
	tick           time.Duration
	minTimeout     time.Duration
	maxTimeout     time.Duration
	superDigest    string
	dataDir        string
	maxConns       int
	words          []string
	logger         *slog.Logger
	logLevel       slog.Level
	fakeClock      bool
	keepConnected  bool
	fakeStart      time.Time
	tcp            bool
	containerCheck time.Duration
	waitTimeout    time.Duration
	election       time.Duration
	liveView       bool
}

// Defaults: ZooKeeper's, except the log level (warnings only) and the
// ensemble's election timeout (hutch's, one second).
func defaultOptions() options {
	return options{logLevel: slog.LevelWarn, waitTimeout: 10 * time.Second}
}

// TickTime sets ZooKeeper's tickTime (2 s by default): the width of the
// session expiry buckets and the unit of the default session timeout
// bounds (2 and 20 ticks).
func TickTime(d time.Duration) Option { return func(o *options) { o.tick = d } }

// SessionTimeouts bounds the session timeouts clients may negotiate
// (minSessionTimeout and maxSessionTimeout).
func SessionTimeouts(min, max time.Duration) Option {
	return func(o *options) { o.minTimeout, o.maxTimeout = min, max }
}

// SuperDigest makes the digest user "user:base64(sha1)" bypass every ACL,
// as DigestAuthenticationProvider.superDigest.
func SuperDigest(digest string) Option { return func(o *options) { o.superDigest = digest } }

// SuperUser is SuperDigest for a user name and password: a client that
// adds the digest auth "user:password" bypasses every ACL.
func SuperUser(user, password string) Option {
	return SuperDigest(tree.DigestID(user + ":" + password))
}

// DataDir keeps the server's state in dir (a Raft log and snapshots), so
// that Restart brings back the tree and the sessions, as a ZooKeeper with
// a dataDir would. Without it the server lives in memory and Restart
// starts from an empty tree. A data directory costs a loopback port for
// the Raft node (bound by the kernel, never raced for).
func DataDir(dir string) Option { return func(o *options) { o.dataDir = dir } }

// MaxConnections limits the connections one address may hold
// (maxClientCnxns; 60 by default, negative for no limit). Every in-memory
// client comes from 127.0.0.1, as local clients of a real server do.
func MaxConnections(n int) Option { return func(o *options) { o.maxConns = n } }

// FourLetterWords lists the four-letter words answered
// (4lw.commands.whitelist; "*" for all, the default here).
func FourLetterWords(words ...string) Option {
	return func(o *options) { o.words = append([]string{}, words...) }
}

// Logger sends the server's logs to l instead of the test's log.
func Logger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// LogLevel sets the level of the logs written to the test's log
// (t.Log): slog.LevelWarn by default; slog.LevelDebug shows every
// connection and session.
func LogLevel(l slog.Level) Option { return func(o *options) { o.logLevel = l } }

// FakeClock runs the server on a fake clock that only Advance moves:
// sessions expire, and TTL nodes and empty containers go, only when the
// test moves time past them, however slow the machine. The clock starts
// at the real time of Start.
func FakeClock() Option { return func(o *options) { o.fakeClock = true } }

// KeepConnectedSessions is FakeClock in which a connected client's pings
// count: Advance treats every session whose client is connected as
// having pinged all along, so only sessions with no client connected
// expire. A test can then age a TTL node by an hour, or let a container
// check run, without stretching its sessions' timeouts.
func KeepConnectedSessions() Option {
	return func(o *options) { o.fakeClock, o.keepConnected = true, true }
}

// FakeClockAt is FakeClock starting at t (the time of the nodes' ctime and
// mtime until Advance moves it).
func FakeClockAt(t time.Time) Option {
	return func(o *options) { o.fakeClock, o.fakeStart = true, t }
}

// TCP also serves a real client port on a kernel-chosen loopback port,
// for clients that cannot be given a dialer (another language's, a
// subprocess). Addr and ConnectString then name it; Dialer still
// connects in memory. The port is bound before anyone learns its number,
// so parallel tests cannot collide.
func TCP() Option { return func(o *options) { o.tcp = true } }

// LiveView makes each server serve its live view (/ui/ and /trace) on a
// loopback port of its own, as hutch's --ui-listen does: an ensemble
// member's view then links to the other members' own (the server's
// UIAddr names it).
func LiveView() Option { return func(o *options) { o.liveView = true } }

// ContainerCheckInterval sets how often empty containers and expired TTL
// nodes are deleted (znode.container.checkIntervalMs, one minute by
// default). With FakeClock, Advance runs the check anyway.
func ContainerCheckInterval(d time.Duration) Option {
	return func(o *options) { o.containerCheck = d }
}

// WaitTimeout bounds the waits of WaitFor, Connect, Leader and the
// controls that wait for a write to apply (10 s by default).
func WaitTimeout(d time.Duration) Option { return func(o *options) { o.waitTimeout = d } }

// ElectionTimeout sets an ensemble's Raft election timeout (1 s by
// default): a dead leader is replaced within about two of them.
func ElectionTimeout(d time.Duration) Option { return func(o *options) { o.election = d } }

// Shape is how a link degrades the bytes it carries, as a slow, narrow or
// lossy network does (toxiproxy's latency, bandwidth and loss toxics,
// with no proxy to run); the zero Shape leaves them alone. Set one on a
// member's links (Ensemble.SetMemberShape), on one direction between two
// members (SetLinkShape), or on one client's connection
// (Server.SetClientShape, Ensemble.SetSessionShape); Heal restores them.
type Shape struct {
	// Delay holds every byte back this long, one way.
	Delay time.Duration
	// Jitter varies each segment's delay uniformly within ±Jitter (never
	// below zero); bytes still arrive in order, as on TCP.
	Jitter time.Duration
	// Rate limits the link to this many bytes a second; 0 is no limit.
	Rate int64
	// Loss is the fraction of segments lost, 0 to 1. TCP resends a lost
	// segment, so a loss costs the reader a retransmission timeout
	// (200 ms, doubled each time the same segment is lost again) and
	// holds back what was sent after it.
	Loss float64
}
