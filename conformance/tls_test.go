package conformance

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/internal/testcerts"
	"github.com/hutchzk/hutch/server"
)

// tlsPKI is one CA with a server certificate for 127.0.0.1 and two client
// certificates, shared by both targets of a TLS check.
type tlsPKI struct {
	ca                         *testcerts.CA
	server, client, other, odd *testcerts.Pair
}

// oddSubject is a client subject whose Java RFC 2253 form differs from Go's
// pkix.Name.String: escaped '=' and '#', emailAddress and serialNumber as
// OIDs with hex values, non-ASCII kept.
var oddSubject = pkix.Name{
	CommonName:         "Zoë \"the\" #1+2=3",
	OrganizationalUnit: []string{"a,b", "c;d"},
	Organization:       []string{" padded "},
	Country:            []string{"NZ"},
	SerialNumber:       "42",
	ExtraNames:         []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}, Value: "zoe@example.org"}},
}

func newTLSPKI(tb testing.TB) *tlsPKI {
	tb.Helper()
	ca := testcerts.NewCA(tb, "hutch conformance CA")
	return &tlsPKI{
		ca:     ca,
		server: ca.Server(tb, "server"),
		client: ca.Client(tb, "client", pkix.Name{CommonName: "client", OrganizationalUnit: []string{"hutch"}, Organization: []string{"test"}}),
		other:  ca.Client(tb, "other", pkix.Name{CommonName: "other", OrganizationalUnit: []string{"hutch"}, Organization: []string{"test"}}),
		odd:    ca.Client(tb, "odd", oddSubject),
	}
}

// tlsTarget is a server with a plain and a TLS client port.
type tlsTarget struct {
	name  string
	start func(tb testing.TB, pki *tlsPKI) (plain, secure string)
}

func tlsTargets() []tlsTarget {
	return []tlsTarget{
		{"zookeeper", startZooKeeperTLS},
		{"hutch", startHutchTLS},
		{"hutch-binary", startHutchBinaryTLS},
	}
}

// startZooKeeperTLS runs ZooKeeper with secureClientPort on Netty, PEM key
// and trust stores, client certificates required (ssl.clientAuth defaults
// to need), and the X509AuthenticationProvider registered: without it
// ZooKeeper closes every connection that presents a certificate.
func startZooKeeperTLS(tb testing.TB, pki *tlsPKI) (string, string) {
	tb.Helper()
	port := strconv.Itoa(realzk.FreePort(tb))
	zk := realzk.Start(tb,
		realzk.Config("secureClientPort", port),
		realzk.Config("secureClientPortAddress", "127.0.0.1"),
		realzk.Config("serverCnxnFactory", "org.apache.zookeeper.server.NettyServerCnxnFactory"),
		realzk.Config("ssl.keyStore.location", pki.server.Combined),
		realzk.Config("ssl.keyStore.type", "PEM"),
		realzk.Config("ssl.trustStore.location", pki.ca.CertFile),
		realzk.Config("ssl.trustStore.type", "PEM"),
		realzk.Config("authProvider.x509", "org.apache.zookeeper.server.auth.X509AuthenticationProvider"),
		realzk.Jars(nettyJars...),
	)
	secure := "127.0.0.1:" + port
	waitTLSPort(tb, secure)
	return zk.Addr, secure
}

// waitTLSPort waits until something listens on addr: ZooKeeper opens its
// secure port next to the plain one realzk waits for.
func waitTLSPort(tb testing.TB, addr string) {
	tb.Helper()
	deadline := time.Now().Add(commandTimeout)
	for {
		nc, err := (&net.Dialer{Timeout: time.Second}).Dial("tcp", addr)
		if err == nil {
			_ = nc.Close()
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("nothing listens on the secure port %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tlsFourLetterWord sends a four-letter word over TLS and returns the
// answer, read until the server closes.
func tlsFourLetterWord(addr string, cfg *tls.Config, word string) (string, error) {
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(commandTimeout))
	if _, err := nc.Write([]byte(word)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(nc)
	return string(b), err
}

// startHutchTLS runs an in-process hutch with the same certificates.
func startHutchTLS(tb testing.TB, pki *tlsPKI) (string, string) {
	tb.Helper()
	logs := newLogBuffer()
	srv := server.New(server.Config{
		ListenAddr:       "127.0.0.1:0",
		SecureListenAddr: "127.0.0.1:0",
		TLS:              pki.server.ServerConfig(pki.ca),
		Logger:           slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err := srv.Start(); err != nil {
		tb.Fatalf("start hutch: %v", err)
	}
	dumpOnFailure(tb, "hutch log", logs)
	tb.Cleanup(func() { _ = srv.Close() })
	return srv.Addr().String(), srv.SecureAddr().String()
}

// startHutchBinaryTLS runs the hutch binary from a zoo.cfg holding the
// keys startZooKeeperTLS gives ZooKeeper, unchanged.
func startHutchBinaryTLS(tb testing.TB, pki *tlsPKI) (string, string) {
	tb.Helper()
	port := strconv.Itoa(realzk.FreePort(tb))
	cfg := writeFile(tb, "zoo.cfg", "dataDir="+tb.TempDir()+"\nclientPort=2181\n"+
		"admin.enableServer=false\n4lw.commands.whitelist=*\nmaxClientCnxns=0\n"+
		"secureClientPort="+port+"\nsecureClientPortAddress=127.0.0.1\n"+
		"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"+
		"ssl.keyStore.location="+pki.server.Combined+"\nssl.keyStore.type=PEM\n"+
		"ssl.trustStore.location="+pki.ca.CertFile+"\nssl.trustStore.type=PEM\n"+
		"authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n")
	h := realzk.StartHutchBinary(tb, realzk.BuildHutch(tb), "--config", cfg)
	secure := "127.0.0.1:" + port
	waitTLSPort(tb, secure)
	return h.Addr, secure
}

// forEachTLSTarget runs check against each target and then compares what
// they recorded, as forEachTarget does.
func forEachTLSTarget(t *testing.T, check func(t *testing.T, pki *tlsPKI, plain, secure string, l *ledger)) {
	t.Helper()
	pki := newTLSPKI(t)
	complete := map[string]*ledger{}
	for _, tg := range tlsTargets() {
		l := &ledger{}
		if t.Run(tg.name, func(t *testing.T) {
			plain, secure := tg.start(t, pki)
			check(t, pki, plain, secure, l)
			l.complete = true
		}) && l.complete {
			complete[tg.name] = l
		}
	}
	compareLedgers(t, "hutch", complete[reference], complete["hutch"])
}

const tlsCheckSource = "testdata/tls/TlsCheck.java"

// nettyJars are the Netty jars Debian's zookeeper.jar manifest leaves out,
// which its Netty client and server need.
var nettyJars = []string{"netty-codec.jar", "netty-resolver.jar"}

// TestTLSJavaClient runs the Java client over Netty with PEM stores
// against both servers' TLS ports: operations, the x509 identity in
// whoAmI and in ACLs, another certificate refused, and addauth x509 over
// the plain port.
func TestTLSJavaClient(t *testing.T) {
	classes := realzk.CompileCurator(t, tlsCheckSource)
	for _, jar := range nettyJars {
		classes += ":" + filepath.Join(realzk.JavaDir, jar)
	}
	forEachTLSTarget(t, func(t *testing.T, pki *tlsPKI, plain, secure string, l *ledger) {
		got := runTLSCheck(t, classes, pki, plain, secure)
		t.Logf("identity seen: %q; whoami %q; odd subject: %q", got["identity"], got["whoami"], got["odd-whoami"])
		want := map[string]string{
			"identity":       "CN=client,OU=hutch,O=test",
			"create":         "/tls",
			"get":            "hello",
			"auth-acl":       "x509:CN=client,OU=hutch,O=test:31",
			"x509-acl":       "x509:CN=client,OU=hutch,O=test:31",
			"x509-get-owner": "x",
			"bad-x509-acl":   "INVALIDACL",
			"other-whoami":   "x509:CN=other,OU=hutch,O=test ip:127.0.0.1", // Java's hash set order
			"odd-whoami": `x509:1.2.840.113549.1.9.1=#0c0f7a6f65406578616d706c652e6f7267,2.5.4.5=#13023432,` +
				`CN=Zoë \"the\" \#1\+2\=3,OU=c\;d+OU=a\,b,O=\ padded\ ,C=NZ ip:127.0.0.1`,
			"x509-get-other":      "NOAUTH",
			"plain-whoami":        "ip:127.0.0.1",
			"x509-get-plain":      "NOAUTH",
			"addauth-x509-plain":  "AuthFailed",
			"after-addauth-plain": "AUTHFAILED",
			"done":                "true",
		}
		for key, w := range want {
			if got[key] != w {
				t.Errorf("%s = %q, want %q", key, got[key], w)
			}
		}
		for _, key := range []string{"whoami", "identity", "create", "get", "auth-acl", "x509-acl", "x509-get-owner",
			"bad-x509-acl", "addauth-x509-tls", "other-whoami", "odd-whoami", "x509-get-other", "plain-whoami", "x509-get-plain",
			"addauth-x509-plain", "after-addauth-plain", "done"} {
			l.record("%s=%s", key, got[key])
		}
	})
}

// runTLSCheck runs TlsCheck with the client certificate as its PEM key
// store and returns what it printed.
func runTLSCheck(t *testing.T, classpath string, pki *tlsPKI, plain, secure string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*commandTimeout)
	defer cancel()
	args := append(strings.Fields(clientJVMFlags),
		"-Djava.net.preferIPv4Stack=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dzookeeper.client.secure=true",
		"-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
		"-Dzookeeper.ssl.keyStore.location="+pki.client.Combined,
		"-Dzookeeper.ssl.keyStore.type=PEM",
		"-Dzookeeper.ssl.trustStore.location="+pki.ca.CertFile,
		"-Dzookeeper.ssl.trustStore.type=PEM",
		"-cp", classpath, "TlsCheck", secure, plain, pki.other.Combined, pki.odd.Combined)
	cmd := groupCommand(ctx, "java", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	got := map[string]string{}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			got[k] = v
		}
	}
	if err != nil {
		t.Fatalf("TlsCheck: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	return got
}

// TestTLSKazoo connects kazoo with use_ssl, a CA and a client certificate
// to both servers' TLS ports, creates and reads a node and one whose ACL
// comes from the auth scheme. On the same servers it sends ruok over TLS:
// the Netty secure port answers four-letter words too.
func TestTLSKazoo(t *testing.T) {
	if _, err := os.Stat(realzk.Python); err != nil {
		realzk.Unavailable(t, realzk.Python)
	}
	forEachTLSTarget(t, func(t *testing.T, pki *tlsPKI, _, secure string, l *ledger) {
		ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
		defer cancel()
		cmd := groupCommand(ctx, realzk.Python, "testdata/tls/kazoo_tls.py", secure, pki.ca.CertFile, pki.client.CertFile, pki.client.KeyFile)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kazoo over TLS: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
		}
		type line struct {
			Op      string   `json:"op"`
			Path    string   `json:"path"`
			Data    string   `json:"data"`
			Version int32    `json:"version"`
			ACL     []string `json:"acl"`
		}
		var lines []line
		for _, raw := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
			var ln line
			if err := json.Unmarshal(raw, &ln); err != nil {
				t.Fatalf("kazoo printed %q: %v", raw, err)
			}
			lines = append(lines, ln)
			l.record("%s %s %q %d %v", ln.Op, ln.Path, ln.Data, ln.Version, ln.ACL)
		}
		if len(lines) != 3 {
			t.Fatalf("kazoo printed %d lines, want 3: %s", len(lines), out)
		}
		if lines[0].Path != "/kazoo-tls" || lines[1].Data != "over tls" {
			t.Errorf("create/get over TLS: %+v %+v", lines[0], lines[1])
		}
		if want := "x509:CN=client,OU=hutch,O=test:31"; len(lines[2].ACL) != 1 || lines[2].ACL[0] != want {
			t.Errorf("ACL from auth scheme = %v, want [%s]", lines[2].ACL, want)
		}

		ruok, err := tlsFourLetterWord(secure, testcerts.ClientConfig(pki.ca, pki.client), "ruok")
		if err != nil || ruok != "imok" {
			t.Errorf("ruok over TLS: %q, %v", ruok, err)
		}
		l.record("ruok over TLS: %q", ruok)
	})
}
