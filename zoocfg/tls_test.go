package zoocfg

import (
	"crypto/tls"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchzk/hutch/internal/testcerts"
)

// writePEM writes a server certificate with its key to key.pem, the CA
// that signed it to ca.pem, and the certificate with an encrypted key to
// enc.pem, in dir.
func writePEM(t *testing.T, dir string) {
	t.Helper()
	ca := testcerts.NewCA(t, "zk")
	server := ca.Server(t, "server")
	read := func(path string) []byte {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	certPEM := read(server.CertFile)
	enc := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte("x")})
	for name, data := range map[string][]byte{
		"key.pem": read(server.Combined),
		"ca.pem":  read(ca.CertFile),
		"enc.pem": append(certPEM, enc...),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTLSConfig(t *testing.T) {
	dir := t.TempDir()
	writePEM(t, dir)
	for _, tc := range []struct {
		name, cfg string
		want      tls.ClientAuthType
		ca        bool
		err       string
	}{
		{"need by default", "ssl.keyStore.location=$DIR/key.pem\nssl.trustStore.location=$DIR/ca.pem\n", tls.RequireAndVerifyClientCert, true, ""},
		{"want", "ssl.keyStore.location=$DIR/key.pem\nssl.keyStore.type=PEM\nssl.clientAuth=want\n", tls.VerifyClientCertIfGiven, false, ""},
		{"none", "ssl.keyStore.location=$DIR/key.pem\nssl.clientAuth=none\n", tls.NoClientCert, false, ""},
		{"no key store", "ssl.clientAuth=none\n", 0, false, "ssl.keyStore.location: is needed"},
		{"jks type", "ssl.keyStore.location=$DIR/key.pem\nssl.keyStore.type=JKS\n", 0, false, "line 4: ssl.keyStore.type: JKS store"},
		{"jks extension", "ssl.keyStore.location=$DIR/k.jks\n", 0, false, "ssl.keyStore.location: JKS store"},
		{"p12 trust store", "ssl.keyStore.location=$DIR/key.pem\nssl.trustStore.location=$DIR/t.p12\n", 0, false, "ssl.trustStore.location: PKCS12 store"},
		{"bad type", "ssl.keyStore.location=$DIR/key.pem\nssl.keyStore.type=XYZ\n", 0, false, "not a store type"},
		{"encrypted key", "ssl.keyStore.location=$DIR/enc.pem\n", 0, false, "encrypted private key"},
		{"certificate without key", "ssl.keyStore.location=$DIR/ca.pem\n", 0, false, "certificate and its private key"},
		{"trust store without certificates", "ssl.keyStore.location=$DIR/key.pem\nssl.trustStore.location=$DIR/zoo.cfg\n", 0, false, "holds no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.ReplaceAll("dataDir=/d\nsecureClientPort=2281\n"+tc.cfg, "$DIR", dir)
			if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := Parse(strings.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.TLSConfig()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.ClientAuth != tc.want || len(got.Certificates) != 1 || (got.ClientCAs != nil) != tc.ca || got.MinVersion != tls.VersionTLS12 {
				t.Errorf("ClientAuth %v, %d certificates, ClientCAs %v", got.ClientAuth, len(got.Certificates), got.ClientCAs != nil)
			}
		})
	}
	c, err := Parse(strings.NewReader("dataDir=/d\nssl.keyStore.location=/nope\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := c.TLSConfig(); cfg != nil || err != nil {
		t.Errorf("no secureClientPort: %v %v, want nil, nil", cfg, err)
	}
}
