// Package wire encodes and decodes the jute records of ZooKeeper's 3.8
// client protocol and the length-prefixed frames that carry them.
//
// It knows byte layouts only: which record follows which header, and what a
// request means, is left to the server. Decoding never trusts a length from
// the peer beyond the bytes actually received.
package wire
