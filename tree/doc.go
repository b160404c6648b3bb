// Package tree is hutch's in-memory znode tree: it applies deterministic write
// transactions and answers reads with ZooKeeper 3.8's exact semantics (error
// precedence, Stat bookkeeping, sequential naming, ephemerals, containers, TTL
// nodes, ACLs and multi).
//
// The tree does no I/O, reads no clock and starts no goroutines; every result is
// a pure function of the transactions applied, so replicas applying the same log
// agree byte for byte. It is not safe for concurrent use: the caller serialises
// Apply against reads (for example with a sync.RWMutex).
package tree
