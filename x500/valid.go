package x500

import (
	"encoding/asn1"
	"math/big"
	"strings"
	"unicode"
)

// Valid reports whether new X500Principal(s) accepts s, which is
// X509AuthenticationProvider.isValid: the check an "x509:<name>" ACL entry
// must pass. It follows Java's lenient parser (sun.security.x509.X500Name
// in its default format), quirks included: RDNs split at ',' or ';' not
// escaped or inside one pair of quotes, attributes at '+', a keyword from
// Java's table or an OID, and a value that is '#' and hex DER, a quoted
// string, or text whose special characters are escaped.
func Valid(s string) bool {
	if s == "" {
		return true // the empty name
	}
	rs := []rune(s)
	dnOffset, searchOffset, quotes := 0, 0, 0
	for {
		end := nextRDNSeparator(rs, searchOffset)
		if end < 0 {
			break
		}
		quotes += countQuotes(rs, searchOffset, end)
		if quotes != 1 && !escapedAt(rs, end, searchOffset) {
			if !validRDN(rs[dnOffset:end]) {
				return false
			}
			dnOffset = end + 1
			quotes = 0
		}
		searchOffset = end + 1
	}
	return validRDN(rs[dnOffset:])
}

func nextRDNSeparator(rs []rune, from int) int {
	for i := from; i < len(rs); i++ {
		if rs[i] == ',' || rs[i] == ';' {
			return i
		}
	}
	return -1
}

// countQuotes is X500Name.countQuotes: quotes in [from, to) not preceded
// by a backslash (the first one always counts).
func countQuotes(rs []rune, from, to int) int {
	n := 0
	for i := from; i < to; i++ {
		if rs[i] == '"' && (i == from || rs[i-1] != '\\') {
			n++
		}
	}
	return n
}

// escapedAt is X500Name.escaped: whether the separator at end is escaped.
// Past a doubled backslash Java counts every backslash back to from, not
// only the run before the separator; so does this.
func escapedAt(rs []rune, end, from int) bool {
	switch {
	case end == 1 && rs[0] == '\\':
		return true
	case end > 1 && rs[end-1] == '\\' && rs[end-2] != '\\':
		return true
	case end > 1 && rs[end-1] == '\\' && rs[end-2] == '\\':
		n := 0
		for i := end - 1; i >= from; i-- {
			if rs[i] == '\\' {
				n++
			}
		}
		return n%2 != 0
	}
	return false
}

// validRDN is RDN(String, Map): attributes split at '+' not after a
// backslash nor inside one pair of quotes; none may be empty.
func validRDN(rs []rune) bool {
	avaOffset, searchOffset, quotes := 0, 0, 0
	for {
		plus := -1
		for i := searchOffset; i < len(rs); i++ {
			if rs[i] == '+' {
				plus = i
				break
			}
		}
		if plus < 0 {
			break
		}
		quotes += countQuotes(rs, searchOffset, plus)
		if plus > 0 && rs[plus-1] != '\\' && quotes != 1 {
			if plus == avaOffset || !validAttribute(rs[avaOffset:plus]) {
				return false
			}
			avaOffset = plus + 1
			quotes = 0
		}
		searchOffset = plus + 1
	}
	return avaOffset < len(rs) && validAttribute(rs[avaOffset:])
}

// reader hands out one rune at a time, -1 at the end, as Java's Reader.
type reader struct {
	rs []rune
	at int
}

func (r *reader) read() rune {
	if r.at >= len(r.rs) {
		return -1
	}
	c := r.rs[r.at]
	r.at++
	return c
}

const (
	specialCharsDefault = ",=\n+<>#;\\\" " // may follow a backslash in text
	escapedDefault      = ",+<>;\""        // must follow a backslash in text
	specialChars1779    = ",=\n+<>#;\\\""  // may follow a backslash in quotes
)

func isTerminator(c rune) bool { return c == -1 || c == '+' || c == ',' || c == ';' }

func isHexDigit(c rune) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// validAttribute is AVA(Reader, DEFAULT): keyword '=' value. Whatever
// follows a terminator of the value is ignored, as in Java.
func validAttribute(rs []rune) bool {
	r := &reader{rs: rs}
	var keyword []rune
	for {
		c := r.read()
		if c == -1 {
			return false
		}
		if c == '=' {
			break
		}
		keyword = append(keyword, c)
	}
	if !validKeyword(string(keyword)) {
		return false
	}
	c := r.read()
	for c == ' ' || c == '\n' {
		c = r.read()
	}
	switch c {
	case -1:
		return true // empty value
	case '#':
		return validHexValue(r)
	case '"':
		return validQuotedValue(r)
	}
	return validTextValue(r, c)
}

// javaKeywords are the attribute keywords Java's default format accepts.
var javaKeywords = map[string]bool{
	"CN": true, "C": true, "L": true, "S": true, "ST": true, "O": true, "OU": true,
	"T": true, "IP": true, "STREET": true, "DC": true, "DNQUALIFIER": true,
	"DNQ": true, "SURNAME": true, "GIVENNAME": true, "INITIALS": true,
	"GENERATION": true, "EMAIL": true, "EMAILADDRESS": true, "UID": true,
	"SERIALNUMBER": true,
}

// validKeyword is AVAKeyword.getOID in the default format: trimmed and
// upper-cased, a known keyword, or an OID optionally prefixed "OID.".
func validKeyword(k string) bool {
	k = strings.ToUpper(javaTrim(k))
	if javaKeywords[k] {
		return true
	}
	k = strings.TrimPrefix(k, "OID.")
	if k == "" || k[0] < '0' || k[0] > '9' {
		return false
	}
	return validOID(k)
}

// javaTrim is String.trim: it drops code points up to U+0020 at both ends.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// validOID is ObjectIdentifier(String): at least two '.'-separated
// non-negative integers, the first 0 to 2, the second below 40 unless the
// first is 2. Components are read by Integer.parseInt or BigInteger, so a
// leading '+' and any Unicode decimal digit pass.
func validOID(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return false
	}
	var first *big.Int
	for i, p := range parts {
		n, ok := javaNonNegative(p)
		if !ok {
			return false
		}
		switch i {
		case 0:
			if n.Cmp(big.NewInt(2)) > 0 {
				return false
			}
			first = n
		case 1:
			if first.Cmp(big.NewInt(2)) < 0 && n.Cmp(big.NewInt(39)) > 0 {
				return false
			}
		}
	}
	return true
}

// javaNonNegative parses an optionally '+'-signed run of decimal digits.
// A '-' sign parses in Java but the component is then refused as
// negative (except "-0", which Java takes as zero).
func javaNonNegative(s string) (*big.Int, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return nil, false
	}
	n := new(big.Int)
	for _, r := range s {
		if !unicode.Is(unicode.Nd, r) {
			return nil, false
		}
		n.Mul(n, big.NewInt(10))
		n.Add(n, big.NewInt(int64(digitValue(r))))
	}
	if neg && n.Sign() != 0 {
		return nil, false
	}
	return n, true
}

// digitValue is the value of a Unicode decimal digit: Nd blocks are runs
// of ten starting at a zero, so the offset in its range modulo 10.
func digitValue(r rune) int {
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	return 0
}

// validHexValue is AVA.parseHexString: an even, non-zero number of hex
// digits up to a terminator, making one whole DER value.
func validHexValue(r *reader) bool {
	var digits []byte
	for {
		c := r.read()
		if isTerminator(c) {
			break
		}
		if !isHexDigit(c) {
			return false
		}
		digits = append(digits, byte(c))
	}
	if len(digits) == 0 || len(digits)%2 == 1 {
		return false
	}
	der := make([]byte, len(digits)/2)
	for i := range der {
		der[i] = hexNibble(digits[2*i])<<4 | hexNibble(digits[2*i+1])
	}
	var v asn1.RawValue
	rest, err := asn1.Unmarshal(der, &v)
	return err == nil && len(rest) == 0
}

func hexNibble(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// validQuotedValue is AVA.parseQuotedString: up to the closing quote,
// a backslash escapes a special character or starts a hex pair; after the
// quote only spaces and newlines.
func validQuotedValue(r *reader) bool {
	for {
		c := r.read()
		switch c {
		case -1:
			return false
		case '"':
			for {
				switch r.read() {
				case ' ', '\n':
					continue
				case -1:
					return true
				}
				return false
			}
		case '\\':
			if !validEscape(r, specialChars1779) {
				return false
			}
		}
	}
}

// validEscape checks what follows a backslash: a hex pair, or one of
// specials.
func validEscape(r *reader, specials string) bool {
	c := r.read()
	switch {
	case c == -1:
		return false
	case isHexDigit(c):
		return isHexDigit(r.read())
	}
	return strings.ContainsRune(specials, c)
}

// validTextValue is AVA.parseString in the default format, from its first
// character c: a backslash escapes a special character or starts a hex
// pair; the characters of escapedDefault may not appear bare. Like Java's
// do-while, the first character is checked even if it ends the value.
func validTextValue(r *reader, c rune) bool {
	for first := true; first || !isTerminator(c); first = false {
		if c == '\\' {
			if !validEscape(r, specialCharsDefault) {
				return false
			}
		} else if strings.ContainsRune(escapedDefault, c) {
			return false
		}
		c = r.read()
	}
	return true
}
