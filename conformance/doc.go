// Package conformance holds checks that run against both real ZooKeeper 3.8
// and hutch: every check is a subtest per target, driven by clients
// ZooKeeper users actually run (go-zookeeper/zk, Curator, kazoo, zkCli.sh and
// the C client cli_mt) plus the seed lock and election recipes and a seeded
// differential checker, so a difference in behaviour shows up as hutch
// failing a check that ZooKeeper passes.
package conformance
