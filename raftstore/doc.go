// Package raftstore replicates hutch's state with Raft: the commands a node
// orders (zkdb.Command, encoded by package zkdb) become log entries stamped
// with the leader's clock, are committed by a quorum and applied to every
// node's zkdb.DB in commit order, so every replica is identical.
//
// It provides the Raft FSM over a zkdb.DB (snapshots are the DB's own,
// encoded in memory and written out with no lock held), in-memory or
// raft-boltdb stores, and one TCP listener per node that carries both
// Raft's RPCs and a forwarding channel through which followers hand
// commands to the leader, report their clients' activity, and ask how far
// to catch up for sync, and a channel on which any member answers
// another's question (Store.Ask: the live view gathers each member's
// clients' sessions and watches so). Every connection between nodes is
// authenticated with a shared secret before either side reads a byte of
// it.
package raftstore
