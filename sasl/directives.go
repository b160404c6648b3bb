package sasl

import (
	"errors"
	"fmt"
	"strings"
)

// ErrFormat reports a token that is not a well-formed digest-response, or
// one whose directives contradict the challenge (realm, nonce, digest-uri,
// qop, charset): Java's "digest response format violation".
var ErrFormat = errors.New("sasl: digest response format violation")

// Field is one directive's value; Set tells a directive sent with an empty
// value from one not sent, which RFC 2831 treats differently (an authzid
// sent empty still goes into A1).
type Field struct {
	Value string // raw bytes, quotes and escapes removed
	Set   bool
}

// Response is a parsed digest-response. Only the directives the Java server
// reads are kept; it ignores any other, RFC 2831's "nc" among them: it
// looks for "nonce-count", and otherwise computes the response with the
// count 00000001 whatever "nc" says.
type Response struct {
	Username   Field
	Realm      Field
	Nonce      Field
	CNonce     Field
	NonceCount Field
	QOP        Field
	DigestURI  Field
	Response   Field
	MaxBuf     Field
	Charset    Field
	Cipher     Field
	Authzid    Field
}

// field returns the field a directive key names, matched without regard to
// case as the Java server does, or nil for a directive it ignores.
func (r *Response) field(key string) *Field {
	for _, f := range []struct {
		name string
		f    *Field
	}{
		{"username", &r.Username}, {"realm", &r.Realm}, {"nonce", &r.Nonce},
		{"cnonce", &r.CNonce}, {"nonce-count", &r.NonceCount}, {"qop", &r.QOP},
		{"digest-uri", &r.DigestURI}, {"response", &r.Response}, {"maxbuf", &r.MaxBuf},
		{"charset", &r.Charset}, {"cipher", &r.Cipher}, {"authzid", &r.Authzid},
	} {
		if strings.EqualFold(key, f.name) {
			return f.f
		}
	}
	return nil
}

// ParseResponse parses a digest-response: comma-separated key=value
// directives, values bare or quoted (a backslash quotes the next byte),
// linear white space around separators, empty elements skipped. A directive
// the server reads may appear once; a second one is an error, as are a key
// without '=', a key containing ',' or white space, an unterminated quote
// and anything but a separator after a closing quote.
func ParseResponse(b []byte) (Response, error) {
	var r Response
	err := parseDirectives(b, func(key string, value []byte) error {
		f := r.field(key)
		if f == nil {
			return nil
		}
		if f.Set {
			return fmt.Errorf("%w: more than one %s directive", ErrFormat, key)
		}
		*f = Field{Value: string(value), Set: true}
		return nil
	})
	return r, err
}

// parseDirectives splits b into directives and hands each to add, in order.
func parseDirectives(b []byte, add func(key string, value []byte) error) error {
	var key, value []byte
	gettingKey, quoted, expectSeparator := true, false, false
	i := skipLWS(b, 0)
	for i < len(b) {
		c := b[i]
		switch {
		case gettingKey:
			switch {
			case c == ',':
				if len(key) != 0 {
					return fmt.Errorf("%w: directive key contains ','", ErrFormat)
				}
				i = skipLWS(b, i+1) // an empty element
			case c == '=':
				if len(key) == 0 {
					return fmt.Errorf("%w: empty directive key", ErrFormat)
				}
				gettingKey = false
				i = skipLWS(b, i+1)
				if i >= len(b) {
					return fmt.Errorf("%w: directive %q has no value", ErrFormat, key)
				}
				if b[i] == '"' {
					quoted = true
					i++
				}
			case isLWS(c):
				i = skipLWS(b, i+1)
				if i >= len(b) || b[i] != '=' {
					return fmt.Errorf("%w: '=' expected after key %q", ErrFormat, key)
				}
			default:
				key = append(key, c)
				i++
			}
		case quoted:
			switch c {
			case '\\':
				i++
				if i >= len(b) {
					return fmt.Errorf("%w: unmatched quote in directive %q", ErrFormat, key)
				}
				value = append(value, b[i])
				i++
			case '"':
				i++
				quoted, expectSeparator = false, true
			default:
				value = append(value, c)
				i++
			}
		case isLWS(c) || c == ',':
			if err := add(string(key), value); err != nil {
				return err
			}
			key, value = key[:0], nil
			gettingKey, expectSeparator = true, false
			i = skipLWS(b, i+1)
		case expectSeparator:
			return fmt.Errorf("%w: separator expected after quoted value of %q", ErrFormat, key)
		default:
			value = append(value, c)
			i++
		}
	}
	if quoted {
		return fmt.Errorf("%w: unmatched quote in directive %q", ErrFormat, key)
	}
	if len(key) > 0 {
		return add(string(key), value)
	}
	return nil
}

// isLWS is RFC 2831's linear white space, byte by byte as Java reads it.
func isLWS(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func skipLWS(b []byte, i int) int {
	for i < len(b) && isLWS(b[i]) {
		i++
	}
	return i
}

// appendQuoted appends v as the inside of a quoted-string, escaping what
// RFC 2831 §7.2 does not allow bare: '"', '\\', DEL and control bytes other
// than CR, LF and HT.
func appendQuoted(dst []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '"' || c == '\\' || c == 127 || (c < 32 && c != '\r' && c != '\t' && c != '\n') {
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return dst
}
