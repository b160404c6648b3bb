// Package faultnet injects network faults in tests. A Network hands each
// node a dial function that refuses, and cuts, connections across links a
// test has partitioned; every connection between nodes is opened through
// it, so isolating a node stops traffic in both directions. A Proxy stands
// between a client and a server and can sever the client's connection
// without closing its session, as when a client host dies.
package faultnet
