package x500

import (
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ASN.1 universal tags of the string types Java writes as text; any other
// value is written as '#' and the hex of its DER encoding.
const (
	tagUTF8String      = 12
	tagPrintableString = 19
	tagT61String       = 20
	tagIA5String       = 22
	tagGeneralString   = 27
	tagBMPString       = 30
)

// rfc2253Keywords are the attribute types Java names in RFC 2253 output
// (AVAKeyword entries marked RFC 2253 compliant); every other type is
// written as its dotted OID.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// attribute is one AttributeTypeAndValue with its value kept raw, since
// the output depends on the value's tag and, for OID types, its encoding.
type attribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// ErrMalformed reports a subject that is not a DER RDNSequence.
var ErrMalformed = errors.New("x500: malformed distinguished name")

// Name returns X500Principal.getName() (RFC 2253 form) of a DER-encoded
// Name, such as x509.Certificate.RawSubject: the RDNs last first, joined
// by ',', the attributes of a multi-valued RDN in encoded order joined by
// '+'. Unlike pkix.Name.String, it escapes '=' and every '#', writes
// attribute types outside RFC 2253's short list (emailAddress,
// serialNumber, ...) as OIDs with hex values, and keeps whatever order the
// certificate encodes.
func Name(der []byte) (string, error) {
	var rdns []asn1.RawValue
	rest, err := asn1.Unmarshal(der, &rdns)
	if err != nil || len(rest) != 0 {
		return "", fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	var b strings.Builder
	for i := len(rdns) - 1; i >= 0; i-- {
		set := rdns[i]
		if set.Class != asn1.ClassUniversal || set.Tag != asn1.TagSet {
			return "", fmt.Errorf("%w: RDN is not a SET", ErrMalformed)
		}
		var attrs []attribute
		rest, err := asn1.UnmarshalWithParams(set.FullBytes, &attrs, "set")
		if err != nil || len(rest) != 0 || len(attrs) == 0 {
			return "", fmt.Errorf("%w: RDN: %v", ErrMalformed, err)
		}
		if i != len(rdns)-1 {
			b.WriteByte(',')
		}
		for j, a := range attrs {
			if j > 0 {
				b.WriteByte('+')
			}
			writeAttribute(&b, a)
		}
	}
	return b.String(), nil
}

// writeAttribute is AVA.toRFC2253String.
func writeAttribute(b *strings.Builder, a attribute) {
	oid := a.Type.String()
	keyword, known := rfc2253Keywords[oid]
	if !known {
		keyword = oid
	}
	b.WriteString(keyword)
	b.WriteByte('=')
	text, isText := valueText(a.Value)
	if !known || !isText {
		b.WriteByte('#')
		b.WriteString(hex.EncodeToString(a.Value.FullBytes))
		return
	}
	b.WriteString(escapeValue(text))
}

// valueText decodes a string-typed value as Java 17 does: the content bytes
// read as UTF-8 whatever the string type (later JDKs pick a charset per
// type; ZooKeeper 3.8 here runs on 17).
func valueText(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal || v.IsCompound {
		return "", false
	}
	switch v.Tag {
	case tagPrintableString, tagT61String, tagIA5String, tagGeneralString, tagBMPString, tagUTF8String:
		return decodeUTF8Lossy(v.Bytes), true
	}
	return "", false
}

// decodeUTF8Lossy is new String(bytes, UTF_8): each malformed sequence
// becomes U+FFFD.
func decodeUTF8Lossy(p []byte) string {
	if utf8.Valid(p) {
		return string(p)
	}
	var b strings.Builder
	for len(p) > 0 {
		r, n := utf8.DecodeRune(p)
		if r == utf8.RuneError && n <= 1 {
			n = malformedLength(p)
		}
		b.WriteRune(r)
		p = p[n:]
	}
	return b.String()
}

// malformedLength is how many bytes Java's UTF-8 decoder replaces with
// one U+FFFD at the start of p: a lead byte and the continuation bytes
// that could still belong to it (the maximal subpart), else one byte.
func malformedLength(p []byte) int {
	lead := p[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case lead >= 0xC2 && lead <= 0xDF:
		need = 1
	case lead == 0xE0:
		need, lo = 2, 0xA0
	case lead >= 0xE1 && lead <= 0xEC, lead == 0xEE, lead == 0xEF:
		need = 2
	case lead == 0xED:
		need, hi = 2, 0x9F
	case lead == 0xF0:
		need, lo = 3, 0x90
	case lead >= 0xF1 && lead <= 0xF3:
		need = 3
	case lead == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for n <= need && n < len(p) && p[n] >= lo && p[n] <= hi {
		lo, hi = 0x80, 0xBF
		n++
	}
	return n
}

// rfc2253Escaped are the characters Java puts a backslash before anywhere
// in a value.
const rfc2253Escaped = ",=+<>#;\"\\"

// escapeValue escapes as AVA.toRFC2253String: a backslash before each of
// rfc2253Escaped, NUL as \00, and a backslash before each leading or
// trailing space or carriage return. Java works on UTF-16 units; the
// characters it looks at are all ASCII, so runes do the same.
func escapeValue(s string) string {
	var esc []rune
	for _, r := range s {
		switch {
		case strings.ContainsRune(rfc2253Escaped, r):
			esc = append(esc, '\\', r)
		case r == 0:
			esc = append(esc, '\\', '0', '0')
		default:
			esc = append(esc, r)
		}
	}
	lead := 0
	for lead < len(esc) && (esc[lead] == ' ' || esc[lead] == '\r') {
		lead++
	}
	trail := len(esc) - 1
	for trail >= 0 && (esc[trail] == ' ' || esc[trail] == '\r') {
		trail--
	}
	var b strings.Builder
	for i, r := range esc {
		if i < lead || i > trail {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
