package cli

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hutchzk/hutch/wire"
)

// TestSplitLine checks zkCli's ARGS_PATTERN word splitting.
func TestSplitLine(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string
	}{
		{"ls /", []string{"ls", "/"}},
		{"  set  /a\t'x y'  ", []string{"set", "/a", "x y"}},
		{`create /a "two words" world:anyone:r`, []string{"create", "/a", "two words", "world:anyone:r"}},
		{`set /a a"b c"`, []string{"set", "/a", `a"b`, `c"`}},
		{`set /a "unclosed`, []string{"set", "/a", "unclosed"}},
		{`get "" x`, []string{"get", "", "x"}},
		{"", nil},
		{"   ", nil},
	} {
		if got := splitLine(c.line); !slices.Equal(got, c.want) {
			t.Errorf("splitLine(%q) = %q, want %q", c.line, got, c.want)
		}
	}
}

// TestParseOptions checks the commons-cli DefaultParser rules zkCli's
// commands are parsed with, and its exception messages.
func TestParseOptions(t *testing.T) {
	for _, c := range []struct {
		spec   string
		words  []string
		args   []string
		values map[byte]string
		err    string
	}{
		{"sw", []string{"ls", "-s", "/"}, []string{"ls", "/"}, map[byte]string{'s': ""}, ""},
		{"sw", []string{"ls", "/", "-w"}, []string{"ls", "/"}, map[byte]string{'w': ""}, ""},
		{"sw", []string{"ls", "-sw", "/"}, []string{"ls", "/"}, map[byte]string{'s': "", 'w': ""}, ""},
		{"sv:", []string{"set", "-v", "3", "/a", "d"}, []string{"set", "/a", "d"}, map[byte]string{'v': "3"}, ""},
		{"sv:", []string{"set", "-v3", "/a", "d"}, []string{"set", "/a", "d"}, map[byte]string{'v': "3"}, ""},
		{"sv:", []string{"set", "-v=3", "/a", "d"}, []string{"set", "/a", "d"}, map[byte]string{'v': "3"}, ""},
		{"sv:", []string{"set", "-sv", "3", "/a"}, []string{"set", "/a"}, map[byte]string{'s': "", 'v': "3"}, ""},
		{"sv:", []string{"set", "-v", "-1", "/a"}, []string{"set", "/a"}, map[byte]string{'v': "-1"}, ""},
		{"sv:", []string{"set", "-v", `"7"`, "/a"}, []string{"set", "/a"}, map[byte]string{'v': "7"}, ""},
		{"sv:", []string{"set", "-v", "/a", "d"}, []string{"set", "d"}, map[byte]string{'v': "/a"}, ""},
		{"sv:", []string{"set", "--", "-s", "x"}, []string{"set", "-s", "x"}, map[byte]string{}, ""},
		{"sv:", []string{"set", "-", "x"}, []string{"set", "-", "x"}, map[byte]string{}, ""},
		{"sw", []string{"ls", "-x", "/"}, nil, nil, "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -x"},
		{"sw", []string{"ls", "-sx", "/"}, nil, nil, "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -sx"},
		{"sw", []string{"ls", "--s", "/"}, nil, nil, "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: --s"},
		{"sw", []string{"ls", "-s=1", "/"}, nil, nil, "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -s=1"},
		{"", []string{"create", "/a", "-5"}, nil, nil, "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -5"},
		{"sv:", []string{"set", "-v"}, nil, nil, "org.apache.commons.cli.MissingArgumentException: Missing argument for option: v"},
		{"sv:", []string{"set", "-v", "-s", "/a"}, nil, nil, "org.apache.commons.cli.MissingArgumentException: Missing argument for option: v"},
	} {
		cl, err := parseOptions(c.spec, c.words)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("parseOptions(%q, %q) error = %v, want %q", c.spec, c.words, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseOptions(%q, %q): %v", c.spec, c.words, err)
			continue
		}
		if !slices.Equal(cl.args, c.args) || len(cl.values) != len(c.values) {
			t.Errorf("parseOptions(%q, %q) = %q %q, want %q %q", c.spec, c.words, cl.args, cl.values, c.args, c.values)
			continue
		}
		for k, v := range c.values {
			if !cl.has(k) || cl.value(k) != v {
				t.Errorf("parseOptions(%q, %q): -%c = %q (%v), want %q", c.spec, c.words, k, cl.value(k), cl.has(k), v)
			}
		}
	}
}

// TestParseGroupOptions checks commons-cli's OptionGroup as setquota
// (required) and delquota declare it, with the messages zkCli prints.
func TestParseGroupOptions(t *testing.T) {
	const already = "org.apache.commons.cli.AlreadySelectedException: The option '%c' was specified but an option from this group has already been selected: '%c'"
	for _, c := range []struct {
		spec     string
		required bool
		words    []string
		err      string
	}{
		{"n:b:N:B:", true, []string{"setquota", "-n", "2", "/a"}, ""},
		{"n:b:N:B:", true, []string{"setquota", "-n", "2", "-n", "3", "/a"}, ""},
		{"n:b:N:B:", true, []string{"setquota", "-N", "5", "-B", "100", "/a"}, fmt.Sprintf(already, 'B', 'N')},
		{"n:b:N:B:", true, []string{"setquota", "/a"}, "org.apache.commons.cli.MissingOptionException: Missing required option: [-n num soft quota, -b bytes soft quota, -N num hard quota, -B bytes hard quota]"},
		// The group is checked as each option comes, the required group at the end.
		{"n:b:N:B:", true, []string{"setquota", "-n", "1", "-b", "-x"}, fmt.Sprintf(already, 'b', 'n')},
		{"n:b:N:B:", true, []string{"setquota", "-n"}, "org.apache.commons.cli.MissingArgumentException: Missing argument for option: n"},
		{"nbNB", false, []string{"delquota", "/a"}, ""},
		{"nbNB", false, []string{"delquota", "-bN", "/a"}, fmt.Sprintf(already, 'N', 'b')},
	} {
		_, err := parseGroupOptions(c.spec, quotaGroup(c.required), c.words)
		if got := fmt.Sprint(err); (c.err == "" && err != nil) || (c.err != "" && got != c.err) {
			t.Errorf("parseGroupOptions(%q, %q) = %v, want %q", c.spec, c.words, err, c.err)
		}
	}
}

// TestParseACL checks zkCli's AclParser, warnings included.
func TestParseACL(t *testing.T) {
	world := func(perms int32) wire.ACL { return wire.ACL{Perms: perms, ID: wire.ID{Scheme: "world", ID: "anyone"}} }
	for _, c := range []struct {
		in    string
		want  []wire.ACL
		warns []string
	}{
		{"world:anyone:cdrwa", []wire.ACL{world(wire.PermAll)}, nil},
		{"digest:u:h=:r,ip:10.0.0.1:wa", []wire.ACL{
			{Perms: wire.PermRead, ID: wire.ID{Scheme: "digest", ID: "u:h="}},
			{Perms: wire.PermWrite | wire.PermAdmin, ID: wire.ID{Scheme: "ip", ID: "10.0.0.1"}},
		}, nil},
		{"world:anyone:rxz", []wire.ACL{world(wire.PermRead)}, []string{"Unknown perm type: x", "Unknown perm type: z"}},
		{"world:anyone", []wire.ACL{}, []string{"world:anyone does not have the form scheme:id:perm"}},
		{",", []wire.ACL{}, nil},
		{"", []wire.ACL{}, []string{" does not have the form scheme:id:perm"}},
		{",world:anyone:r,,", []wire.ACL{world(wire.PermRead)}, []string{" does not have the form scheme:id:perm"}},
		{"world:anyone:", []wire.ACL{world(0)}, nil},
	} {
		var warns []string
		got := parseACL(c.in, func(m string) { warns = append(warns, m) })
		if !slices.Equal(got, c.want) || !slices.Equal(warns, c.warns) {
			t.Errorf("parseACL(%q) = %v, warnings %q; want %v, %q", c.in, got, warns, c.want, c.warns)
		}
	}
}

func TestJavaSplit(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"a,b", []string{"a", "b"}},
		{"a,,b,,", []string{"a", "", "b"}},
		{",a", []string{"", "a"}},
		{",,", []string{}},
		{"", []string{""}},
	} {
		if got := javaSplit(c.in, ","); !slices.Equal(got, c.want) {
			t.Errorf("javaSplit(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzSplitLine checks that no line breaks the word splitter and that a
// line of plain words splits on its spaces.
func FuzzSplitLine(f *testing.F) {
	for _, s := range []string{"ls /", `create /a "b c" 'd'`, `"`, `'"'"`, "\x0b\t a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		for _, w := range splitLine(line) {
			if len(w) > len(line) {
				t.Fatalf("word %q longer than line %q", w, line)
			}
		}
		if _, err := parseOptions("sv:R", splitLine(line)); err != nil {
			if _, ok := err.(*parseError); !ok {
				t.Fatalf("parseOptions error of another kind: %v", err)
			}
		}
	})
}
