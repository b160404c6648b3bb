package conformance

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/server"
	"github.com/hutchzk/hutch/wire"
)

// saslJavaSource is the Java program TestSASL compiles and runs.
const saslJavaSource = "testdata/sasl/SaslCheck.java"

// The one DIGEST-MD5 user both servers know, as a JAAS Server section
// declares it for ZooKeeper and Config.SASLUsers for hutch.
const (
	saslUser       = "bob"
	saslPassword   = "bobsecret"
	saslServerJAAS = `Server {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  user_bob="bobsecret"
  user_super="supersecret";
};
`
)

// clientJAAS is the JAAS Client section the Java client logs in with.
func clientJAAS(password string) string {
	return `Client {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  username="bob"
  password="` + password + `";
};
`
}

// writeFile writes content into a new file in tb's temp dir.
func writeFile(tb testing.TB, name, content string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// saslTargets are ZooKeeper with SASLAuthenticationProvider and a JAAS
// Server section, and hutch in-process with the same user in SASLUsers.
func saslTargets() []target {
	return []target{
		{name: "zookeeper", start: func(tb testing.TB) string {
			jaas := writeFile(tb, "server-jaas.conf", saslServerJAAS)
			return realzk.Start(tb,
				realzk.Config("authProvider.1", "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"),
				realzk.SystemProperty("java.security.auth.login.config", jaas)).Addr
		}},
		{name: "hutch", start: func(tb testing.TB) string {
			users := map[string]string{saslUser: saslPassword, "super": "supersecret"}
			return startHutchConfig(tb, server.Config{SASLUsers: users}, slog.LevelDebug)
		}},
		{name: "hutch-binary", start: func(tb testing.TB) string {
			// ZooKeeper's keys, and the JAAS file by hutch.jaasFile where
			// ZooKeeper takes -Djava.security.auth.login.config.
			jaas := writeFile(tb, "server-jaas.conf", saslServerJAAS)
			cfg := writeFile(tb, "zoo.cfg", "dataDir="+tb.TempDir()+"\nclientPort=2181\n"+
				"admin.enableServer=false\n4lw.commands.whitelist=*\nmaxClientCnxns=0\n"+
				"authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n"+
				"hutch.jaasFile="+jaas+"\n")
			return realzk.StartHutchBinary(tb, realzk.BuildHutch(tb), "--config", cfg).Addr
		}},
	}
}

// TestSASL logs in with SASL DIGEST-MD5 to ZooKeeper and to hutch: by hand
// on the wire (recording the exact bytes of every answer, refusals
// included), with ZooKeeper's Java client through JAAS, and with kazoo
// through pure-sasl. Each client creates a node only bob may read, reads
// it back, and sees another session refused; a wrong password is refused
// the same way by both servers.
func TestSASL(t *testing.T) {
	classes := realzk.CompileCurator(t, saslJavaSource)
	tgs := saslTargets()
	ledgers := make(map[string]*ledger)
	for _, tg := range tgs {
		l := &ledger{}
		passed := t.Run(tg.name, func(t *testing.T) {
			addr := tg.start(t)
			t.Run("wire", func(t *testing.T) { saslWire(t, tg.name, addr, l) })
			t.Run("java", func(t *testing.T) { saslJava(t, classes, addr, l) })
			t.Run("kazoo", func(t *testing.T) { saslKazoo(t, addr, l) })
			t.Run("super", func(t *testing.T) { saslSuper(t, addr, l) })
			l.complete = true
		})
		if passed {
			ledgers[tg.name] = l
		}
	}
	for _, tg := range tgs[1:] {
		compareLedgers(t, tg.name, ledgers[reference], ledgers[tg.name])
	}
}

// saslRequest is GetSASLRequest: one token, nil sent as null.
type saslRequest struct{ token []byte }

func (r *saslRequest) Encode(e *wire.Encoder) { e.Buffer(r.token) }
func (r *saslRequest) Decode(d *wire.Decoder) { r.token = d.Buffer() }

// saslExchange sends one sasl request on c and describes what came back:
// the reply frame in hex, or how the connection ended.
func saslExchange(t *testing.T, c *diffClient, xid int32, token []byte) (header wire.ReplyHeader, body []byte, seen string) {
	t.Helper()
	if err := c.send(xid, wire.OpSASL, &saslRequest{token}); err != nil {
		return header, nil, "send failed: " + err.Error()
	}
	frame, err := c.readFrame()
	if err != nil {
		return header, nil, "no reply: " + connEnd(err)
	}
	d := wire.NewDecoder(frame)
	header.Decode(d)
	body = d.Buffer()
	if d.Err() != nil {
		t.Fatalf("sasl reply %x: %v", frame, d.Err())
	}
	return header, body, fmt.Sprintf("%x", frame)
}

// connEnd names how a read ended: the peer closed, or nothing came.
func connEnd(err error) string {
	var ne interface{ Timeout() bool }
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return "closed"
	case errors.As(err, &ne) && ne.Timeout():
		return "still open"
	default:
		return err.Error()
	}
}

// afterRefusal reports whether the server closed c after refusing it.
func afterRefusal(c *diffClient) string {
	_, err := c.readFrame()
	if err == nil {
		return "another frame"
	}
	return connEnd(err)
}

var challengeNonce = regexp.MustCompile(`nonce="([^"]*)"`)

// digestResponse answers challenge as ZooKeeper's Java client does, with
// password, and returns the rspauth a server knowing the password sends.
func digestResponse(t *testing.T, challenge []byte, user, password string) ([]byte, string) {
	t.Helper()
	m := challengeNonce.FindSubmatch(challenge)
	if m == nil {
		t.Fatalf("challenge %q has no nonce", challenge)
	}
	nonce, cnonce, realm, uri := string(m[1]), "Y25vbmNlLWZyb20tZ28=", "zk-sasl-md5", "zookeeper/zk-sasl-md5"
	hexMD5 := func(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
	urp := md5.Sum([]byte(user + ":" + realm + ":" + password))
	ha1 := hexMD5(string(urp[:]) + ":" + nonce + ":" + cnonce)
	kd := func(a2 string) string {
		return hexMD5(ha1 + ":" + nonce + ":00000001:" + cnonce + ":auth:" + hexMD5(a2))
	}
	resp := fmt.Sprintf(`charset=utf-8,username="%s",realm="%s",nonce="%s",nc=00000001,cnonce="%s",digest-uri="%s",maxbuf=65536,response=%s,qop=auth`,
		user, realm, nonce, cnonce, uri, kd("AUTHENTICATE:"+uri))
	return []byte(resp), "rspauth=" + kd(":"+uri)
}

// saslWire drives the exchange by hand and records every answer byte for
// byte, the random nonce masked.
func saslWire(t *testing.T, target, addr string, l *ledger) {
	dial := func() *diffClient {
		t.Helper()
		c, err := dialDiff(addr, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.abandon)
		return c
	}
	challenge := func(c *diffClient) []byte {
		t.Helper()
		h, body, seen := saslExchange(t, c, 1, []byte{})
		masked := challengeNonce.ReplaceAllFunc(body, func(m []byte) []byte {
			return fmt.Appendf(nil, `nonce="<%d chars>"`, len(m)-len(`nonce=""`))
		})
		l.record("challenge: header %+v token %s", h, masked)
		if h.Err != wire.CodeOK || len(body) == 0 {
			t.Fatalf("challenge: %s", seen)
		}
		return body
	}
	// An unknown user goes first: ZooKeeper's SaslServerCallbackHandler
	// is shared by all connections and keeps the last name it found, so
	// once bob has tried it would check eve's response against bob's
	// password (see below).
	refusals := []struct {
		name  string
		token func(ch []byte) []byte
	}{
		{"unknown user", func(ch []byte) []byte { r, _ := digestResponse(t, ch, "eve", saslPassword); return r }},
		{"wrong password", func(ch []byte) []byte { r, _ := digestResponse(t, ch, saslUser, "wrong"); return r }},
		{"malformed token", func([]byte) []byte { return []byte(`username="bob`) }},
		{"empty token", func([]byte) []byte { return []byte{} }},
	}
	for _, tt := range refusals {
		c := dial()
		ch := challenge(c)
		_, _, seen := saslExchange(t, c, 2, tt.token(ch))
		l.record("%s: %s, then %s", tt.name, seen, afterRefusal(c))
		t.Logf("%s: answer %s", tt.name, seen)
	}

	// ZooKeeper now takes eve with bob's password and adds sasl:eve;
	// hutch refuses a user it does not know, always.
	c := dial()
	resp, _ := digestResponse(t, challenge(c), "eve", saslPassword)
	h, body, seen := saslExchange(t, c, 2, resp)
	l.record("unknown user after bob: (not compared)")
	t.Logf("unknown user with bob's password after bob tried: %s", seen)
	if target != reference && h.Err != wire.CodeAuthFailed {
		t.Errorf("unknown user after bob: %s, want AuthFailed", seen)
	}

	c = dial()
	_, _, seen = saslExchange(t, c, 1, nil)
	l.record("null token first: %s", seen)
	t.Logf("null token first: %s", seen)

	c = dial()
	ch := challenge(c)
	resp, wantRspauth := digestResponse(t, ch, saslUser, saslPassword)
	h, body, seen = saslExchange(t, c, 2, resp)
	if string(body) != wantRspauth {
		t.Errorf("answer to bob's response %s (%q), want token %q", seen, body, wantRspauth)
	}
	l.record("login: header %+v token is rspauth: %v", h, string(body) == wantRspauth)
	if err := c.send(3, wire.OpWhoAmI, nil); err != nil {
		t.Fatal(err)
	}
	h, d, err := c.await(3)
	if err != nil {
		t.Fatal(err)
	}
	var who wire.WhoAmIResponse
	who.Decode(d)
	l.record("whoAmI after login: %v %v", h.Err, who.Infos)
	_, _, seen = saslExchange(t, c, 4, []byte{})
	l.record("token after login: %s, then %s", seen, afterRefusal(c))
	t.Logf("token after login: %s", seen)
}

// saslSuper logs in as the DIGEST user "super", whose identity sasl:super
// SASLAuthenticationProvider.matches lets through every sasl ACL entry,
// and reads the nodes the clients made for bob.
func saslSuper(t *testing.T, addr string, l *ledger) {
	c, err := dialDiff(addr, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.abandon()
	_, ch, _ := saslExchange(t, c, 1, []byte{})
	resp, _ := digestResponse(t, ch, "super", "supersecret")
	if h, _, seen := saslExchange(t, c, 2, resp); h.Err != wire.CodeOK {
		t.Fatalf("super login: %s", seen)
	}
	for i, path := range []string{"/sasl-bob", "/kazoo-sasl"} {
		xid := int32(3 + i)
		if err := c.send(xid, wire.OpGetData, &wire.PathWatchRequest{Path: path}); err != nil {
			t.Fatal(err)
		}
		h, _, err := c.await(xid)
		if err != nil {
			t.Fatal(err)
		}
		l.record("sasl:super reads %s: %v", path, h.Err)
		if h.Err != wire.CodeOK {
			t.Errorf("sasl:super reads %s: %v, want OK", path, h.Err)
		}
	}
}

// saslJava runs SaslCheck with a JAAS Client section, once with bob's
// password and once with a wrong one, and records what it printed.
func saslJava(t *testing.T, classes, addr string, l *ledger) {
	for _, run := range []struct{ mode, password string }{{"login", saslPassword}, {"refused", "wrong"}} {
		jaas := writeFile(t, "client-jaas.conf", clientJAAS(run.password))
		ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
		args := append(strings.Fields(clientJVMFlags),
			"-Djava.net.preferIPv4Stack=true",
			"-Djava.security.auth.login.config="+jaas,
			"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
			"-cp", classes, "SaslCheck", addr, run.mode)
		cmd := groupCommand(ctx, "java", args...)
		var stdout bytes.Buffer
		stderr := newLogBuffer()
		dumpOnFailure(t, "SaslCheck "+run.mode+" stderr", stderr)
		cmd.Stdout, cmd.Stderr = &stdout, stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("SaslCheck %s: %v\nstdout:\n%s", run.mode, err, stdout.String())
		}
		out := keyValues(t, stdout.String())
		t.Logf("SaslCheck %s: %v", run.mode, out)
		if out["done"] != "true" {
			t.Fatalf("SaslCheck %s did not finish: %v", run.mode, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
			l.record("java %s: %s", run.mode, line)
		}
		if run.mode == "login" {
			want := map[string]string{
				"events":    "SyncConnected,SaslAuthenticated",
				"create":    "/sasl-bob",
				"get":       "mine",
				"other.get": "NOAUTH",
			}
			for k, v := range want {
				if out[k] != v {
					t.Errorf("SaslCheck login: %s=%q, want %q", k, out[k], v)
				}
			}
			if !strings.Contains(out["whoami"], "sasl:bob") || strings.Contains(out["other.whoami"], "sasl:") {
				t.Errorf("whoAmI: bob's session %q, the other %q", out["whoami"], out["other.whoami"])
			}
		} else if !strings.HasSuffix(out["events"], "AuthFailed") {
			t.Errorf("SaslCheck refused: events %q, want AuthFailed", out["events"])
		}
	}
}

// saslKazoo runs kazoo_sasl.py, logging in as bob and then with a wrong
// password, and records what it printed.
func saslKazoo(t *testing.T, addr string, l *ledger) {
	if _, err := os.Stat(realzk.Python); err != nil {
		realzk.Unavailable(t, realzk.Python)
	}
	if err := exec.Command(realzk.Python, "-c", "import kazoo, puresasl").Run(); err != nil {
		realzk.Unavailable(t, "kazoo and pure-sasl for "+realzk.Python+" (Debian's python3-kazoo)")
	}
	for _, mode := range []string{"login", "refused"} {
		ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
		cmd := groupCommand(ctx, realzk.Python, "testdata/sasl/kazoo_sasl.py", addr, mode)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("kazoo_sasl.py %s: %v\nstdout:\n%s\nstderr:\n%s", mode, err, stdout.String(), stderr.String())
		}
		out := keyValues(t, stdout.String())
		t.Logf("kazoo %s: %v", mode, out)
		if out["done"] != "true" {
			t.Fatalf("kazoo_sasl.py %s did not finish: %v\nstderr:\n%s", mode, out, stderr.String())
		}
		for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
			l.record("kazoo %s: %s", mode, line)
		}
		if mode == "login" {
			for k, v := range map[string]string{"create": "/kazoo-sasl", "get": "mine", "other.get": "NoAuthError"} {
				if out[k] != v {
					t.Errorf("kazoo login: %s=%q, want %q", k, out[k], v)
				}
			}
		}
	}
}

// keyValues parses key=value lines.
func keyValues(t *testing.T, out string) map[string]string {
	t.Helper()
	kv := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			t.Fatalf("unexpected output line %q", sc.Text())
		}
		kv[k] = v
	}
	return kv
}
