// Package bench holds side-by-side benchmarks of hutch and Apache ZooKeeper:
// the same go-zookeeper workload runs against a three-server ZooKeeper 3.8
// quorum and a three-node hutch Raft ensemble in one go test run, and
// reports throughput and latency percentiles for each. It has no non-test
// code.
package bench
