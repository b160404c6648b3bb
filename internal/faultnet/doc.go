// Package faultnet injects network faults in tests. A Network hands each
// node a dial function that refuses, and cuts, connections across links a
// test has partitioned; every connection between nodes is opened through
// it, so isolating a node stops traffic in both directions. A Proxy stands
// between a client and a server and can sever the client's connection
// without closing its session, as when a client host dies. Drop partitions
// silently instead: I/O across the link hangs until healed, as TCP does.
// A Switch does the same to separate processes on loopback, forwarding
// their peer connections and telling nodes apart by source IP. Shaped
// slows, narrows or makes lossy any connection (a Shape: delay, jitter,
// rate, loss), and a Network shapes the links between its nodes.
package faultnet
