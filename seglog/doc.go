// Package seglog is hutch's Raft log store: hashicorp/raft's LogStore and
// StableStore over a directory of segment files, with one write and one
// fdatasync per append batch, a CRC-32C on every record, and a state that
// is nothing but its files, so that no crash between two steps can leave
// the log unreadable. Append and Sync split an append's write from its
// fdatasync, for a Raft leader that syncs its own copy while it replicates.
//
// It exists because neither store hutch could take off the shelf holds up:
// raft-boltdb fsyncs twice per append (its pages, then its meta page), and
// raft-wal v0.4.0, the only release the Go module proxy serves, seals a
// segment without its index when Raft truncates the log's tail, so the
// member cannot reopen its log after a restart (hashicorp/raft-wal#31; the
// crash-consistency suite in package raftstore shows it). ZooKeeper, etcd
// and ClickHouse Keeper each own their log for the same reasons.
package seglog
