// Package zkdb is hutch's ZKDatabase: the one owner of the state every
// replica holds. A DB keeps the znode tree, the session table with each
// session's owning connection and write order, the transaction clock, the
// applied log index, and, beside them, this node's watches and session
// timers, all behind one lock order.
//
// DB.Apply is the single path by which that state changes: it applies a
// batch of Commands in order, the same on every node, and hands each
// command's effects (its result, watch notifications, a session closed or
// moved) to the Sink while the lock is held, so that whatever the Sink
// queues for a client is ordered before the reply to any later read.
// Commands travel as Batches in the encoding of this package; package
// raftstore replicates them and a single node applies them directly.
package zkdb
