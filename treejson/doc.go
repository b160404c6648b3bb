// Package treejson is the JSON form of a subtree: its nodes, parents
// first, with their data, ACL and kind (container, TTL, ephemeral) and,
// when asked for, their Stat, written so that a person can read and edit
// it. hutchtest uses it for fixtures, and hutch cli's dump and load copy
// part of a tree between any two ZooKeeper-compatible servers with it
// (Dump and Load go through any client that satisfies Client).
package treejson
