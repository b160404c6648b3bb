// Package hutchtest runs a ZooKeeper-compatible server (hutch) inside a Go
// test: started without waiting on anything, with no port to collide on, stopped when
// the test ends, and with the controls a test needs to make the events
// it wants to test happen: a session expiring, a connection dropping, a
// server pausing, time passing, a leader dying, a network splitting.
//
// # A first test
//
//	func TestLock(t *testing.T) {
//		srv := hutchtest.Start(t)
//		a, _ := srv.Connect(10 * time.Second)
//		b, _ := srv.Connect(10 * time.Second)
//		if err := zk.NewLock(a, "/lock", zk.WorldACL(zk.PermAll)).Lock(); err != nil {
//			t.Fatal(err)
//		}
//		locked := make(chan error, 1)
//		go func() { locked <- zk.NewLock(b, "/lock", zk.WorldACL(zk.PermAll)).Lock() }()
//		srv.WaitFor("b to queue", hutchtest.By(b.SessionID(), hutchtest.Succeeded("create", "")))
//		srv.ExpireSession(a.SessionID()) // the holder's session expires on the server
//		if err := <-locked; err != nil {
//			t.Fatal(err)
//		}
//	}
//
// Start fails the test at once, with the reason, if the server cannot
// start; no method waits on a port or a sleep. Every method that waits
// (WaitFor, Connect, the controls) gives up after WaitTimeout (10 s) and
// fails the test saying what it waited for. Methods that fail the test
// belong on the test's goroutine, as t.Fatal does.
//
// # Connecting
//
// By default the server has no TCP port at all. Dialer returns a dial
// function for go-zookeeper's zk.WithDialer that connects through an
// in-memory pipe (buffered like a socket), so any number of parallel
// tests each run their own server without a single port:
//
//	c, events, err := zk.Connect([]string{srv.ConnectString()}, 10*time.Second, zk.WithDialer(srv.Dialer()))
//
// Connect does that and waits for the session. In-memory clients count
// as 127.0.0.1 (the ip ACL scheme, MaxConnections), as local clients of
// a real server do. The TCP option adds a real client port, chosen and
// bound by the kernel before anyone learns its number, for clients that
// cannot take a dialer; Addr and ConnectString then name it. Clients in
// other languages use the hutch binary instead (see docs/testing.md:
// JUnit with Curator, pytest with kazoo).
//
// # Options
//
// TickTime, SessionTimeouts, SuperDigest and SuperUser, DataDir,
// MaxConnections, FourLetterWords, ContainerCheckInterval: ZooKeeper's
// settings of the same meaning. The server logs warnings to the test's
// log (t.Log; LogLevel changes the level, Logger sends them elsewhere).
// FakeClock runs the server on a clock only the test moves
// (KeepConnectedSessions: one on which connected clients' pings count).
// TCP adds a client port. WaitTimeout bounds the waits.
//
// # Controls
//
// Each control makes the real event happen, by the path the server
// takes when it happens by itself:
//
//   - ExpireSession(id) expires a session on the server as its timeout
//     would (replicated, in an ensemble): its ephemerals are deleted,
//     their watches fire, and its client is told SESSION_EXPIRED. It
//     returns once applied. Unlike Curator's KillSession, nothing is
//     faked on the client.
//   - DropConnection(id) and DropAll close connections on the server's
//     side: the client sees a disconnect and re-attaches its session,
//     which lives on, as after a network blip.
//   - Pause and Resume: the server stops answering without closing a
//     socket, as a stopped process (SIGSTOP); the clients' own timeouts
//     run. Session expiry waits too, and on Resume the sessions are given
//     back the paused time, as hutch does after any stall.
//   - Advance(d), with FakeClock, moves time at once: every session not
//     touched within d of fake time expires, TTL nodes past their TTL and
//     emptied containers are deleted, and Advance returns when that has
//     applied. A connected client's pings run on real time and do not
//     count in fake time, unless KeepConnectedSessions says they do.
//     Nothing sleeps; a day costs what a second does.
//     The server is told the time moved on purpose, so it does not take
//     the jump for a stall of its own and give the sessions the time
//     back (as it does after Pause).
//   - Restart stops the server as a crash would and starts it again on
//     the same addresses. With DataDir the tree and the sessions come
//     back and clients re-attach; without it the server starts empty.
//   - SetClientShape(id, Shape{Delay, Jitter, Rate, Loss}) slows,
//     narrows or makes lossy one client's connection, both ways, and
//     follows it when it reconnects; the zero Shape restores it.
//   - Snapshot captures the tree (data, ACLs, container and TTL modes)
//     as a fixture readable as JSON (WriteFile, ReadSnapshot); Load
//     creates it in a server, through the log like any write.
//
// # Looking at the state
//
// Read-only views for assertions, copied at the time of the call:
// Sessions and Session (timeout, expiry time, ephemerals, watches),
// Watches (all, or on given paths), Node (data, Stat, ACL, children) and
// Tree (every node's data by path, a map to compare with the one
// expected). FourLetterWord asks ruok, srvr, mntr, cons... in memory.
//
// # The trace
//
// The server publishes every transaction it applies and every watch
// notification it delivers, in order, with zxid, session and path, and
// each session attached or closed (package trace). Events lists them all
// since the start; Subscribe streams them, filtered by kind, path prefix
// or session. A test waits on what the server did rather than sleeping,
// with a deadline: WaitFor for the first event a condition keeps, past
// or future (so one from before the call satisfies it), WaitForAfter for
// one after a Mark taken before the action, WaitForNext for one from the
// call on. Applied (every transaction, failed ones too), Succeeded (those
// that succeeded), Delivered, Attached, Closed and Expired are ready-made
// conditions, and By keeps one session's:
//
//	srv.WaitFor("the watch on /cfg to fire", hutchtest.Delivered("NodeDataChanged", "/cfg"))
//	srv.WaitFor("b's create", hutchtest.By(b.SessionID(), hutchtest.Succeeded("create", "")))
//
// # Ensembles
//
// StartEnsemble(t, 3) runs three members in the process on hutch's real
// Raft code (hashicorp/raft with a raft-boltdb log per member in a
// temporary directory, peers on loopback). Members are numbered from 1,
// as in their logs (hutch-2), addresses (127.0.0.2:0) and Raft node ids.
// Leader returns the member a majority agrees leads (one that says it
// leads and that a majority of the members it reaches name as leader),
// waiting for an election: right after a Partition cuts the leader off,
// it waits for the others to elect one of theirs. WaitLeader waits until
// every member names the same leader (etcd's WaitMembersForLeader).
// Kill and Restart crash and bring back a member from its log; Pause
// silences one; Partition splits the members into groups, silently, as
// a real partition (bytes wait unread, new connections time out);
// CutOneWay stops one member reaching another while the other still
// reaches it; SetMemberShape, SetLinkShape and SetSessionShape slow,
// narrow or make lossy a member's links, one direction between two
// members, or one client's connection; Heal undoes partitions, cuts and
// shapes. ConnectString, Dialer and Connect name every member, so
// go-zookeeper moves between them as between real servers; MemberOf
// says which member a client is on. ExpireSession goes through the
// leader; Advance moves every member's fake clock; WaitFor, Events and
// Tree look at the whole ensemble, Member(n) at one member's views and
// trace. The warnings the members log about faults the test caused are
// logged at Info while the fault lasts.
//
// The Raft ports are picked free and bound at once; the rare one taken
// by another process in between is retried with new ports. Tests in
// other languages get the same ensemble and controls from the hutch
// binary: hutch test-ensemble (docs/testing.md).
package hutchtest
