package sasl

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestResponseValueRFC2831 checks the response-value and rspauth against
// the two worked examples of RFC 2831 §4 (IMAP and ACAP, user chris,
// password secret).
func TestResponseValueRFC2831(t *testing.T) {
	tests := []struct {
		name                      string
		nonce, cnonce, uri        string
		wantResponse, wantRspauth string
	}{
		{"imap", "OA6MG9tEQGm2hh", "OA6MHXh6VqTrRk", "imap/elwood.innosoft.com",
			"d388dad90d4bbd760a152321f2143af7", "ea40f60335c427b5527b84dbabcdfffd"},
		{"acap", "OA9BSXrbuRhWay", "OA9BSuZWMSpW8m", "acap/elwood.innosoft.com",
			"6084c6db3fede7352c551284490fd0fc", "2f0b3d7c3c2e486600ef710726aa2eae"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := digest{user: "chris", realm: "elwood.innosoft.com", password: "secret",
				nonce: tt.nonce, cnonce: tt.cnonce, qop: "auth", uri: tt.uri}
			if got := d.response("AUTHENTICATE"); got != tt.wantResponse {
				t.Errorf("response = %s, want %s", got, tt.wantResponse)
			}
			if got := d.response(""); got != tt.wantRspauth {
				t.Errorf("rspauth = %s, want %s", got, tt.wantRspauth)
			}
		})
	}
}

// TestLatin1OrUTF8 checks the A1 encoding of names and passwords.
func TestLatin1OrUTF8(t *testing.T) {
	tests := []struct{ in, want string }{
		{"bob", "bob"},
		{"j\u00f6rg", "j\xf6rg"},               // fits Latin-1: one byte
		{"j\u00f6rg\u20ac", "j\u00f6rg\u20ac"}, // a euro sign: all UTF-8
		{"a\xffb", "a\uFFFDb"},                 // malformed UTF-8: U+FFFD, as Java decodes
	}
	for _, tt := range tests {
		if got := latin1OrUTF8(tt.in); got != tt.want {
			t.Errorf("latin1OrUTF8(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseResponse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Response
		wantErr bool
	}{
		{name: "java client",
			in: `charset=utf-8,username="bob",realm="zk-sasl-md5",nonce="n1",nc=00000001,cnonce="c1",digest-uri="zookeeper/zk-sasl-md5",maxbuf=65536,response=0123,qop=auth`,
			want: Response{Charset: f("utf-8"), Username: f("bob"), Realm: f("zk-sasl-md5"), Nonce: f("n1"),
				CNonce: f("c1"), DigestURI: f("zookeeper/zk-sasl-md5"), MaxBuf: f("65536"), Response: f("0123"), QOP: f("auth")}},
		{name: "keys ignore case, white space and empty elements",
			in:   " USERNAME = \"bob\" ,, \t Nonce=x\r\n,cnonce=\"\"",
			want: Response{Username: f("bob"), Nonce: f("x"), CNonce: f("")}},
		{name: "escapes inside quotes", in: `username="a\"b\\c"`, want: Response{Username: f(`a"b\c`)}},
		{name: "empty bare value", in: `authzid=,username=u`, want: Response{Authzid: f(""), Username: f("u")}},
		{name: "trailing key without value", in: `username=u,authzid`, want: Response{Username: f("u"), Authzid: f("")}},
		{name: "unknown directives ignored, twice too", in: `x=1,x=2,nc=00000002`, want: Response{}},
		{name: "nonce-count is the java server's key", in: `nonce-count=2`, want: Response{NonceCount: f("2")}},
		{name: "empty", in: ``, want: Response{}},
		{name: "duplicate", in: `username=a,username=b`, wantErr: true},
		{name: "duplicate in other case", in: `realm=a,REALM=b`, wantErr: true},
		{name: "unterminated quote", in: `username="bob`, wantErr: true},
		{name: "trailing escape", in: `username="bob\`, wantErr: true},
		{name: "text after closing quote", in: `username="bob"x`, wantErr: true},
		{name: "no key", in: `=bob`, wantErr: true},
		{name: "no value", in: `username=`, wantErr: true},
		{name: "space inside key", in: `user name=bob`, wantErr: true},
		{name: "comma inside key", in: `user,=bob`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseResponse([]byte(tt.in))
			if tt.wantErr {
				if !errors.Is(err, ErrFormat) {
					t.Fatalf("ParseResponse(%q) = %+v, %v; want ErrFormat", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseResponse(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func f(v string) Field { return Field{Value: v, Set: true} }

// counting is a deterministic nonce source: bytes 0, 1, 2, ...
type counting struct{ next byte }

func (c *counting) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = c.next
		c.next++
	}
	return len(p), nil
}

var users = map[string]string{"bob": "bobsecret", "super": "supersecret", "j\u00f6rg": "pw\u00e9", "x@OTHER": "x", "a@b@c": "a"}

func lookup(user string) (string, bool) {
	p, ok := users[user]
	return p, ok
}

// TestChallenge checks the first answer byte for byte: the Java server's
// directives in its order, a 40-character base64 nonce.
func TestChallenge(t *testing.T) {
	s := NewServer(lookup, &counting{})
	got, err := s.Step(nil)
	if err != nil {
		t.Fatal(err)
	}
	const want = `realm="zk-sasl-md5",nonce="AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd",charset=utf-8,algorithm=md5-sess`
	if string(got) != want {
		t.Fatalf("challenge\n got %s\nwant %s", got, want)
	}
	if s.Done() {
		t.Fatal("Done after the challenge")
	}
}

// clientResponse is a DIGEST-MD5 client answering challenge the way
// ZooKeeper's Java client does (fields in its order, nc=00000001), with
// edit applied to its directives before they are joined.
func clientResponse(t *testing.T, challenge []byte, user, password string, edit func(d *[][2]string)) []byte {
	t.Helper()
	var realm, nonce string
	err := parseDirectives(challenge, func(k string, v []byte) error {
		switch k {
		case "realm":
			realm = string(v)
		case "nonce":
			nonce = string(v)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("challenge %q: %v", challenge, err)
	}
	const cnonce = "Y2xpZW50bm9uY2U="
	d := digest{user: user, realm: realm, password: password, nonce: nonce, cnonce: cnonce, qop: "auth", uri: DigestURI}
	dirs := [][2]string{
		{"charset", "utf-8"}, {"username", `"` + user + `"`}, {"realm", `"` + realm + `"`},
		{"nonce", `"` + nonce + `"`}, {"nc", "00000001"}, {"cnonce", `"` + cnonce + `"`},
		{"digest-uri", `"` + DigestURI + `"`}, {"maxbuf", "65536"},
		{"response", d.response("AUTHENTICATE")}, {"qop", "auth"},
	}
	if edit != nil {
		edit(&dirs)
	}
	var b strings.Builder
	for i, kv := range dirs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%s", kv[0], kv[1])
	}
	return []byte(b.String())
}

// set replaces directive key's value, or appends it.
func set(key, value string) func(d *[][2]string) {
	return func(d *[][2]string) {
		for i := range *d {
			if (*d)[i][0] == key {
				(*d)[i][1] = value
				return
			}
		}
		*d = append(*d, [2]string{key, value})
	}
}

func drop(key string) func(d *[][2]string) {
	return func(d *[][2]string) {
		for i := range *d {
			if (*d)[i][0] == key {
				*d = append((*d)[:i], (*d)[i+1:]...)
				return
			}
		}
	}
}

func TestExchange(t *testing.T) {
	tests := []struct {
		name     string
		user     string
		password string
		edit     func(d *[][2]string)
		wantID   string
		wantErr  error
	}{
		{name: "bob", user: "bob", password: "bobsecret", wantID: "bob"},
		{name: "super is a plain sasl name", user: "super", password: "supersecret", wantID: "super"},
		{name: "latin-1 name and password", user: "j\u00f6rg", password: "pw\u00e9", wantID: "j\u00f6rg"},
		{name: "authzid does not change the identity", user: "bob", password: "bobsecret", edit: withAuthzid("bob", "bobsecret", "alice"), wantID: "bob"},
		{name: "principal in another realm takes the authzid", user: "x@OTHER", password: "x", edit: withAuthzid("x@OTHER", "x", "alice"), wantID: "alice"},
		{name: "principal in another realm without authzid", user: "x@OTHER", password: "x", wantID: "x@OTHER"},
		{name: "no charset", user: "bob", password: "bobsecret", edit: drop("charset"), wantID: "bob"},
		{name: "no qop means auth", user: "bob", password: "bobsecret", edit: drop("qop"), wantID: "bob"},
		{name: "digest-uri in other case", user: "bob", password: "bobsecret", edit: set("digest-uri", `"ZooKeeper/ZK-SASL-MD5"`), wantErr: ErrBadResponse},
		{name: "wrong password", user: "bob", password: "wrong", wantErr: ErrBadResponse},
		{name: "unknown user", user: "eve", password: "bobsecret", wantErr: ErrUnknownUser},
		{name: "malformed principal", user: "a@b@c", password: "a", wantErr: ErrFormat},
		{name: "wrong realm", user: "bob", password: "bobsecret", edit: set("realm", `"elsewhere"`), wantErr: ErrFormat},
		{name: "no realm", user: "bob", password: "bobsecret", edit: drop("realm"), wantErr: ErrFormat},
		{name: "wrong nonce", user: "bob", password: "bobsecret", edit: set("nonce", `"AAAA"`), wantErr: ErrFormat},
		{name: "no cnonce", user: "bob", password: "bobsecret", edit: drop("cnonce"), wantErr: ErrFormat},
		{name: "no username", user: "bob", password: "bobsecret", edit: drop("username"), wantErr: ErrFormat},
		{name: "no response", user: "bob", password: "bobsecret", edit: drop("response"), wantErr: ErrFormat},
		{name: "no digest-uri", user: "bob", password: "bobsecret", edit: drop("digest-uri"), wantErr: ErrFormat},
		{name: "other digest-uri", user: "bob", password: "bobsecret", edit: set("digest-uri", `"zookeeper/127.0.0.1"`), wantErr: ErrFormat},
		{name: "charset latin-1", user: "bob", password: "bobsecret", edit: set("charset", "iso-8859-1"), wantErr: ErrFormat},
		{name: "qop auth-int", user: "bob", password: "bobsecret", edit: set("qop", "auth-int"), wantErr: ErrFormat},
		{name: "nonce-count 2", user: "bob", password: "bobsecret", edit: set("nonce-count", "00000002"), wantErr: ErrFormat},
		{name: "maxbuf not a number", user: "bob", password: "bobsecret", edit: set("maxbuf", "lots"), wantErr: ErrFormat},
		{name: "garbage", user: "bob", password: "bobsecret", edit: func(d *[][2]string) { *d = [][2]string{{"\"", "\""}} }, wantErr: ErrFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewServer(lookup, &counting{})
			challenge, err := s.Step([]byte{})
			if err != nil {
				t.Fatal(err)
			}
			resp := clientResponse(t, challenge, tt.user, tt.password, tt.edit)
			rspauth, err := s.Step(resp)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || s.Done() {
					t.Fatalf("Step(%s) = %q, %v, done %v; want %v", resp, rspauth, err, s.Done(), tt.wantErr)
				}
				if _, err := s.Step(resp); !errors.Is(err, ErrState) {
					t.Fatalf("Step after a failure: %v, want ErrState", err)
				}
				return
			}
			if err != nil || !s.Done() {
				t.Fatalf("Step(%s) = %q, %v, done %v", resp, rspauth, err, s.Done())
			}
			if got := s.AuthorizationID(); got != tt.wantID {
				t.Errorf("AuthorizationID = %q, want %q", got, tt.wantID)
			}
			if !bytes.HasPrefix(rspauth, []byte("rspauth=")) || len(rspauth) != len("rspauth=")+32 {
				t.Errorf("answer %q, want rspauth= and 32 hex digits", rspauth)
			}
			if _, err := s.Step(nil); !errors.Is(err, ErrState) {
				t.Errorf("Step after success: %v, want ErrState", err)
			}
		})
	}
}

// withAuthzid adds an authzid and recomputes the response over it.
func withAuthzid(user, password, authzid string) func(d *[][2]string) {
	return func(d *[][2]string) {
		var realm, nonce, cnonce string
		for _, kv := range *d {
			v := strings.Trim(kv[1], `"`)
			switch kv[0] {
			case "realm":
				realm = v
			case "nonce":
				nonce = v
			case "cnonce":
				cnonce = v
			}
		}
		dg := digest{user: user, realm: realm, password: password, nonce: nonce, cnonce: cnonce, authzid: &authzid, qop: "auth", uri: DigestURI}
		set("response", dg.response("AUTHENTICATE"))(d)
		set("authzid", `"`+authzid+`"`)(d)
	}
}

// TestRspauth checks the server's answer against an independent
// computation for a known nonce and cnonce.
func TestRspauth(t *testing.T) {
	s := NewServer(lookup, &counting{})
	challenge, _ := s.Step(nil)
	resp := clientResponse(t, challenge, "bob", "bobsecret", nil)
	got, err := s.Step(resp)
	if err != nil {
		t.Fatal(err)
	}
	d := digest{user: "bob", realm: Realm, password: "bobsecret", nonce: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd",
		cnonce: "Y2xpZW50bm9uY2U=", qop: "auth", uri: DigestURI}
	if want := "rspauth=" + d.response(""); string(got) != want {
		t.Fatalf("answer %s, want %s", got, want)
	}
}

func TestTokenTooLong(t *testing.T) {
	s := NewServer(lookup, &counting{})
	if _, err := s.Step(make([]byte, MaxTokenLength+1)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("first Step with %d bytes: %v, want ErrTooLong", MaxTokenLength+1, err)
	}
	if _, err := s.Step(nil); !errors.Is(err, ErrState) {
		t.Fatalf("Step after a failure: %v, want ErrState", err)
	}
	s = NewServer(lookup, &counting{})
	if _, err := s.Step(make([]byte, MaxTokenLength)); err != nil {
		t.Fatalf("first Step with %d bytes (ignored, as in Java): %v", MaxTokenLength, err)
	}
}

func TestNonceSourceFails(t *testing.T) {
	s := NewServer(lookup, bytes.NewReader(nil))
	if _, err := s.Step(nil); err == nil {
		t.Fatal("challenge without random bytes succeeded")
	}
}

// FuzzParseResponse checks the parser never panics and that whatever it
// accepts survives being written back out quoted and parsed again.
func FuzzParseResponse(f *testing.F) {
	for _, seed := range []string{
		`charset=utf-8,username="bob",realm="zk-sasl-md5",nonce="bm9uY2U=",nc=00000001,cnonce="Y24=",digest-uri="zookeeper/zk-sasl-md5",maxbuf=65536,response=d388dad90d4bbd760a152321f2143af7,qop=auth`,
		`username="a\"b",,  realm = x`,
		`qop=auth,username=bob,authzid=""`,
		`username="unterminated`,
		`=`, `,`, `a`, "\"\\",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseResponse(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v is not ErrFormat", err)
			}
			return
		}
		var out []byte
		for _, kv := range []struct {
			k string
			f Field
		}{{"username", r.Username}, {"realm", r.Realm}, {"nonce", r.Nonce}, {"cnonce", r.CNonce},
			{"nonce-count", r.NonceCount}, {"qop", r.QOP}, {"digest-uri", r.DigestURI}, {"response", r.Response},
			{"maxbuf", r.MaxBuf}, {"charset", r.Charset}, {"cipher", r.Cipher}, {"authzid", r.Authzid}} {
			if kv.f.Set {
				out = append(out, kv.k+`="`...)
				out = appendQuoted(out, kv.f.Value)
				out = append(out, `",`...)
			}
		}
		again, err := ParseResponse(out)
		if err != nil || again != r {
			t.Fatalf("%q parsed to %+v; written back as %q it parses to %+v, %v", b, r, out, again, err)
		}
		// The server must refuse or accept it without panicking.
		s := NewServer(lookup, &counting{})
		if _, err := s.Step(nil); err != nil {
			t.Fatal(err)
		}
		_, _ = s.Step(b)
	})
}
