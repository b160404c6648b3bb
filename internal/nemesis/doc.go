// Package nemesis runs Jepsen-style fault schedules against a three-node
// ZooKeeper-compatible ensemble: while a seeded schedule kills, pauses,
// partitions and skews nodes one at a time, workloads (a fenced fair lock,
// pipelined writers, long-lived sessions, session churn, a linearizable
// register) run through ordinary clients, and afterwards their histories
// are checked against ZooKeeper's guarantees and summed up in a Report.
// It knows the servers only through the Cluster interface and the client
// protocol, never through hutch's internals.
package nemesis
