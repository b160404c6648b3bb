// Package x500 reads and writes X.500 distinguished names the way Java's
// javax.security.auth.x500.X500Principal does, because ZooKeeper's x509
// identity is that class's RFC 2253 string of the client certificate's
// subject: Name turns a DER-encoded subject into exactly that string, and
// Valid says whether Java would accept a string as a name (the check an x509
// ACL entry must pass). It imports nothing of hutch.
package x500
