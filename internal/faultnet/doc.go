// Package faultnet is a fault-injecting network for tests: it hands each
// node a dial function that refuses, and cuts, connections across links a
// test has partitioned. Every connection between nodes is opened through
// it, so isolating a node stops traffic in both directions.
package faultnet
