//go:build !unix

package raftstore

import "net"

// Without a portable non-consuming read, the knock is only read by the
// connection's own goroutine, and a member's connection may give way to a
// flood before it is.

func peek(net.Conn, []byte) int { return 0 }

func waitPeek(net.Conn, []byte) error { return errNoPeek }
