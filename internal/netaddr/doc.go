// Package netaddr reads what the server's limits key on from a
// connection's address: the host alone, as per-address connection caps
// (client connections in server, pending peer handshakes in raftstore)
// count by it.
package netaddr
