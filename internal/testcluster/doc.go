// Package testcluster runs hutch servers in the process for tests: one
// alone (Member) or an ensemble on hutch's real Raft code (Cluster), each
// member restartable on the same addresses with the same trace, reached
// in memory, with the faults a test injects (kill, pause, partition,
// one-way cut, links slowed, narrowed or made lossy) and an honest answer
// to who leads: the member a majority agrees on. Errors are values;
// package hutchtest wraps this for Go tests, failing the test, and the
// hutch command serves it over loopback HTTP (Handler, Fronts: hutch
// test-ensemble) for tests in any language.
package testcluster
