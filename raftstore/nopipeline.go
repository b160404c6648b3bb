package raftstore

import "github.com/hashicorp/raft"

// AppendEntriesPipeline refuses, so hashicorp/raft replicates one append
// request at a time to each follower (replicateTo): the request waits for
// its answer, and entries the leader stores meanwhile go out together in
// the next one.
//
// A follower's Raft takes one request at a time anyway (NetworkTransport
// reads a connection's next request only once Raft has answered the
// last), and syncs each before it answers: pipelined requests queued
// behind a follower's sync were each synced on their own, where one
// request per round trip carries them all to one sync. On the two-core
// machine, at 16 sessions, hutch's members made 1.03 fsyncs per write
// between them where ZooKeeper's made 0.6, and those syncs were most of
// the CPU that set hutch's throughput there (docs/performance.md, "With
// the disk taken out"). The answer also reaches Raft on the goroutine that
// sent the request, not through the pipeline's decoder and a second
// goroutine.
//
// It also ends hashicorp/raft#612 for hutch: a pipeline whose follower
// answered an append unsuccessfully could wedge the leader's replication
// to it, and Raft's Shutdown with it, for good (v1.7.3 and v1.8.0).
func (t *clampedTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}
