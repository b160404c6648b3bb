// Package raftstore replicates hutch's write transactions with Raft: a batch
// of tree.Txn is encoded into one log entry, committed by a quorum and handed
// to the server's Applier in commit order on every node, so every replica's
// tree is identical.
//
// It provides the FSM and its snapshots (streamed straight from the tree, no
// second copy), in-memory or raft-boltdb stores, and one TCP listener per node
// that carries both Raft's RPCs and a forwarding channel through which
// followers hand writes to the leader and ask it how far to catch up for sync.
package raftstore
