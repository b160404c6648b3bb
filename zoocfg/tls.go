package zoocfg

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
)

// TLSConfig builds the secure client port's TLS configuration from the
// ssl.* keys, or returns nil when secureClientPort is not set.
//
// ZooKeeper reads JKS, PKCS12, BCFKS or PEM stores (X509Util with
// FileKeyStoreLoaderBuilderProvider, the type taken from ssl.*.type or the
// file extension); hutch reads PEM only: ssl.keyStore.location must name
// a PEM file holding the certificate chain and an unencrypted private key
// (ZooKeeper's PEMFileLoader reads the same file with
// ssl.keyStore.type=PEM), and ssl.trustStore.location a PEM bundle of the
// CAs that sign client certificates. Without a trust store, client
// certificates are checked against the system's roots. ssl.clientAuth
// none, want or need (ZooKeeper's default) sets whether a client
// certificate is ignored, checked when given, or required.
func (c *Config) TLSConfig() (*tls.Config, error) {
	if c.SecureClientPort == 0 {
		return nil, nil
	}
	s := c.SSL
	if s.KeyStoreLocation == "" {
		return nil, c.errorAt("ssl.keyStore.location", errors.New("is needed with secureClientPort: a PEM file with the server's certificate and private key"))
	}
	if err := pemOnly(s.KeyStoreType, s.KeyStoreLocation); err != nil {
		return nil, c.errorAt(storeKey("ssl.keyStore", s.KeyStoreType), err)
	}
	keyPEM, err := os.ReadFile(s.KeyStoreLocation)
	if err != nil {
		return nil, c.errorAt("ssl.keyStore.location", err)
	}
	if encryptedKey(keyPEM) {
		return nil, c.errorAt("ssl.keyStore.location", fmt.Errorf("%s holds an encrypted private key: hutch reads unencrypted PEM keys only (openssl pkey -in key.pem -out plain.pem)", s.KeyStoreLocation))
	}
	cert, err := tls.X509KeyPair(keyPEM, keyPEM)
	if err != nil {
		return nil, c.errorAt("ssl.keyStore.location", fmt.Errorf("%s: %w (hutch needs one PEM file holding the certificate and its private key)", s.KeyStoreLocation, err))
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
	}
	if s.TrustStoreLocation != "" {
		if err := pemOnly(s.TrustStoreType, s.TrustStoreLocation); err != nil {
			return nil, c.errorAt(storeKey("ssl.trustStore", s.TrustStoreType), err)
		}
		caPEM, err := os.ReadFile(s.TrustStoreLocation)
		if err != nil {
			return nil, c.errorAt("ssl.trustStore.location", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, c.errorAt("ssl.trustStore.location", fmt.Errorf("%s holds no PEM certificate", s.TrustStoreLocation))
		}
		cfg.ClientCAs = pool
	}
	switch s.ClientAuth {
	case "none":
		cfg.ClientAuth = tls.NoClientCert
	case "want":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// pemOnly refuses store types other than PEM. An unset type is taken as
// PEM whatever the extension, unless the extension names another type.
func pemOnly(storeType, location string) error {
	t := strings.ToUpper(storeType)
	if t == "" {
		for ext, name := range map[string]string{".jks": "JKS", ".p12": "PKCS12", ".bcfks": "BCFKS"} {
			if strings.HasSuffix(strings.ToLower(location), ext) {
				t = name
			}
		}
	}
	switch t {
	case "", "PEM":
		return nil
	case "JKS", "PKCS12", "BCFKS":
		return fmt.Errorf("%s store %s: hutch reads PEM files only (convert with keytool -importkeystore to PKCS12, then openssl pkcs12 -nodes)", t, location)
	}
	return fmt.Errorf("%q is not a store type (JKS, PEM, PKCS12 or BCFKS)", storeType)
}

// encryptedKey reports a password-protected private key: PKCS#8
// "ENCRYPTED PRIVATE KEY" or a legacy PEM block with Proc-Type ENCRYPTED.
func encryptedKey(data []byte) bool {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if b.Type == "ENCRYPTED PRIVATE KEY" || strings.Contains(b.Headers["Proc-Type"], "ENCRYPTED") {
			return true
		}
	}
}

// storeKey names the key that made a store unreadable: its type when set,
// else its location (whose extension named the type).
func storeKey(prefix, storeType string) string {
	if storeType != "" {
		return prefix + ".type"
	}
	return prefix + ".location"
}
