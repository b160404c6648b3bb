package membership

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestStateCapabilities(t *testing.T) {
	for _, tc := range []struct {
		s                                                  State
		name                                               string
		replicated, leads, orders, accepts, timers, quorum bool
	}{
		{Standalone, "standalone", false, false, true, true, true, false},
		{Leading, "leader", true, true, true, true, true, true},
		{Following, "follower", true, false, false, true, false, true},
		{Observing, "observer", true, false, false, true, false, false},
		{ReadOnly, "read-only", true, false, false, false, false, false},
	} {
		got := []bool{tc.s.Replicated(), tc.s.Leads(), tc.s.OrdersWrites(), tc.s.AcceptsWrites(), tc.s.RunsSessionTimers(), tc.s.CountsForQuorum()}
		want := []bool{tc.replicated, tc.leads, tc.orders, tc.accepts, tc.timers, tc.quorum}
		if tc.s.String() != tc.name || !slices.Equal(got, want) {
			t.Errorf("%v: %q %v, want %q %v", uint8(tc.s), tc.s.String(), got, tc.name, want)
		}
		if p, err := ParseState(tc.name); err != nil || p != tc.s {
			t.Errorf("ParseState(%q) = %v, %v", tc.name, p, err)
		}
		b, _ := tc.s.MarshalText()
		var back State
		if err := back.UnmarshalText(b); err != nil || back != tc.s {
			t.Errorf("text round trip of %v: %v, %v", tc.s, back, err)
		}
	}
	if tc := ReadOnly; !tc.IsReadOnly() || Following.IsReadOnly() {
		t.Error("IsReadOnly")
	}
	if _, err := ParseState("looking"); err == nil {
		t.Error("ParseState took an unknown name")
	}
}

func TestParseServer(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want Member
		err  error
	}{
		{"zk1:2888:3888", Member{ID: 7, Host: "zk1", QuorumPort: 2888, ElectionPort: 3888}, nil},
		{"[::1]:2889:3889:participant;2182", Member{ID: 7, Host: "::1", QuorumPort: 2889, ElectionPort: 3889, ClientHost: "0.0.0.0", ClientPort: 2182}, nil},
		{"zk3:2888:3888:OBSERVER;127.0.0.1:2183", Member{ID: 7, Host: "zk3", QuorumPort: 2888, ElectionPort: 3888, Role: Observer, ClientHost: "127.0.0.1", ClientPort: 2183}, nil},
		{"0.0.0.0:1234:2345:observer;0.0.0.0:3456", Member{ID: 7, Host: "0.0.0.0", QuorumPort: 1234, ElectionPort: 2345, Role: Observer, ClientHost: "0.0.0.0", ClientPort: 3456}, nil},
		{"a:1:2:", Member{ID: 7, Host: "a", QuorumPort: 1, ElectionPort: 2}, nil}, // Java's split drops the empty role
		{"a:1", Member{}, ErrInvalid},
		{"a:x:2", Member{}, ErrInvalid},
		{"a:1:99999", Member{}, ErrMalformed},
		{"a:5:5", Member{}, ErrInvalid},
		{"a:1:2:leader", Member{}, ErrInvalid},
		{"a:1:2;a:b:3", Member{}, ErrInvalid},
		{"a:1:2;x", Member{}, ErrInvalid},
		{"a:1:2|b:1:2", Member{}, ErrInvalid},
		{"[::1:1:2", Member{}, ErrInvalid},
		{"a:1:2;3;4", Member{}, ErrInvalid},
		{";", Member{}, ErrMalformed},
	} {
		got, err := ParseServer(7, tc.spec)
		if !errors.Is(err, tc.err) || (tc.err == nil && got != tc.want) {
			t.Errorf("ParseServer(%q) = %+v, %v; want %+v, %v", tc.spec, got, err, tc.want, tc.err)
		}
	}
}

func TestMemberString(t *testing.T) {
	m, err := ParseServer(100, "0.0.0.0:1234:2345:observer;0.0.0.0:3456")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.String(); got != "0.0.0.0:1234:2345:observer;0.0.0.0:3456" {
		t.Errorf("String = %q", got)
	}
	m, _ = ParseServer(2, "[::1]:1:2;3")
	if got := m.String(); got != "[::1]:1:2:participant;0.0.0.0:3" {
		t.Errorf("String = %q", got)
	}
	m.ClientPort = 0
	if got := m.String(); got != "[::1]:1:2:participant" {
		t.Errorf("without client: %q", got)
	}
}

func members(t *testing.T, specs ...string) []Member {
	t.Helper()
	var out []Member
	for _, s := range specs {
		k, v, _ := strings.Cut(s, "=")
		id, err := parseID(strings.TrimPrefix(k, "server."))
		if err != nil {
			t.Fatal(err)
		}
		m, err := ParseServer(id, v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func ids(c Config) []uint64 {
	var out []uint64
	for _, m := range c.Members {
		out = append(out, m.ID)
	}
	return out
}

// TestOrderAsZooKeeper checks the order of the server lines against what
// ZooKeeper 3.8 printed for the same changes (seen on Debian's 3.8.0).
func TestOrderAsZooKeeper(t *testing.T) {
	three := FromMembers(0x100000000, members(t, "server.1=127.0.0.1:1:2", "server.2=127.0.0.1:3:4", "server.3=127.0.0.1:5:6"))
	if got := ids(three); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("initial order %v", got)
	}
	if got := three.Text(); got != "server.1=127.0.0.1:1:2:participant\nserver.2=127.0.0.1:3:4:participant\nserver.3=127.0.0.1:5:6:participant\nversion=100000000" {
		t.Errorf("text %q", got)
	}
	observer := []byte("server.100=0.0.0.0:1234:2345:observer;0.0.0.0:3456")
	c, err := Incremental(three, observer, nil, false)
	if err != nil || !slices.Equal(ids(c), []uint64{1, 2, 3, 100}) {
		t.Errorf("three gaining 100: %v, %v", ids(c), err)
	}
	one, _ := Incremental(three, nil, []byte("2,3"), false)
	c, _ = Incremental(one, observer, nil, false)
	if !slices.Equal(ids(c), []uint64{100, 1}) {
		t.Errorf("one gaining 100: %v", ids(c))
	}
	two, _ := Incremental(three, nil, []byte("3"), false)
	if !slices.Equal(ids(two), []uint64{1, 2}) {
		t.Errorf("three losing 3: %v", ids(two))
	}
	c, _ = Incremental(two, []byte("server.4=127.0.0.1:7:8;9"), nil, false)
	if !slices.Equal(ids(c), []uint64{4, 1, 2}) {
		t.Errorf("two gaining 4: %v", ids(c))
	}
	many := make([]uint64, 0, 40)
	for id := uint64(1); id <= 40; id++ {
		many = append(many, id)
	}
	if got := parsedOrder(many, false); len(got) != 40 {
		t.Errorf("parsed order of 40 lost members: %v", got)
	}
}

func TestIncrementalAndReplaceErrors(t *testing.T) {
	base := FromMembers(1, members(t, "server.1=127.0.0.1:1:2", "server.2=127.0.0.1:3:4"))
	for _, tc := range []struct {
		joining, leaving []byte
		err              error
	}{
		{[]byte("some thing"), nil, ErrInvalid},
		{nil, []byte("abc"), ErrMalformed},
		{[]byte("server.x=127.0.0.1:1:2;3"), nil, ErrMalformed},
		{[]byte("server.7=127.0.0.1:1:2"), nil, ErrInvalid},
		{[]byte("server.7=10.1.1.1:1:2;3,server.8=10.1.1.1:1:5;6"), nil, ErrInvalid},
		{nil, []byte("9"), nil},
		{[]byte(""), []byte(""), nil},
		{[]byte("7=127.0.0.1:11:12;13"), nil, nil},
	} {
		_, err := Incremental(base, tc.joining, tc.leaving, false)
		if !errors.Is(err, tc.err) {
			t.Errorf("Incremental(%q, %q): %v, want %v", tc.joining, tc.leaving, err, tc.err)
		}
	}
	for _, tc := range []struct {
		in  string
		err error
	}{
		{"server.1=127.0.0.1:1:2;2181\n,server.2=127.0.0.1:3:4;2182\n", nil},
		{"server.1=127.0.0.1:1:2,foo=bar", ErrInvalid},
		{"server.1=127.0.0.1:1:2,group.1=1", ErrInvalid},
		{"server.x=127.0.0.1:1:2", ErrMalformed},
		{"server.1=127.0.0.1:1:2:observer", ErrMalformed},
		{"server.1=127.0.0.1:1:2,server.2=127.0.0.1:3:4:observer", ErrMalformed},
		{"server.1=127.0.0.1:1:2,version=zz", ErrMalformed},
	} {
		_, err := Replace([]byte(tc.in), true)
		if !errors.Is(err, tc.err) {
			t.Errorf("Replace(%q): %v, want %v", tc.in, err, tc.err)
		}
	}
	c, err := Replace([]byte("server.1=127.0.0.1:1:2;2181\n,server.2=127.0.0.1:3:4;2182\n"), true)
	if err != nil || c.Text() != "server.1=127.0.0.1:1:2:participant;0.0.0.0:2181\nserver.2=127.0.0.1:3:4:participant;0.0.0.0:2182\nversion=0" {
		t.Errorf("Replace: %q, %v", c.Text(), err)
	}
	if _, err := Replace([]byte("server.1=127.0.0.1:1:2"), false); err != nil {
		t.Errorf("one participant without standalone: %v", err)
	}
}

func TestCodecRoundTrip(t *testing.T) {
	c := FromMembers(0x200000001, members(t, "server.1=127.0.0.1:1:2;2181", "server.100=0.0.0.0:1234:2345:observer;0.0.0.0:3456", "server.3=[::1]:5:6"))
	b := AppendConfig([]byte{9}, c)
	got, rest, err := DecodeConfig(b[1:])
	if err != nil || len(rest) != 0 || !reflect.DeepEqual(got, c) {
		t.Fatalf("round trip: %+v, %q, %v; want %+v", got, rest, err, c)
	}
	for i := range len(b) - 1 {
		if _, _, err := DecodeConfig(b[1 : 1+i]); err == nil {
			t.Errorf("a truncation to %d bytes decoded", i)
		}
	}
}

func FuzzDecodeConfig(f *testing.F) {
	f.Add(AppendConfig(nil, FromMembers(5, []Member{{ID: 1, Host: "h", QuorumPort: 1, ElectionPort: 2, ClientHost: "c", ClientPort: 3}})))
	f.Add([]byte{0, 0})
	f.Add([]byte{2, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, rest, err := DecodeConfig(b)
		if err != nil {
			return
		}
		again := AppendConfig(nil, c)
		if got, _, err := DecodeConfig(again); err != nil || !reflect.DeepEqual(got, c) {
			t.Fatalf("re-encoding %+v decoded as %+v, %v", c, got, err)
		}
		_ = rest
	})
}
