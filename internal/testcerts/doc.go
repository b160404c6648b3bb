// Package testcerts makes throwaway PKI for tests of the TLS client port: a
// CA, a server certificate for 127.0.0.1 and localhost, and client
// certificates, written as PEM files into a test's temporary directory
// and also returned ready for crypto/tls.
package testcerts
