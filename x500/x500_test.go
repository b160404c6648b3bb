package x500

import (
	"bufio"
	"context"
	"encoding/asn1"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
)

// attr is one attribute of a test name: type, ASN.1 tag and content bytes.
type attr struct {
	oid   asn1.ObjectIdentifier
	tag   int
	value string
}

var (
	oidCN     = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidO      = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOU     = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidC      = asn1.ObjectIdentifier{2, 5, 4, 6}
	oidSerial = asn1.ObjectIdentifier{2, 5, 4, 5}
	oidEmail  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	oidDC     = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	oidUID    = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
	oidStreet = asn1.ObjectIdentifier{2, 5, 4, 9}
	oidTitle  = asn1.ObjectIdentifier{2, 5, 4, 12}
)

// encodeName builds a DER RDNSequence, RDNs in encoded order (the first is
// printed last), keeping the attributes of a multi-valued RDN in the
// order given rather than DER's sorted SET OF, as a certificate might.
func encodeName(tb testing.TB, rdns ...[]attr) []byte {
	tb.Helper()
	var seq []byte
	for _, rdn := range rdns {
		var set []byte
		for _, a := range rdn {
			oid, err := asn1.Marshal(a.oid)
			if err != nil {
				tb.Fatal(err)
			}
			val, err := asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: a.tag, Bytes: []byte(a.value)})
			if err != nil {
				tb.Fatal(err)
			}
			atv, _ := asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSequence, IsCompound: true, Bytes: append(oid, val...)})
			set = append(set, atv...)
		}
		s, _ := asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSet, IsCompound: true, Bytes: set})
		seq = append(seq, s...)
	}
	der, _ := asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSequence, IsCompound: true, Bytes: seq})
	return der
}

func one(oid asn1.ObjectIdentifier, tag int, v string) []attr { return []attr{{oid, tag, v}} }

// nameCases are subjects with the string Java 17's X500Principal.getName()
// gives for them (checked against Java by TestNameMatchesJava).
var nameCases = []struct {
	name string
	rdns [][]attr
	want string
}{
	{"empty", nil, ""},
	{"go's order reversed", [][]attr{one(oidO, tagPrintableString, "test"), one(oidOU, tagPrintableString, "hutch"), one(oidCN, tagUTF8String, "client")}, "CN=client,OU=hutch,O=test"},
	{"country first", [][]attr{one(oidC, tagPrintableString, "NZ"), one(oidCN, tagPrintableString, "x")}, "CN=x,C=NZ"},
	{"specials escaped anywhere", [][]attr{one(oidCN, tagUTF8String, `a,b+c=d#e;f<g>h"i\j`)}, `CN=a\,b\+c\=d\#e\;f\<g\>h\"i\\j`},
	{"leading and trailing spaces", [][]attr{one(oidCN, tagUTF8String, "  x y \r")}, `CN=\ \ x y\ \` + "\r"},
	{"leading hash", [][]attr{one(oidCN, tagUTF8String, "#1")}, `CN=\#1`},
	{"NUL", [][]attr{one(oidCN, tagUTF8String, "a\x00b")}, `CN=a\00b`},
	{"non-ASCII kept", [][]attr{one(oidCN, tagUTF8String, "Zoë ☃ 😀")}, "CN=Zoë ☃ 😀"},
	{"emailAddress as OID and hex", [][]attr{one(oidCN, tagUTF8String, "c"), one(oidEmail, tagIA5String, "a@b")}, "1.2.840.113549.1.9.1=#1603614062,CN=c"},
	{"serialNumber as OID and hex", [][]attr{one(oidSerial, tagPrintableString, "42")}, "2.5.4.5=#13023432"},
	{"title as OID", [][]attr{one(oidTitle, tagUTF8String, "boss")}, "2.5.4.12=#0c04626f7373"},
	{"DC, UID and STREET keywords", [][]attr{one(oidDC, tagIA5String, "org"), one(oidUID, tagUTF8String, "u1"), one(oidStreet, tagUTF8String, "1 Main St")}, "STREET=1 Main St,UID=u1,DC=org"},
	{"multi-valued RDN in encoded order", [][]attr{{{oidOU, tagUTF8String, "b"}, {oidCN, tagUTF8String, "a"}}}, "OU=b+CN=a"},
	{"non-string value as hex", [][]attr{one(oidCN, asn1.TagInteger, "\x05")}, "CN=#020105"},
	{"BMPString read as UTF-8", [][]attr{one(oidCN, tagBMPString, "\x00a\x00b")}, `CN=\00a\00b`},
	{"T61String read as UTF-8", [][]attr{one(oidCN, tagT61String, "caf\xe9")}, "CN=caf\ufffd"},
	{"malformed UTF-8", [][]attr{one(oidCN, tagUTF8String, "a\xe2\x82b\xff")}, "CN=a\ufffdb\ufffd"},
}

func TestName(t *testing.T) {
	for _, tt := range nameCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Name(encodeName(t, tt.rdns...))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("Name = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNameMalformed(t *testing.T) {
	for _, der := range [][]byte{nil, {0x30}, {0x30, 0x02, 0x05, 0x00}, {0x30, 0x02, 0x31, 0x00}, append(encodeName(t), 0)} {
		if got, err := Name(der); err == nil {
			t.Errorf("Name(%x) = %q, want an error", der, got)
		}
	}
}

var validCases = []struct {
	s    string
	want bool
}{
	{"", true},
	{"CN=client,OU=hutch,O=test", true},
	{"cn = client ; o=test", true},
	{"CN=a\\,b", true},
	{"CN=a,b", false},
	{"CN=\"a,b\"", true},
	{"CN=a+OU=b", true},
	{"CN=a+", false},
	{"CN=a,", false},
	{"CN", false},
	{"FOO=a", false},
	{"OID.2.5.4.3=a", true},
	{"2.5.4.3=a", true},
	{"3.5=a", false},
	{"1.40=a", false},
	{"2.999=a", true},
	{"CN=#0c0161", true},
	{"CN=#0c01", false},
	{"CN=#0c016", false},
	{"CN=#zz", false},
	{"CN=", true},
	{"CN=a\\", false},
	{"CN=a\\q", false},
	{"CN=a\\41", true},
	{"CN=a\\4", false},
	{"CN=a<b", false},
	{"CN=a=b", true},
	{"CN=\"a\" x", false},
	{"CN=\"a", false},
	{"EMAILADDRESS=a@b,SERIALNUMBER=1,T=x,DNQ=y", true},
	{"1.2.840.113549.1.9.1=#1603614062,CN=c", true},
	// Java counts every backslash of the RDN, not just the run before the
	// comma, so this comma separates and leaves an empty RDN.
	{`CN=0\"0\\\,`, false},
	{`CN=a\\\,b`, true},
}

func TestValid(t *testing.T) {
	for _, tt := range validCases {
		if got := Valid(tt.s); got != tt.want {
			t.Errorf("Valid(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

// TestNameRoundTripsThroughValid: what Name writes for ordinary names,
// Java accepts back. Not always: Java escapes a trailing carriage return
// that its parser then refuses (the Java comparison asks it).
func TestNameRoundTripsThroughValid(t *testing.T) {
	for _, tt := range nameCases {
		if !Valid(tt.want) && !strings.Contains(tt.want, "\\\r") {
			t.Errorf("Valid(%q) = false for Name's own output (%s)", tt.want, tt.name)
		}
	}
}

// TestNameMatchesJava runs the cases and a few hundred random names and
// strings through Java's X500Principal and compares every answer.
func TestNameMatchesJava(t *testing.T) {
	ask := javaX500(t)
	rng := rand.New(rand.NewPCG(1, 2))
	var ders [][]byte
	for _, tt := range nameCases {
		ders = append(ders, encodeName(t, tt.rdns...))
	}
	for range 300 {
		ders = append(ders, encodeName(t, randomRDNs(rng)...))
	}
	strs := make([]string, 0, 700)
	for _, tt := range validCases {
		strs = append(strs, tt.s)
	}
	for _, tt := range nameCases {
		strs = append(strs, tt.want)
	}
	for range 600 {
		strs = append(strs, randomDN(rng))
	}
	var in strings.Builder
	for _, der := range ders {
		fmt.Fprintf(&in, "N %x\n", der)
	}
	for _, s := range strs {
		fmt.Fprintf(&in, "V %s\n", base64.StdEncoding.EncodeToString([]byte(s)))
	}
	answers := ask(in.String())
	if len(answers) != len(ders)+len(strs) {
		t.Fatalf("java answered %d lines for %d questions", len(answers), len(ders)+len(strs))
	}
	for i, der := range ders {
		want, err := base64.StdEncoding.DecodeString(answers[i])
		if err != nil {
			t.Fatalf("java on %x: %s", der, answers[i])
		}
		if got, err := Name(der); err != nil || got != string(want) {
			t.Errorf("Name(%x) = %q, %v; Java %q", der, got, err, want)
		}
	}
	for i, s := range strs {
		want := answers[len(ders)+i] == "true"
		if got := Valid(s); got != want {
			t.Errorf("Valid(%q) = %v; Java %v", s, got, want)
		}
	}
}

func randomRDNs(rng *rand.Rand) [][]attr {
	oids := []asn1.ObjectIdentifier{oidCN, oidO, oidOU, oidC, oidDC, oidUID, oidEmail, oidSerial, oidStreet}
	tags := []int{tagUTF8String, tagPrintableString, tagIA5String, tagT61String}
	rdns := make([][]attr, 1+rng.IntN(4))
	for i := range rdns {
		rdn := make([]attr, 1+rng.IntN(2))
		for j := range rdn {
			rdn[j] = attr{oids[rng.IntN(len(oids))], tags[rng.IntN(len(tags))], randomText(rng, " ,=+<>#;\"\\\r\x00aZ9é☃-_@.")}
		}
		rdns[i] = rdn
	}
	return rdns
}

func randomText(rng *rand.Rand, alphabet string) string {
	rs := []rune(alphabet)
	b := make([]rune, rng.IntN(8))
	for i := range b {
		b[i] = rs[rng.IntN(len(rs))]
	}
	return string(b)
}

// randomDN glues pieces that exercise Java's parser.
func randomDN(rng *rand.Rand) string {
	pieces := []string{"CN", "cn", "OU", "O", "oid.2.5.4.3", "2.5.4.3", "1.2", "3.1", "FOO", "=", "=", ",", ";", "+", "\"", "\\", "\\,", "\\\\", " ", "#", "#0c0161", "a", "b c", "\\41", "\\4", "<", "\n", "é"}
	var b strings.Builder
	for range 1 + rng.IntN(9) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

// javaX500 compiles testdata/X500Check.java and returns a function that
// feeds it lines and returns its answers.
func javaX500(tb testing.TB) func(string) []string {
	tb.Helper()
	for _, tool := range []string{"java", "javac"} {
		if _, err := exec.LookPath(tool); err != nil {
			realzk.Unavailable(tb, tool)
		}
	}
	dir := tb.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	tb.Cleanup(cancel)
	if out, err := exec.CommandContext(ctx, "javac", "-d", dir, "testdata/X500Check.java").CombinedOutput(); err != nil {
		tb.Fatalf("javac: %v\n%s", err, out)
	}
	return func(in string) []string {
		tb.Helper()
		cmd := exec.CommandContext(ctx, "java", "-cp", dir, "X500Check")
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.Output()
		if err != nil {
			tb.Fatalf("java: %v", err)
		}
		var lines []string
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		return lines
	}
}
