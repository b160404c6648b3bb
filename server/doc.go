// Package server speaks the ZooKeeper client protocol over TCP and wires the
// znode tree, sessions and watches together. It owns every goroutine: one
// reader and one batched writer per connection, one committer that orders and
// applies writes, and the session-expiry and container-cleanup loops.
package server
