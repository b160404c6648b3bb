// Package sasl is the server side of SASL DIGEST-MD5 (RFC 2831) as
// ZooKeeper's clients meet it: the Java SASL server ZooKeeper creates for
// protocol "zookeeper" and server name "zk-sasl-md5", which is also its one
// realm. It sends the digest-challenge, checks the client's
// digest-response against the user's password and answers with rspauth;
// only qop "auth" is offered, as ZooKeeper offers no security layer.
//
// It does no I/O and reads no clock: nonces come from an injected
// io.Reader, passwords from a lookup function, and the caller carries the
// tokens (ZooKeeper's sasl request, opcode 102).
package sasl
