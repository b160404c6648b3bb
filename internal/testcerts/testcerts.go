package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority that signs server and client certificates.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CertFile is the CA certificate as PEM (a trust store).
	CertFile string
	// Pool holds the CA certificate, for RootCAs or ClientCAs.
	Pool *x509.CertPool
	dir  string
	next int64
}

// Pair is a certificate with its key.
type Pair struct {
	Cert *x509.Certificate
	// TLS is the pair for tls.Config.Certificates.
	TLS tls.Certificate
	// CertFile and KeyFile hold the certificate and its PKCS#8 key as
	// PEM; Combined holds the key followed by the certificate (the single
	// file ZooKeeper's PEM key store reads).
	CertFile, KeyFile, Combined string
}

// NewCA makes a CA named cn in a fresh temporary directory of tb.
func NewCA(tb testing.TB, cn string) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"hutch tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatalf("testcerts: CA: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("testcerts: CA: %v", err)
	}
	ca := &CA{Cert: cert, key: key, Pool: x509.NewCertPool(), dir: tb.TempDir(), next: 2}
	ca.Pool.AddCert(cert)
	ca.CertFile = writePEM(tb, ca.dir, "ca.pem", pemBlock("CERTIFICATE", der))
	return ca
}

// Server issues a server certificate for 127.0.0.1, ::1 and localhost.
func (ca *CA) Server(tb testing.TB, name string) *Pair {
	tb.Helper()
	return ca.issue(tb, name, pkix.Name{CommonName: "localhost", Organization: []string{"hutch tests"}}, func(t *x509.Certificate) {
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		t.DNSNames = []string{"localhost"}
		t.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	})
}

// Client issues a client certificate with that subject.
func (ca *CA) Client(tb testing.TB, name string, subject pkix.Name) *Pair {
	tb.Helper()
	return ca.issue(tb, name, subject, func(t *x509.Certificate) {
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
}

func (ca *CA) issue(tb testing.TB, name string, subject pkix.Name, fill func(*x509.Certificate)) *Pair {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.next),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	ca.next++
	fill(tmpl)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatalf("testcerts: %s: %v", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("testcerts: %s: %v", name, err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatalf("testcerts: %s: %v", name, err)
	}
	certPEM, keyPEM := pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", pkcs8)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		tb.Fatalf("testcerts: %s: %v", name, err)
	}
	return &Pair{
		Cert:     cert,
		TLS:      pair,
		CertFile: writePEM(tb, ca.dir, name+".crt.pem", certPEM),
		KeyFile:  writePEM(tb, ca.dir, name+".key.pem", keyPEM),
		Combined: writePEM(tb, ca.dir, name+".pem", append(append([]byte(nil), keyPEM...), certPEM...)),
	}
}

// ServerConfig is a TLS server configuration with this pair that
// requires client certificates signed by ca.
func (p *Pair) ServerConfig(ca *CA) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{p.TLS},
		ClientCAs:    ca.Pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}
}

// ClientConfig trusts ca and, when client is not nil, presents it.
func ClientConfig(ca *CA, client *Pair) *tls.Config {
	cfg := &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}
	if client != nil {
		cfg.Certificates = []tls.Certificate{client.TLS}
	}
	return cfg
}

// newKey makes a P-256 key: quick to generate, and both Go and Java's
// PEM key store read it as PKCS#8.
func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("testcerts: key: %v", err)
	}
	return key
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writePEM(tb testing.TB, dir, name string, data []byte) string {
	tb.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatalf("testcerts: %v", err)
	}
	return path
}
