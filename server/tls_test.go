package server

import (
	"bytes"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/testcerts"
	"github.com/hutchzk/hutch/wire"
)

// tlsFixture is a CA, a server started with a secure port that requires
// client certificates, and two client certificates.
type tlsFixture struct {
	srv           *Server
	ca            *testcerts.CA
	client, other *testcerts.Pair
}

const (
	clientDN = "CN=client,OU=hutch,O=test"
	otherDN  = "CN=other,OU=hutch,O=test"
)

func startTLSServer(tb testing.TB, cfg Config) *tlsFixture {
	tb.Helper()
	ca := testcerts.NewCA(tb, "hutch test CA")
	f := &tlsFixture{
		ca:     ca,
		client: ca.Client(tb, "client", pkix.Name{CommonName: "client", OrganizationalUnit: []string{"hutch"}, Organization: []string{"test"}}),
		other:  ca.Client(tb, "other", pkix.Name{CommonName: "other", OrganizationalUnit: []string{"hutch"}, Organization: []string{"test"}}),
	}
	cfg.SecureListenAddr = "127.0.0.1:0"
	cfg.TLS = ca.Server(tb, "server").ServerConfig(ca)
	f.srv = startServer(tb, cfg)
	return f
}

// dialTLS opens a go-zookeeper session over TLS presenting client (none
// when nil) and waits until it is connected.
func (f *tlsFixture) dialTLS(tb testing.TB, client *testcerts.Pair) *zk.Conn {
	tb.Helper()
	cfg := testcerts.ClientConfig(f.ca, client)
	dialer := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, addr, cfg)
	}
	c, _ := dialVia(tb, f.srv.SecureAddr().String(), 10*time.Second, dialer)
	return c
}

// rawTLS is a hand-driven client over TLS.
func (f *tlsFixture) rawTLS(tb testing.TB, client *testcerts.Pair) *rawClient {
	tb.Helper()
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", f.srv.SecureAddr().String(), testcerts.ClientConfig(f.ca, client))
	if err != nil {
		tb.Fatalf("tls dial: %v", err)
	}
	tb.Cleanup(func() { _ = nc.Close() })
	return &rawClient{tb: tb, nc: nc}
}

func TestTLSConfigNeedsBoth(t *testing.T) {
	for _, cfg := range []Config{
		{SecureListenAddr: "127.0.0.1:0"},
		{TLS: &tls.Config{}},
	} {
		cfg.ListenAddr = "127.0.0.1:0"
		s := New(cfg)
		if err := s.Start(); err == nil {
			_ = s.Close()
			t.Errorf("Start with SecureListenAddr %q and TLS %v succeeded", cfg.SecureListenAddr, cfg.TLS != nil)
		}
	}
	if s := startServer(t, Config{}); s.SecureAddr() != nil {
		t.Errorf("SecureAddr = %v without a secure port", s.SecureAddr())
	}
}

func TestTLSOperationsAndWatches(t *testing.T) {
	f := startTLSServer(t, Config{})
	secure := f.dialTLS(t, f.client)
	plain, _ := dial(t, f.srv.Addr().String(), 10*time.Second)

	if _, err := secure.Create("/t", []byte("v0"), 0, openACL); err != nil {
		t.Fatalf("create over TLS: %v", err)
	}
	data, _, watch, err := secure.GetW("/t")
	if err != nil || string(data) != "v0" {
		t.Fatalf("get over TLS: %q, %v", data, err)
	}
	// The plain port serves alongside and sees the same tree.
	if _, err := plain.Set("/t", []byte("v1"), -1); err != nil {
		t.Fatalf("set over the plain port: %v", err)
	}
	if ev := waitEvent(t, watch); ev.Type != zk.EventNodeDataChanged || ev.Path != "/t" {
		t.Fatalf("event over TLS: %+v", ev)
	}
	if data, _, err := secure.Get("/t"); err != nil || string(data) != "v1" {
		t.Fatalf("get after set: %q, %v", data, err)
	}
}

func TestTLSClientCertificateIdentityInACLs(t *testing.T) {
	f := startTLSServer(t, Config{})
	client := f.dialTLS(t, f.client)
	other := f.dialTLS(t, f.other)
	plain, _ := dial(t, f.srv.Addr().String(), 10*time.Second)

	// The "auth" scheme becomes the certificate's identity.
	if _, err := client.Create("/mine", []byte("m"), 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "auth"}}); err != nil {
		t.Fatalf("create with auth ACL: %v", err)
	}
	acl, _, err := client.GetACL("/mine")
	if err != nil {
		t.Fatal(err)
	}
	if want := []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: clientDN}}; len(acl) != 1 || acl[0] != want[0] {
		t.Fatalf("ACL from auth scheme = %+v, want %+v", acl, want)
	}

	if _, err := plain.Create("/x", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.SetACL("/x", []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: "not a name"}}, -1); !errors.Is(err, zk.ErrInvalidACL) {
		t.Fatalf("setACL with a malformed name: %v, want InvalidACL", err)
	}
	if _, err := plain.SetACL("/x", []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: clientDN}}, -1); err != nil {
		t.Fatalf("setACL x509: %v", err)
	}
	for _, tt := range []struct {
		name string
		c    *zk.Conn
		want error
	}{
		{"the certificate named", client, nil},
		{"another certificate", other, zk.ErrNoAuth},
		{"the plain port", plain, zk.ErrNoAuth},
	} {
		if _, _, err := tt.c.Get("/x"); !errors.Is(err, tt.want) && err != tt.want {
			t.Errorf("%s: get = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestTLSHandshakeFailures(t *testing.T) {
	logs := &syncBuffer{}
	f := startTLSServer(t, Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	strangerCA := testcerts.NewCA(t, "stranger CA")
	stranger := strangerCA.Client(t, "stranger", pkix.Name{CommonName: "client", OrganizationalUnit: []string{"hutch"}, Organization: []string{"test"}})
	for _, tt := range []struct {
		name string
		cert *testcerts.Pair
	}{
		{"no client certificate", nil},
		{"certificate from another CA", stranger},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testcerts.ClientConfig(f.ca, tt.cert)
			nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", f.srv.SecureAddr().String(), cfg)
			if err != nil {
				return // refused during the handshake (TLS 1.2)
			}
			defer nc.Close()
			// With TLS 1.3 the client finishes first; the server's refusal
			// arrives as an alert on the first read.
			r := &rawClient{tb: t, nc: nc}
			r.writeRaw(frame(func(e *wire.Encoder) {
				(&wire.ConnectRequest{Timeout: 10000, Passwd: make([]byte, 16)}).Encode(e)
			}))
			if b, err := r.tryReadFrame(10 * time.Second); err == nil {
				t.Fatalf("session established without a valid certificate (%d bytes)", len(b))
			} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("connection left open: %v", err)
			}
		})
	}
	// Plain bytes on the TLS port are not a handshake (sent as
	// `echo ruok | nc` would, ending its side).
	r := dialRaw(t, f.srv.SecureAddr().String())
	r.writeRaw([]byte("ruok"))
	_ = r.nc.(*net.TCPConn).CloseWrite()
	r.expectClosed()
	waitFor(t, 10*time.Second, "a log line for each failed handshake", func() bool {
		return strings.Count(logs.String(), "TLS handshake failed") >= 3
	})
	// The port still serves a good client.
	c := f.dialTLS(t, f.client)
	if _, _, err := c.Get("/"); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer collects log output written from many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestTLSHandshakeDoesNotBlockAccept: a client that connects and never
// says hello does not hold up the next one.
func TestTLSHandshakeDoesNotBlockAccept(t *testing.T) {
	f := startTLSServer(t, Config{})
	silent, err := net.Dial("tcp", f.srv.SecureAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := f.dialTLS(t, f.client)
		_, _, _ = c.Get("/")
	}()
	select {
	case <-done:
	case <-time.After(tlsHandshakeTimeout / 2):
		t.Fatal("a silent client held up the TLS port")
	}
}

func TestTLSFourLetterWord(t *testing.T) {
	f := startTLSServer(t, Config{})
	r := f.rawTLS(t, f.client)
	r.writeRaw([]byte("ruok"))
	_ = r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r.nc); err != nil && !strings.Contains(err.Error(), "close") {
		t.Fatal(err)
	}
	if buf.String() != "imok" {
		t.Fatalf("ruok over TLS answered %q", buf.String())
	}
}

func TestTLSAddAuthX509(t *testing.T) {
	f := startTLSServer(t, Config{})
	auth := &wire.AuthPacket{Scheme: "x509", Auth: []byte("anything")}

	// With a certificate the provider succeeds and the identity stays.
	r := f.rawTLS(t, f.client)
	r.handshake(10000, 0, nil)
	r.send(wire.XidAuth, wire.OpAuth, auth)
	if h, _ := r.reply(); h.Err != wire.CodeOK {
		t.Fatalf("addauth x509 over TLS with a certificate: %v", h.Err)
	}

	// Without one, as on the plain port, it fails and the connection closes.
	p := dialRaw(t, f.srv.Addr().String())
	p.handshake(10000, 0, nil)
	p.send(wire.XidAuth, wire.OpAuth, auth)
	if h, _ := p.reply(); h.Err != wire.CodeAuthFailed {
		t.Fatalf("addauth x509 on the plain port: %v, want AuthFailed", h.Err)
	}
	p.expectClosed()
}

// TestTLSConnectionLimitPerPort: maxClientCnxns counts the plain and the
// secure port apart, as ZooKeeper's two connection factories do.
func TestTLSConnectionLimitPerPort(t *testing.T) {
	f := startTLSServer(t, Config{MaxClientConnsPerIP: 1})
	plain := dialRaw(t, f.srv.Addr().String())
	plain.handshake(10000, 0, nil)
	secure := f.rawTLS(t, f.client)
	secure.handshake(10000, 0, nil)

	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", f.srv.SecureAddr().String(), testcerts.ClientConfig(f.ca, f.client))
	if err != nil {
		return // closed before the handshake completed: refused
	}
	defer nc.Close()
	extra := &rawClient{tb: t, nc: nc}
	extra.writeRaw(frame(func(e *wire.Encoder) {
		(&wire.ConnectRequest{Timeout: 10000, Passwd: make([]byte, 16)}).Encode(e)
	}))
	if _, err := extra.tryReadFrame(10 * time.Second); err == nil {
		t.Fatal("a second TLS connection from the address was served past maxClientCnxns=1")
	}
}
