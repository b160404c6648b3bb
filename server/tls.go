package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"time"

	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/x500"
)

// tlsHandshakeTimeout bounds a client's TLS handshake, as Netty's
// SslHandler does by default in ZooKeeper's secure port.
const tlsHandshakeTimeout = 10 * time.Second

// schemeX509 is the scheme of the identity a verified client certificate
// gives (X509AuthenticationProvider.getScheme).
const schemeX509 = "x509"

// connLimitKey is what maxClientCnxns counts a connection under: its
// address, per port, since ZooKeeper's plain and secure ports are two
// connection factories that each count their own.
func connLimitKey(nc net.Conn, ip string) string {
	if _, secure := nc.(*tls.Conn); secure {
		return "tls/" + ip
	}
	return ip
}

// startTLS runs a secure connection's handshake under a deadline and adds
// the identity of its client certificate, as NettyServerCnxnFactory's
// CertificateVerifier does after the handshake. It reports false, having
// closed the connection, when the handshake fails or a presented
// certificate does not verify. A plain connection passes straight through.
func (c *conn) startTLS() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	s := c.srv
	ctx, cancel := context.WithTimeout(s.ctx, tlsHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		s.log.Warn("closing connection: TLS handshake failed", "ip", c.ip, "err", err)
		_ = c.nc.Close()
		return false
	}
	id, ok, err := certificateIdentity(tc.ConnectionState(), s.cfg.TLS)
	if err != nil {
		s.log.Warn("closing connection: client certificate refused", "ip", c.ip, "err", err)
		_ = c.nc.Close()
		return false
	}
	if ok {
		auth := append(append([]wire.ID(nil), c.identities()...), id)
		javaSetOrder(auth)
		c.auth.Store(&auth)
		s.log.Info("authenticated client certificate", "scheme", id.Scheme, "id", id.ID, "ip", c.ip)
	}
	return true
}

// certificateIdentity is X509AuthenticationProvider.handleAuthentication:
// the identity "x509:<subject>" of a client certificate whose chain
// verifies, in the RFC 2253 form Java's X500Principal.getName() writes.
// No certificate (none asked for, or an optional one not sent) gives no
// identity and no error. A certificate crypto/tls did not verify itself
// (ClientAuth RequestClientCert or RequireAnyClientCert) is checked
// against ClientCAs, as ZooKeeper checks it against its trust store, and
// refused if it does not verify.
func certificateIdentity(st tls.ConnectionState, cfg *tls.Config) (wire.ID, bool, error) {
	if cfg.ClientAuth == tls.NoClientCert || len(st.PeerCertificates) == 0 {
		return wire.ID{}, false, nil
	}
	leaf := st.PeerCertificates[0]
	if len(st.VerifiedChains) == 0 {
		if cfg.ClientCAs == nil {
			return wire.ID{}, false, errors.New("no trust store (ClientCAs) to verify the client certificate")
		}
		inter := x509.NewCertPool()
		for _, c := range st.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: cfg.ClientCAs, Intermediates: inter,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			return wire.ID{}, false, err
		}
	}
	name, err := x500.Name(leaf.RawSubject)
	if err != nil {
		return wire.ID{}, false, err
	}
	return wire.ID{Scheme: schemeX509, ID: name}, true, nil
}

// certificateIdentities answers "addauth x509": the provider takes its
// identity from the connection's certificate, whatever the auth data, so
// it only succeeds (adding nothing new) on a connection that has one.
func (c *conn) certificateIdentities() []wire.ID {
	var ids []wire.ID
	for _, id := range c.identities() {
		if id.Scheme == schemeX509 {
			ids = append(ids, id)
		}
	}
	return ids
}
