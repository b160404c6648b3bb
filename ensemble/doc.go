// Package ensemble holds fault tests of a hutch Raft ensemble run as
// separate processes: three hutch binaries on loopback ports, killed with
// SIGKILL and restarted from their data directories while go-zookeeper
// clients keep working against them. It has no non-test code.
package ensemble
