// Package ensemble holds fault tests of a hutch Raft ensemble run as
// separate processes: three hutch binaries on loopback ports, killed with
// SIGKILL and restarted from their data directories while go-zookeeper and
// Curator clients keep working against them, and a porcupine
// linearizability check of the history they saw. It has no non-test code.
package ensemble
