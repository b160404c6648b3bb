package sasl

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// What ZooKeeper creates its DIGEST-MD5 server with (ZooKeeperSaslServer,
// SecurityUtils.createSaslServer): the Java server takes the server name as
// its only realm, and expects the digest-uri protocol/server name. Both
// ZooKeeper's Java client and kazoo send exactly these.
const (
	Protocol  = "zookeeper"
	Realm     = "zk-sasl-md5"
	DigestURI = Protocol + "/" + Realm
)

// MaxTokenLength is the longest token the Java server evaluates.
const MaxTokenLength = 4096

// rawNonceSize is how many random bytes go into a nonce (40 base64
// characters, as the Java server's).
const rawNonceSize = 30

var (
	// ErrUnknownUser reports a username with no password.
	ErrUnknownUser = errors.New("sasl: unknown user")
	// ErrBadResponse reports a response value that does not match the
	// user's password: a wrong password, most likely.
	ErrBadResponse = errors.New("sasl: mismatched response")
	// ErrState reports a token after the exchange ended or failed.
	ErrState = errors.New("sasl: exchange already ended")
	// ErrTooLong reports a token over MaxTokenLength.
	ErrTooLong = errors.New("sasl: token too long")
)

// Passwords looks a user's password up; ok is false for an unknown user.
type Passwords func(user string) (password string, ok bool)

// Server is the server side of one DIGEST-MD5 exchange, for one
// connection. It is not safe for concurrent use.
type Server struct {
	passwords Passwords
	random    io.Reader

	state   state
	nonce   string
	authzID string
}

type state int

const (
	wantInitial  state = iota // nothing received yet: the next token gets the challenge
	wantResponse              // challenge sent: the next token is the digest-response
	done                      // authenticated
	failed                    // a token was refused; nothing more is accepted
)

// NewServer returns the server side of an exchange checking passwords and
// drawing its nonce from random (crypto/rand.Reader outside tests).
func NewServer(passwords Passwords, random io.Reader) *Server {
	return &Server{passwords: passwords, random: random}
}

// Step evaluates the client's next token and returns the server's answer:
// the digest-challenge for the first token (whatever it holds: ZooKeeper's
// clients send an empty one), then "rspauth=…" once the digest-response
// checks out. Any error ends the exchange, and every later Step fails with
// ErrState, as the Java server's does.
func (s *Server) Step(token []byte) ([]byte, error) {
	if len(token) > MaxTokenLength {
		s.state = failed
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLong, len(token), MaxTokenLength)
	}
	switch s.state {
	case wantInitial:
		challenge, err := s.challenge()
		if err != nil {
			s.state = failed
			return nil, err
		}
		s.state = wantResponse
		return challenge, nil
	case wantResponse:
		rspauth, err := s.verify(token)
		if err != nil {
			s.state = failed
			return nil, err
		}
		s.state = done
		return rspauth, nil
	default:
		return nil, ErrState
	}
}

// Done reports whether the client has authenticated.
func (s *Server) Done() bool { return s.state == done }

// AuthorizationID is the name the client authenticated as, once Done: what
// ZooKeeper adds as the identity "sasl:<id>".
func (s *Server) AuthorizationID() string { return s.authzID }

// challenge is the Java server's digest-challenge with its default
// properties: one realm, a fresh nonce, charset=utf-8 and md5-sess. It
// names no qop (RFC 2831's default, "auth") and no maxbuf.
func (s *Server) challenge() ([]byte, error) {
	raw := make([]byte, rawNonceSize)
	if _, err := io.ReadFull(s.random, raw); err != nil {
		return nil, fmt.Errorf("sasl: nonce: %w", err)
	}
	s.nonce = base64.StdEncoding.EncodeToString(raw)
	c := []byte(`realm="`)
	c = appendQuoted(c, Realm)
	c = append(c, `",nonce="`...)
	c = appendQuoted(c, s.nonce)
	c = append(c, `",charset=utf-8,algorithm=md5-sess`...)
	return c, nil
}

// verify checks a digest-response in the Java server's order and returns
// the rspauth answer.
func (s *Server) verify(token []byte) ([]byte, error) {
	r, err := ParseResponse(token)
	if err != nil {
		return nil, err
	}
	if r.Charset.Set && r.Charset.Value != "utf-8" {
		return nil, fmt.Errorf("%w: charset %q", ErrFormat, r.Charset.Value)
	}
	if r.MaxBuf.Set {
		if _, err := strconv.ParseInt(r.MaxBuf.Value, 10, 32); err != nil {
			return nil, fmt.Errorf("%w: maxbuf %q", ErrFormat, r.MaxBuf.Value)
		}
	}
	if !r.Username.Set {
		return nil, fmt.Errorf("%w: no username", ErrFormat)
	}
	// The Java server reads the user name, realm, qop and digest-uri as
	// UTF-8 text (malformed bytes become U+FFFD); nonce, cnonce and authzid
	// stay bytes.
	user := javaUTF8(r.Username.Value)
	realm := javaUTF8(r.Realm.Value) // an absent realm is ""
	if realm != Realm {
		return nil, fmt.Errorf("%w: realm %q", ErrFormat, realm)
	}
	if !r.Nonce.Set || r.Nonce.Value != s.nonce {
		return nil, fmt.Errorf("%w: mismatched nonce", ErrFormat)
	}
	if !r.CNonce.Set {
		return nil, fmt.Errorf("%w: no cnonce", ErrFormat)
	}
	if r.NonceCount.Set {
		if n, err := strconv.ParseInt(r.NonceCount.Value, 16, 32); err != nil || n != 1 {
			return nil, fmt.Errorf("%w: nonce-count %q", ErrFormat, r.NonceCount.Value)
		}
	}
	qop := "auth"
	if r.QOP.Set {
		qop = javaUTF8(r.QOP.Value)
	}
	if qop != "auth" {
		// auth-int and auth-conf need a security layer ZooKeeper never
		// offers; anything else is not a qop.
		return nil, fmt.Errorf("%w: qop %q not offered", ErrFormat, qop)
	}
	uri := javaUTF8(r.DigestURI.Value)
	if !r.DigestURI.Set || !strings.EqualFold(uri, DigestURI) {
		return nil, fmt.Errorf("%w: digest-uri %q, want %q", ErrFormat, uri, DigestURI)
	}
	if !r.Response.Set {
		return nil, fmt.Errorf("%w: no response", ErrFormat)
	}
	password, ok := s.passwords(user)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownUser, user)
	}
	var authzid *string
	if r.Authzid.Set {
		authzid = &r.Authzid.Value
	}
	d := digest{user: user, realm: realm, password: password, nonce: s.nonce, cnonce: r.CNonce.Value, authzid: authzid, qop: qop, uri: uri}
	if r.Response.Value != d.response("AUTHENTICATE") {
		return nil, fmt.Errorf("%w for user %q", ErrBadResponse, user)
	}
	requested := user
	if authzid != nil {
		requested = javaUTF8(*authzid)
	}
	id, err := authorizedID(user, requested)
	if err != nil {
		return nil, err
	}
	s.authzID = id
	return append([]byte("rspauth="), d.response("")...), nil
}

// digest holds what RFC 2831's response-value is computed from.
type digest struct {
	user, realm, password string
	nonce, cnonce         string
	authzid               *string // nil when not sent: A1 then has no ":authzid"
	qop, uri              string
}

// response is RFC 2831 §2.1.2.1's response-value with nonce-count
// 00000001: method "AUTHENTICATE" for the client's response, "" for the
// server's rspauth.
//
//	A1 = H(user:realm:password) ":" nonce ":" cnonce [":" authzid]
//	A2 = method ":" digest-uri
//	response = HEX(KD(HEX(H(A1)), nonce ":" nc ":" cnonce ":" qop ":" HEX(H(A2))))
func (d digest) response(method string) string {
	userRealmPass := md5.Sum([]byte(latin1OrUTF8(d.user) + ":" + latin1OrUTF8(d.realm) + ":" + latin1OrUTF8(d.password)))
	a1 := string(userRealmPass[:]) + ":" + d.nonce + ":" + d.cnonce
	if d.authzid != nil {
		a1 += ":" + *d.authzid
	}
	ha1 := md5.Sum([]byte(a1))
	ha2 := md5.Sum([]byte(method + ":" + d.uri))
	kd := md5.Sum([]byte(hex.EncodeToString(ha1[:]) + ":" + d.nonce + ":00000001:" + d.cnonce + ":" + d.qop + ":" + hex.EncodeToString(ha2[:])))
	return hex.EncodeToString(kd[:])
}

// latin1OrUTF8 encodes user names, realms and passwords for A1 as RFC 2831
// asks and the Java server does: ISO 8859-1 when every character fits in
// it, UTF-8 otherwise.
func latin1OrUTF8(s string) string {
	runes := []rune(s)
	b := make([]byte, 0, len(runes))
	for _, r := range runes {
		if r > 0xff {
			return string(runes) // malformed bytes come out as U+FFFD
		}
		b = append(b, byte(r))
	}
	return string(b)
}

// javaUTF8 is the text Java decodes from bytes as UTF-8: malformed
// sequences become U+FFFD.
func javaUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// kerberosName is KerberosName's pattern: service[/host]@realm.
var kerberosName = regexp.MustCompile(`^([^/@]*)(/([^/@]*))?@([^/@]*)$`)

// authorizedID is the identity ZooKeeper's SaslServerCallbackHandler
// authorizes an authenticated user as, with its defaults (no
// removeHostFromPrincipal or removeRealmFromPrincipal, auth_to_local
// DEFAULT, no Kerberos default realm configured). The name is read as a
// Kerberos principal and rebuilt from its parts, which gives back the user
// name itself, except for a principal in a realm other than the default
// (""), which no rule maps: the handler then leaves the client's requested
// authzid (the user name when none was sent). A name with '@' that is no
// principal makes the Java handler throw, and the login fails.
func authorizedID(user, requested string) (string, error) {
	m := kerberosName.FindStringSubmatch(user)
	switch {
	case m == nil && strings.Contains(user, "@"):
		return "", fmt.Errorf("%w: malformed Kerberos name %q", ErrFormat, user)
	case m == nil, m[4] == "":
		return user, nil
	default:
		return requested, nil
	}
}
