// Package bench is hutch bench: workloads (the seeds' fair lock and stock
// deduction, sync and pipelined reads and writes, watch fan-out, session
// churn and expiry, znode memory) run through the go-zookeeper client
// against any ZooKeeper-compatible server, alone or alternating round by
// round with a second one, summed up as percentiles, medians and ratios.
// Every workload works under a fresh root znode it deletes afterwards, and
// every loop is bounded in count and in time. Its test files also hold the
// go test benchmarks of a three-server hutch ensemble against a
// ZooKeeper quorum.
package bench
