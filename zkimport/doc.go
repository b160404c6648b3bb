// Package zkimport moves a ZooKeeper data directory into hutch: it loads
// ZooKeeper's newest usable snapshot, replays the transaction logs after
// it with ZooKeeper's own replay rules, checks every file's checksums and,
// where ZooKeeper recorded them (3.6+), its tree digests, and writes a
// hutch data directory that a node, or every member of an ensemble,
// starts from. Every node keeps its data, ACL and stored Stat; sessions
// keep their ids, timeouts, passwords and ephemerals; hutch's zxids go on
// after ZooKeeper's. The output is written aside and moved into place only
// when complete. Follow keeps replaying a live ZooKeeper's log until told
// to stop, for a cut-over measured in seconds.
package zkimport
