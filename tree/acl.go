package tree

import (
	"crypto/sha1"
	"encoding/base64"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/x500"
)

// Schemes with an authentication provider: ZooKeeper 3.8's defaults;
// x509, which hutch always provides (as a ZooKeeper configured with
// authProvider.x509=X509AuthenticationProvider for its secure port); and
// "sasl", registered when the tree accepts SASL (Tree.EnableSASL). ACL
// entries of any other scheme (except world:anyone and the "auth"
// placeholder) are refused as InvalidACL and never match in checkACL.
const (
	schemeWorld  = "world"
	schemeAuth   = "auth"
	schemeDigest = "digest"
	schemeIP     = "ip"
	schemeSuper  = "super"
	schemeSASL   = "sasl"
	schemeX509   = "x509"
)

// openACL is ZooDefs.Ids.OPEN_ACL_UNSAFE, the ACL of the built-in nodes.
var openACL = []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: schemeWorld, ID: "anyone"}}}

// readACL is ZooDefs.Ids.READ_ACL_UNSAFE, the ACL of /zookeeper/config.
var readACL = []wire.ACL{{Perms: wire.PermRead, ID: wire.ID{Scheme: schemeWorld, ID: "anyone"}}}

// DigestID returns the digest-scheme id for "user:password" exactly as
// DigestAuthenticationProvider.generateDigest: the text before the first ':'
// followed by ':' and base64(sha1(whole input)).
func DigestID(userPass string) string {
	user, _, _ := strings.Cut(userPass, ":")
	sum := sha1.Sum([]byte(userPass))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// fixupACL validates an ACL from create or setACL and expands "auth" entries,
// as PrepRequestProcessor.fixupACL: duplicates are dropped first, an empty list
// is invalid, world must be "anyone", "auth" becomes one entry per
// authenticated identity of the connection (digest, x509 and sasl ids: ip
// is not an authenticating provider and super has no provider), and other
// schemes must pass their provider's isValid. sasl tells whether the sasl
// provider is registered.
// UserName is the user an identity names, as whoAmI reports it: a digest
// identity's user is the part before its password digest ("alice" of
// "alice:Jq7w..."), as ZooKeeper's digest provider says; every other
// scheme's identity is its user.
func UserName(id wire.ID) string {
	if id.Scheme == schemeDigest {
		user, _, _ := strings.Cut(id.ID, ":")
		return user
	}
	return id.ID
}

func fixupACL(auth []wire.ID, acl []wire.ACL, sasl bool) ([]wire.ACL, error) {
	uniq := make([]wire.ACL, 0, len(acl))
	for _, a := range acl {
		dup := false
		for _, u := range uniq {
			if u == a {
				dup = true
				break
			}
		}
		if !dup {
			uniq = append(uniq, a)
		}
	}
	if len(uniq) == 0 {
		return nil, ErrInvalidACL
	}
	out := make([]wire.ACL, 0, len(uniq))
	for _, a := range uniq {
		switch {
		case a.ID.Scheme == schemeWorld && a.ID.ID == "anyone":
			out = append(out, a)
		case a.ID.Scheme == schemeAuth:
			valid := false
			for _, id := range auth {
				if id.Scheme == schemeDigest || id.Scheme == schemeX509 || (sasl && id.Scheme == schemeSASL) {
					valid = true
					out = append(out, wire.ACL{Perms: a.Perms, ID: id})
				}
			}
			if !valid {
				return nil, ErrInvalidACL
			}
		case a.ID.Scheme == schemeDigest && validDigestID(a.ID.ID),
			a.ID.Scheme == schemeIP && validIPACL(a.ID.ID),
			a.ID.Scheme == schemeX509 && x500.Valid(a.ID.ID),
			a.ID.Scheme == schemeSASL && sasl && validKerberosName(a.ID.ID):
			out = append(out, a)
		default:
			return nil, ErrInvalidACL
		}
	}
	return out, nil
}

// Allowed reports whether identities auth have any of the permissions perm
// under acl (ZooKeeperServer.checkACL, as the admin commands' AuthRequest
// applies it to a node's ACL).
func Allowed(acl []wire.ACL, perm int32, auth []wire.ID) bool {
	return checkACL(acl, perm, auth) == nil
}

// checkACL is ZooKeeperServer.checkACL: an empty ACL or a "super" identity
// allows everything; otherwise some entry granting any bit of perm must be
// world:anyone or match one of the connection's ids of the same scheme.
func checkACL(acl []wire.ACL, perm int32, auth []wire.ID) error {
	if len(acl) == 0 {
		return nil
	}
	for _, id := range auth {
		if id.Scheme == schemeSuper {
			return nil
		}
	}
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		if a.ID.Scheme == schemeWorld && a.ID.ID == "anyone" {
			return nil
		}
		for _, id := range auth {
			if id.Scheme != a.ID.Scheme {
				continue
			}
			switch id.Scheme {
			case schemeDigest, schemeX509:
				if id.ID == a.ID.ID {
					return nil
				}
			case schemeIP:
				if ipMatches(id.ID, a.ID.ID) {
					return nil
				}
			case schemeSASL:
				// SASLAuthenticationProvider.matches: the sasl user
				// "super" matches every sasl entry.
				if id.ID == a.ID.ID || id.ID == "super" {
					return nil
				}
			}
		}
	}
	return ErrNoAuth
}

// validDigestID is DigestAuthenticationProvider.isValid: id.split(":") must
// have exactly two parts. Java's split drops trailing empty strings, so
// "user:" is invalid while ":hash" and "user:hash:" are valid.
func validDigestID(id string) bool {
	parts := strings.Split(id, ":")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if id == "" {
		return false // Java's "".split(":") is [""], one part
	}
	return len(parts) == 2
}

// redactDigest is getACL's `id.replaceAll(":.*", ":x")` for callers without
// ADMIN: every ':' and the rest of its line become ":x". Java's '.' stops at
// line terminators (\n, \r, U+0085, U+2028, U+2029), and matching resumes
// after them.
func redactDigest(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); {
		if id[i] != ':' {
			b.WriteByte(id[i])
			i++
			continue
		}
		b.WriteString(":x")
		i++
		for i < len(id) {
			r, size := rune(id[i]), 1
			if r >= 0x80 {
				r, size = utf8.DecodeRuneInString(id[i:])
			}
			if r == '\n' || r == '\r' || r == 0x85 || r == 0x2028 || r == 0x2029 {
				break
			}
			i += size
		}
	}
	return b.String()
}

// kerberosName is KerberosName's pattern: service[/host]@realm.
var kerberosName = regexp.MustCompile(`^([^/@]*)(/([^/@]*))?@([^/@]*)$`)

// validKerberosName is SASLAuthenticationProvider.isValid: the id must be
// a Kerberos name, which only a name with '@' that is not
// service[/host]@realm fails to be.
func validKerberosName(id string) bool {
	return !strings.Contains(id, "@") || kerberosName.MatchString(id)
}

// validIPACL is IPAuthenticationProvider.isValid: a dotted IPv4 address,
// optionally followed by "/bits" with 0 <= bits <= 32.
func validIPACL(id string) bool {
	addr, bitsStr, hasBits := strings.Cut(id, "/")
	if _, ok := v4Bytes(addr); !ok {
		return false
	}
	if hasBits {
		bits, ok := javaParseInt(bitsStr)
		if !ok || bits < 0 || bits > 32 {
			return false
		}
	}
	return true
}

// ipMatches is IPAuthenticationProvider.matches: the connection's address
// and the ACL's address are compared under the ACL's prefix length. Only IPv4
// ever matches, as in ZooKeeper.
func ipMatches(remote, aclExpr string) bool {
	addr, bitsStr, hasBits := strings.Cut(aclExpr, "/")
	a, ok := v4Bytes(addr)
	if !ok {
		return false
	}
	bits := 32
	if hasBits {
		v, ok := javaParseInt(bitsStr)
		if !ok || v < 0 || v > 32 {
			return false
		}
		bits = int(v)
	}
	r, ok := v4Bytes(remote)
	if !ok {
		return false
	}
	mask4(&a, bits)
	mask4(&r, bits)
	return a == r
}

func mask4(b *[4]byte, bits int) {
	start := bits / 8
	m := ^byte((1 << (8 - bits%8)) - 1)
	for ; start < 4; start++ {
		b[start] &= m
		m = 0
	}
}

// v4Bytes parses exactly four '.'-separated Java integers in 0..255.
func v4Bytes(s string) ([4]byte, bool) {
	var b [4]byte
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return b, false
	}
	for i, p := range parts {
		v, ok := javaParseInt(p)
		if !ok || v < 0 || v > 255 {
			return b, false
		}
		b[i] = byte(v)
	}
	return b, true
}

// javaParseInt mimics Integer.parseInt(s, 10): an optional sign, at least one
// digit (any Unicode decimal digit, as Character.digit accepts), int32 range.
func javaParseInt(s string) (int64, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var v int64
	for _, r := range s {
		d, ok := decimalDigit(r)
		if !ok {
			return 0, false
		}
		v = v*10 + int64(d)
		if v > 1<<31 {
			return 0, false
		}
	}
	if neg {
		v = -v
	}
	if v > 1<<31-1 || v < -1<<31 {
		return 0, false
	}
	return v, true
}

// decimalDigit returns the value of a Unicode Nd rune. Every Nd block is a
// run of ten code points starting at its zero, and the Nd table's ranges are
// unions of whole blocks, so the offset within a range modulo 10 is the value.
func decimalDigit(r rune) (int, bool) {
	if r >= '0' && r <= '9' {
		return int(r - '0'), true
	}
	if r < 0x80 || !unicode.IsDigit(r) {
		return 0, false
	}
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10, true
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10, true
		}
	}
	return 0, false
}
