package tree

import (
	"reflect"
	"testing"
	"unicode"

	"github.com/hutchzk/hutch/wire"
)

func TestDigestID(t *testing.T) {
	// Expected values computed independently: user + ":" + base64(sha1(input)).
	for in, want := range map[string]string{
		"user:pass":    "user:smGaoVKd/cQkjm7b88GyorAUz20=",
		"super:secret": "super:lK75jTNcA+U9vtVEw5vB51mj/w4=",
		"a:b:c":        "a:cLzgnoJ6mP5qz3w+mwvPE2vDgu0=",
		"nocolon":      "nocolon:Ra+cHr2ZoHvBjtNArFGNGlVie4g=",
	} {
		if got := DigestID(in); got != want {
			t.Errorf("DigestID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFixupACL(t *testing.T) {
	w := func(perms int32) wire.ACL { return wire.ACL{Perms: perms, ID: wire.ID{Scheme: "world", ID: "anyone"}} }
	a := func(scheme, id string) wire.ACL {
		return wire.ACL{Perms: wire.PermAll, ID: wire.ID{Scheme: scheme, ID: id}}
	}
	authACL := wire.ACL{Perms: wire.PermRead, ID: wire.ID{Scheme: "auth", ID: ""}}
	cases := []struct {
		name string
		auth []wire.ID
		in   []wire.ACL
		want []wire.ACL
		err  error
	}{
		{"empty", nil, nil, nil, ErrInvalidACL},
		{"world anyone", nil, []wire.ACL{w(31)}, []wire.ACL{w(31)}, nil},
		{"duplicates dropped", nil, []wire.ACL{w(31), w(31), w(1)}, []wire.ACL{w(31), w(1)}, nil},
		{"world someone", nil, []wire.ACL{a("world", "someone")}, nil, ErrInvalidACL},
		{"unknown scheme", nil, []wire.ACL{a("sasl", "bob")}, nil, ErrInvalidACL},
		{"super scheme has no provider", nil, []wire.ACL{a("super", "")}, nil, ErrInvalidACL},
		{"digest ok", nil, []wire.ACL{a("digest", "u:h")}, []wire.ACL{a("digest", "u:h")}, nil},
		{"digest no colon", nil, []wire.ACL{a("digest", "u")}, nil, ErrInvalidACL},
		{"ip ok", nil, []wire.ACL{a("ip", "10.0.0.0/8")}, []wire.ACL{a("ip", "10.0.0.0/8")}, nil},
		{"ip bad", nil, []wire.ACL{a("ip", "10.0.0/8")}, nil, ErrInvalidACL},
		{"ip ipv6 refused", nil, []wire.ACL{a("ip", "::1")}, nil, ErrInvalidACL},
		{"auth without identity", nil, []wire.ACL{authACL}, nil, ErrInvalidACL},
		{"auth with only ip", []wire.ID{localIP}, []wire.ACL{authACL}, nil, ErrInvalidACL},
		{"auth with only super", []wire.ID{superID}, []wire.ACL{authACL}, nil, ErrInvalidACL},
		{"auth expands digest ids in order", []wire.ID{localIP, aliceID, superID, bobID}, []wire.ACL{authACL},
			[]wire.ACL{{Perms: wire.PermRead, ID: aliceID}, {Perms: wire.PermRead, ID: bobID}}, nil},
		{"one bad entry spoils all", nil, []wire.ACL{w(31), a("digest", "x")}, nil, ErrInvalidACL},
		{"x509 ok", nil, []wire.ACL{a("x509", "CN=client,OU=hutch,O=test")}, []wire.ACL{a("x509", "CN=client,OU=hutch,O=test")}, nil},
		{"x509 empty name ok", nil, []wire.ACL{a("x509", "")}, []wire.ACL{a("x509", "")}, nil},
		{"x509 not a name", nil, []wire.ACL{a("x509", "client")}, nil, ErrInvalidACL},
		{"auth expands x509 ids", []wire.ID{localIP, x509ID}, []wire.ACL{authACL}, []wire.ACL{{Perms: wire.PermRead, ID: x509ID}}, nil},
	}
	for _, c := range cases {
		got, err := fixupACL(c.auth, c.in, false)
		if err != c.err || (err == nil && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("%s: got %v, %v; want %v, %v", c.name, got, err, c.want, c.err)
		}
	}
}

func TestCheckACLX509(t *testing.T) {
	acl := []wire.ACL{{Perms: wire.PermRead, ID: x509ID}}
	for _, c := range []struct {
		name string
		auth []wire.ID
		want error
	}{
		{"same name", []wire.ID{localIP, x509ID}, nil},
		{"other name", []wire.ID{{Scheme: "x509", ID: "CN=other,OU=hutch,O=test"}}, ErrNoAuth},
		{"names compare as strings", []wire.ID{{Scheme: "x509", ID: "cn=client,ou=hutch,o=test"}}, ErrNoAuth},
		{"same text, other scheme", []wire.ID{{Scheme: "digest", ID: x509ID.ID}}, ErrNoAuth},
		{"no identity", nil, ErrNoAuth},
	} {
		if got := checkACL(acl, wire.PermRead, c.auth); got != c.want {
			t.Errorf("%s: checkACL = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestValidDigestID(t *testing.T) {
	for id, want := range map[string]bool{
		"u:h": true, ":h": true, "u:h:": true, "u:h::": true,
		"u": false, "u:": false, "u::": false, "": false, ":": false,
		"a:b:c": false, "::a": false,
	} {
		if got := validDigestID(id); got != want {
			t.Errorf("validDigestID(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestIPMatching(t *testing.T) {
	cases := []struct {
		remote, acl string
		want        bool
	}{
		{"10.1.2.3", "10.1.2.3", true},
		{"10.1.2.3", "10.1.2.4", false},
		{"10.1.2.3", "10.0.0.0/8", true},
		{"11.1.2.3", "10.0.0.0/8", false},
		{"10.1.2.3", "10.1.2.0/24", true},
		{"10.1.3.3", "10.1.2.0/23", true},
		{"10.1.4.3", "10.1.2.0/23", false},
		{"1.2.3.4", "0.0.0.0/0", true},
		{"10.1.2.3", "10.1.2.3/32", true},
		{"10.1.2.3", "10.1.2.3/33", false},
		{"10.1.2.3", "10.1.2.3/-1", false},
		{"10.1.2.3", "010.1.2.3", true}, // Java parseInt: leading zeros are decimal
		{"10.1.2.3", "+10.1.2.3", true},
		{"10.1.2.3", "10.1.2.3/+8", true},
		{"10.1.2.3", "10.1.2", false},
		{"10.1.2.3", "10.1.2.3.4", false},
		{"10.1.2.3", "10.1.2.256", false},
		{"::1", "0.0.0.0/0", false},    // IPv6 never matches
		{"10.1.2.3", "１0.1.2.3", true}, // fullwidth digit, as Character.digit
	}
	for _, c := range cases {
		if got := ipMatches(c.remote, c.acl); got != c.want {
			t.Errorf("ipMatches(%q, %q) = %v, want %v", c.remote, c.acl, got, c.want)
		}
	}
	for id, want := range map[string]bool{
		"10.0.0.1": true, "10.0.0.0/8": true, "10.0.0.0/0": true, "10.0.0.0/32": true,
		"10.0.0.0/33": false, "10.0.0.0/": false, "10.0.0": false, "a.b.c.d": false,
		"10.0.0.1/8/9": false, "": false, "1.2.3.-0": true,
	} {
		if got := validIPACL(id); got != want {
			t.Errorf("validIPACL(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestJavaParseInt(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "-0": 0, "+7": 7, "2147483647": 2147483647, "-2147483648": -2147483648, "٣": 3} {
		if v, ok := javaParseInt(s); !ok || v != want {
			t.Errorf("javaParseInt(%q) = %d, %v", s, v, ok)
		}
	}
	for _, s := range []string{"", "+", "-", "2147483648", "-2147483649", "1a", " 1", "99999999999999999999"} {
		if _, ok := javaParseInt(s); ok {
			t.Errorf("javaParseInt(%q) accepted", s)
		}
	}
	// decimalDigit relies on every Nd range being whole blocks of ten.
	for _, r := range unicode.Nd.R16 {
		if r.Stride != 1 || (r.Hi-r.Lo+1)%10 != 0 {
			t.Fatalf("Nd range %+v is not whole blocks", r)
		}
	}
	for _, r := range unicode.Nd.R32 {
		if r.Stride != 1 || (r.Hi-r.Lo+1)%10 != 0 {
			t.Fatalf("Nd range %+v is not whole blocks", r)
		}
	}
}

func TestRedactDigest(t *testing.T) {
	for in, want := range map[string]string{
		"user:hash":           "user:x",
		"user:h:more":         "user:x",
		":hash":               ":x",
		"nocolon":             "nocolon",
		"a:b\nc":              "a:x\nc",
		"a:b\r\nc:d":          "a:x\r\nc:x",
		"a:b\u2028c:d\u0085e": "a:x\u2028c:x\u0085e",
	} {
		if got := redactDigest(in); got != want {
			t.Errorf("redactDigest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestACLChecksOnOps(t *testing.T) {
	h := newHarness(t)
	h.auth = []wire.ID{aliceID, localIP}
	h.createACL("/alice", 0, []wire.ACL{
		{Perms: wire.PermAll, ID: wire.ID{Scheme: "auth"}},
		{Perms: wire.PermRead, ID: wire.ID{Scheme: "ip", ID: "10.0.0.0/8"}},
	})
	acl, _, err := h.tr.GetACL("/alice", h.auth)
	if err != nil || !reflect.DeepEqual(acl, []wire.ACL{
		{Perms: wire.PermAll, ID: aliceID},
		{Perms: wire.PermRead, ID: wire.ID{Scheme: "ip", ID: "10.0.0.0/8"}},
	}) {
		t.Fatalf("stored acl = %v, %v", acl, err)
	}
	cases := []struct {
		name string
		auth []wire.ID
		read error
		set  error
	}{
		{"owner", []wire.ID{aliceID}, nil, nil},
		{"other user", []wire.ID{bobID, remoteIP}, ErrNoAuth, ErrNoAuth},
		{"nobody", nil, ErrNoAuth, ErrNoAuth},
		{"ip in range reads only", []wire.ID{{Scheme: "ip", ID: "10.200.0.1"}}, nil, ErrNoAuth},
		{"digest compared verbatim", []wire.ID{{Scheme: "digest", ID: "alice:x"}}, ErrNoAuth, ErrNoAuth},
		{"scheme must match", []wire.ID{{Scheme: "ip", ID: aliceID.ID}}, ErrNoAuth, ErrNoAuth},
		{"super", []wire.ID{superID}, nil, nil},
	}
	for _, c := range cases {
		if _, _, err := h.tr.GetData("/alice", c.auth); err != c.read {
			t.Errorf("%s: GetData = %v, want %v", c.name, err, c.read)
		}
		if _, _, err := h.tr.GetChildren("/alice", c.auth); err != c.read {
			t.Errorf("%s: GetChildren = %v, want %v", c.name, err, c.read)
		}
		if _, err := h.tr.AllChildrenNumber("/alice", c.auth); err != c.read {
			t.Errorf("%s: AllChildrenNumber = %v, want %v", c.name, err, c.read)
		}
		if _, err := h.tr.ExistsACL("/alice", c.auth); err != c.read {
			t.Errorf("%s: ExistsACL = %v, want %v", c.name, err, c.read)
		}
		if _, err := h.tr.Exists("/alice"); err != nil {
			t.Errorf("%s: Exists = %v", c.name, err)
		}
		h.auth = c.auth
		if r := h.apply(wire.OpSetData, &wire.SetDataRequest{Path: "/alice", Version: -1}); r.Err != c.set {
			t.Errorf("%s: setData = %v, want %v", c.name, r.Err, c.set)
		}
	}
}

func TestGetACLRedaction(t *testing.T) {
	h := newHarness(t)
	stored := []wire.ACL{
		{Perms: wire.PermRead, ID: wire.ID{Scheme: "world", ID: "anyone"}},
		{Perms: wire.PermAdmin, ID: aliceID},
		{Perms: wire.PermWrite, ID: wire.ID{Scheme: "digest", ID: "carol:abc"}},
		{Perms: wire.PermAdmin, ID: wire.ID{Scheme: "ip", ID: "10.0.0.1"}},
	}
	h.createACL("/n", 0, stored)
	redacted := []wire.ACL{stored[0],
		{Perms: wire.PermAdmin, ID: wire.ID{Scheme: "digest", ID: "alice:x"}},
		{Perms: wire.PermWrite, ID: wire.ID{Scheme: "digest", ID: "carol:x"}},
		stored[3]}
	for _, c := range []struct {
		name string
		auth []wire.ID
		want []wire.ACL
	}{
		{"reader sees redacted", nil, redacted},
		{"admin sees all", []wire.ID{aliceID}, stored},
		{"ip admin sees all", []wire.ID{{Scheme: "ip", ID: "10.0.0.1"}}, stored},
	} {
		got, st, err := h.tr.GetACL("/n", c.auth)
		if err != nil || !reflect.DeepEqual(got, c.want) || st.Czxid != 1 {
			t.Errorf("%s: %v %+v %v", c.name, got, st, err)
		}
	}
	// Neither READ nor ADMIN: NoAuth. ADMIN only: allowed.
	h.createACL("/w", 0, []wire.ACL{{Perms: wire.PermWrite, ID: wire.ID{Scheme: "world", ID: "anyone"}}, {Perms: wire.PermAdmin, ID: bobID}})
	if _, _, err := h.tr.GetACL("/w", nil); err != ErrNoAuth {
		t.Errorf("no READ/ADMIN: %v", err)
	}
	if _, _, err := h.tr.GetACL("/w", []wire.ID{bobID}); err != nil {
		t.Errorf("ADMIN only: %v", err)
	}
	if _, _, err := h.tr.GetACL("/missing", nil); err != ErrNoNode {
		t.Errorf("missing: %v", err)
	}
	// The returned slice is a copy.
	got, _, _ := h.tr.GetACL("/n", []wire.ID{aliceID})
	got[0].Perms = 0
	if again, _, _ := h.tr.GetACL("/n", []wire.ID{aliceID}); again[0].Perms != wire.PermRead {
		t.Error("GetACL exposed internal state")
	}
}

// TestSASLScheme checks the sasl scheme as SASLAuthenticationProvider
// defines it, once registered: entries valid when the id is a Kerberos
// name, "auth" expanding to sasl ids, ids matching exactly or as "super".
func TestSASLScheme(t *testing.T) {
	bob := wire.ID{Scheme: "sasl", ID: "bob"}
	saslSuper := wire.ID{Scheme: "sasl", ID: "super"}
	acl := func(id string) wire.ACL { return wire.ACL{Perms: wire.PermAll, ID: wire.ID{Scheme: "sasl", ID: id}} }
	authACL := wire.ACL{Perms: wire.PermRead, ID: wire.ID{Scheme: "auth", ID: ""}}

	fixups := []struct {
		name    string
		enabled bool
		auth    []wire.ID
		in      []wire.ACL
		want    []wire.ACL
		err     error
	}{
		{"not registered", false, nil, []wire.ACL{acl("bob")}, nil, ErrInvalidACL},
		{"plain name", true, nil, []wire.ACL{acl("bob")}, []wire.ACL{acl("bob")}, nil},
		{"principal", true, nil, []wire.ACL{acl("zk/host@EXAMPLE.COM")}, []wire.ACL{acl("zk/host@EXAMPLE.COM")}, nil},
		{"slash without realm", true, nil, []wire.ACL{acl("a/b/c")}, []wire.ACL{acl("a/b/c")}, nil},
		{"empty", true, nil, []wire.ACL{acl("")}, []wire.ACL{acl("")}, nil},
		{"two realms", true, nil, []wire.ACL{acl("a@b@c")}, nil, ErrInvalidACL},
		{"two hosts", true, nil, []wire.ACL{acl("a/b/c@R")}, nil, ErrInvalidACL},
		{"auth expands sasl and digest ids", true, []wire.ID{localIP, bob, aliceID}, []wire.ACL{authACL},
			[]wire.ACL{{Perms: wire.PermRead, ID: bob}, {Perms: wire.PermRead, ID: aliceID}}, nil},
		{"auth with only a sasl id", true, []wire.ID{bob}, []wire.ACL{authACL}, []wire.ACL{{Perms: wire.PermRead, ID: bob}}, nil},
	}
	for _, c := range fixups {
		got, err := fixupACL(c.auth, c.in, c.enabled)
		if err != c.err || (err == nil && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("fixupACL %s: got %v, %v; want %v, %v", c.name, got, err, c.want, c.err)
		}
	}

	checks := []struct {
		name string
		acl  []wire.ACL
		auth []wire.ID
		err  error
	}{
		{"same user", []wire.ACL{acl("bob")}, []wire.ID{localIP, bob}, nil},
		{"other user", []wire.ACL{acl("alice")}, []wire.ID{bob}, ErrNoAuth},
		{"no sasl identity", []wire.ACL{acl("bob")}, []wire.ID{localIP, aliceID}, ErrNoAuth},
		{"case matters", []wire.ACL{acl("Bob")}, []wire.ID{bob}, ErrNoAuth},
		{"sasl super matches any sasl entry", []wire.ACL{acl("alice")}, []wire.ID{saslSuper}, nil},
		{"sasl super is no super elsewhere", []wire.ACL{{Perms: wire.PermAll, ID: aliceID}}, []wire.ID{saslSuper}, ErrNoAuth},
		{"digest id of the same name", []wire.ACL{acl("bob")}, []wire.ID{{Scheme: "digest", ID: "bob"}}, ErrNoAuth},
	}
	for _, c := range checks {
		if err := checkACL(c.acl, wire.PermRead, c.auth); err != c.err {
			t.Errorf("checkACL %s: %v, want %v", c.name, err, c.err)
		}
	}
}
