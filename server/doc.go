// Package server speaks the ZooKeeper client protocol over TCP (and over TLS
// on a secure port, where a client certificate is an x509 identity). Its state
// is a zkdb.DB, changed only by a committer (a single node's, or the Raft
// one) applying commands; the server turns what each command did into
// replies, notifications and closed connections. It owns every goroutine:
// one reader and one batched writer per connection, the committer's
// loops, and the session-expiry and container-cleanup loops, which run on
// an injectable clock. Its operators see it through package monitor: the
// Server is a monitor.Source, and serves the monitor's four-letter words,
// admin commands and metrics. An embedding program (or package hutchtest)
// may serve clients with no port at all, through in-memory connections
// (DialMemory, ServeConn), and make a test's events happen by the paths
// the real ones take (control.go: ExpireSession, DropConnection, Pause,
// AdvanceClock); everything applied is published to package trace.
package server
