// Package membership says who is in an ensemble and what each node does
// there. A Config is the membership as ZooKeeper keeps it in
// /zookeeper/config: members (id, quorum and election address, role, client
// address) and a version; it is parsed from zoo.cfg's server.N lines and
// from a reconfig's joining, leaving or new members, and printed in
// ZooKeeper's dynamic configuration format, all here. A State is a node's
// part now (standalone, leader, follower, observer, read-only), asked about
// by capability (does it order writes, run the session timers, count for
// quorum) rather than by name.
//
// The package holds values only: package zkdb owns the membership as a
// replicated fact and applies changes to it in log order; package
// raftstore makes Raft's configuration follow it.
package membership
