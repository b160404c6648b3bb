package server

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/wire"
)

// digestClient is a DIGEST-MD5 client written from RFC 2831 alone, apart
// from package sasl, answering the way ZooKeeper's Java client does: realm
// and nonce from the challenge, digest-uri zookeeper/zk-sasl-md5, qop auth.
type digestClient struct {
	user, password string
	cnonce         string
	uri            string
}

var challengeField = regexp.MustCompile(`(realm|nonce)="([^"]*)"`)

// respond answers challenge; it also returns the rspauth the server must
// send back.
func (c digestClient) respond(tb testing.TB, challenge []byte) (response []byte, rspauth string) {
	tb.Helper()
	fields := map[string]string{}
	for _, m := range challengeField.FindAllSubmatch(challenge, -1) {
		fields[string(m[1])] = string(m[2])
	}
	realm, nonce := fields["realm"], fields["nonce"]
	if realm == "" || nonce == "" {
		tb.Fatalf("challenge %q has no realm or nonce", challenge)
	}
	hexMD5 := func(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
	userRealmPass := md5.Sum([]byte(c.user + ":" + realm + ":" + c.password))
	ha1 := hexMD5(string(userRealmPass[:]) + ":" + nonce + ":" + c.cnonce)
	kd := func(a2 string) string {
		return hexMD5(ha1 + ":" + nonce + ":00000001:" + c.cnonce + ":auth:" + hexMD5(a2))
	}
	response = fmt.Appendf(nil, `charset=utf-8,username="%s",realm="%s",nonce="%s",nc=00000001,cnonce="%s",digest-uri="%s",maxbuf=65536,response=%s,qop=auth`,
		c.user, realm, nonce, c.cnonce, c.uri, kd("AUTHENTICATE:"+c.uri))
	return response, "rspauth=" + kd(":"+c.uri)
}

// saslToken sends a sasl request and returns the reply header and token.
func (r *rawClient) sasl(xid int32, token []byte) (wire.ReplyHeader, []byte) {
	r.tb.Helper()
	r.send(xid, wire.OpSASL, saslToken(token))
	h, d := r.reply()
	tok := d.Buffer()
	if d.Err() != nil || d.Remaining() != 0 {
		r.tb.Fatalf("sasl reply body: %v, %d bytes left", d.Err(), d.Remaining())
	}
	return h, tok
}

var saslUsers = map[string]string{"bob": "bobsecret", "super": "supersecret"}

// TestSASLLogin runs DIGEST-MD5 logins over the sasl opcode: a good one adds
// sasl:bob, after which a sasl:bob ACL admits this session and refuses
// another; every bad one gets AuthFailed with zxid 0 and a null token, then
// the connection closes, and no other session notices.
func TestSASLLogin(t *testing.T) {
	s := startServer(t, Config{SASLUsers: saslUsers})
	addr := s.Addr().String()
	bystander, _ := dial(t, addr, 10*time.Second)
	if _, err := bystander.Create("/open", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	good := digestClient{user: "bob", password: "bobsecret", cnonce: "b2ggaGVsbG8=", uri: "zookeeper/zk-sasl-md5"}
	failures := []struct {
		name string
		// second is the token sent after the challenge.
		second func(t *testing.T, challenge []byte) []byte
	}{
		{"wrong password", func(t *testing.T, ch []byte) []byte {
			c := good
			c.password = "wrong"
			resp, _ := c.respond(t, ch)
			return resp
		}},
		{"unknown user", func(t *testing.T, ch []byte) []byte {
			c := good
			c.user = "eve"
			resp, _ := c.respond(t, ch)
			return resp
		}},
		{"other digest-uri", func(t *testing.T, ch []byte) []byte {
			c := good
			c.uri = "zookeeper/127.0.0.1"
			resp, _ := c.respond(t, ch)
			return resp
		}},
		{"malformed token", func(*testing.T, []byte) []byte { return []byte(`username="bob`) }},
		{"binary garbage", func(*testing.T, []byte) []byte { return []byte{0, 0xff, '"', '\\', 0x80} }},
		{"empty token", func(*testing.T, []byte) []byte { return []byte{} }},
		{"too long", func(*testing.T, []byte) []byte { return bytes.Repeat([]byte("a"), 4097) }},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			r := dialRaw(t, addr)
			r.handshake(10000, 0, nil)
			h, challenge := r.sasl(1, []byte{})
			if h.Err != wire.CodeOK || !bytes.HasPrefix(challenge, []byte(`realm="zk-sasl-md5",nonce="`)) {
				t.Fatalf("challenge: %+v %q", h, challenge)
			}
			h, tok := r.sasl(2, tt.second(t, challenge))
			if h != (wire.ReplyHeader{Xid: 2, Zxid: 0, Err: wire.CodeAuthFailed}) || tok != nil {
				t.Fatalf("reply %+v token %q; want AuthFailed, zxid 0, null token", h, tok)
			}
			r.expectClosed()
		})
	}

	t.Run("success", func(t *testing.T) {
		r := dialRaw(t, addr)
		r.handshake(10000, 0, nil)
		h, challenge := r.sasl(1, []byte{})
		if h.Err != wire.CodeOK {
			t.Fatalf("challenge: %+v", h)
		}
		resp, wantRspauth := good.respond(t, challenge)
		h, rspauth := r.sasl(2, resp)
		if h != (wire.ReplyHeader{Xid: 2}) || string(rspauth) != wantRspauth {
			t.Fatalf("answer %+v %q, want OK zxid 0 %q", h, rspauth, wantRspauth)
		}
		r.send(3, wire.OpWhoAmI, nil)
		h, d := r.reply()
		var who wire.WhoAmIResponse
		who.Decode(d)
		// In ZooKeeper's order (javaSetOrder): sasl:bob hashes first.
		want := []wire.ClientInfo{{AuthScheme: "sasl", User: "bob"}, {AuthScheme: "ip", User: "127.0.0.1"}}
		if h.Err != wire.CodeOK || fmt.Sprint(who.Infos) != fmt.Sprint(want) {
			t.Fatalf("whoAmI: %+v %v, want %v", h, who.Infos, want)
		}
		// Bob's node, readable by bob only.
		r.send(4, wire.OpCreate, &wire.CreateRequest{Path: "/bob", Data: []byte("mine"),
			ACL: []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "sasl", ID: "bob"}}}})
		if h, _ := r.reply(); h.Err != wire.CodeOK {
			t.Fatalf("create /bob with sasl:bob: %+v", h)
		}
		r.send(5, wire.OpGetData, &wire.PathWatchRequest{Path: "/bob"})
		if h, d := r.reply(); h.Err != wire.CodeOK || string(d.Buffer()) != "mine" {
			t.Fatalf("bob reads /bob: %+v", h)
		}
		if _, _, err := bystander.Get("/bob"); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("another session reads /bob: %v, want NoAuth", err)
		}
		// The auth scheme expands to the sasl identity.
		r.send(6, wire.OpCreate, &wire.CreateRequest{Path: "/bob2", Data: []byte{},
			ACL: []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "auth"}}}})
		if h, _ := r.reply(); h.Err != wire.CodeOK {
			t.Fatalf("create /bob2 with auth: %+v", h)
		}
		r.send(7, wire.OpGetACL, &wire.PathRequest{Path: "/bob2"})
		h, d = r.reply()
		var acl wire.GetACLResponse
		acl.Decode(d)
		if want := []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "sasl", ID: "bob"}}}; h.Err != wire.CodeOK || fmt.Sprint(acl.ACL) != fmt.Sprint(want) {
			t.Fatalf("ACL of /bob2: %+v %v; want %v", h, acl.ACL, want)
		}
		if _, _, err := bystander.Get("/bob2"); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("another session reads /bob2: %v, want NoAuth", err)
		}
		// The exchange is over: another token fails it and closes.
		h, tok := r.sasl(8, []byte{})
		if h != (wire.ReplyHeader{Xid: 8, Err: wire.CodeAuthFailed}) || tok != nil {
			t.Fatalf("token after success: %+v %q", h, tok)
		}
		r.expectClosed()
	})

	t.Run("sasl super matches every sasl entry", func(t *testing.T) {
		r := dialRaw(t, addr)
		r.handshake(10000, 0, nil)
		_, challenge := r.sasl(1, []byte{})
		c := good
		c.user, c.password = "super", "supersecret"
		resp, _ := c.respond(t, challenge)
		if h, _ := r.sasl(2, resp); h.Err != wire.CodeOK {
			t.Fatalf("super login: %+v", h)
		}
		r.send(3, wire.OpGetData, &wire.PathWatchRequest{Path: "/bob"})
		if h, _ := r.reply(); h.Err != wire.CodeOK {
			t.Fatalf("sasl:super reads /bob: %+v", h)
		}
	})

	t.Run("null token closes without answer", func(t *testing.T) {
		r := dialRaw(t, addr)
		r.handshake(10000, 0, nil)
		r.send(1, wire.OpSASL, saslToken(nil))
		r.expectClosed()
	})

	// The session that watched all this is unharmed.
	if _, _, err := bystander.Get("/open"); err != nil {
		t.Fatalf("bystander after the logins: %v", err)
	}
	if st := bystander.State(); st != zk.StateHasSession {
		t.Fatalf("bystander state %v", st)
	}
}

// TestSASLDisabled keeps ZooKeeper's answer without SASL: OK, zxid 0, a
// null token, no identity added, and sasl ACLs invalid.
func TestSASLDisabled(t *testing.T) {
	s := startServer(t, Config{})
	r := dialRaw(t, s.Addr().String())
	r.handshake(10000, 0, nil)
	h, tok := r.sasl(1, []byte("anything"))
	if h != (wire.ReplyHeader{Xid: 1}) || tok != nil {
		t.Fatalf("sasl without SASL users: %+v %q", h, tok)
	}
	r.send(2, wire.OpCreate, &wire.CreateRequest{Path: "/bob", Data: []byte{},
		ACL: []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "sasl", ID: "bob"}}}})
	if h, _ := r.reply(); h.Err != wire.CodeInvalidACL {
		t.Fatalf("create with sasl:bob without SASL: %+v, want InvalidACL", h)
	}
}
