package cli

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/hutchzk/hutch/wire"
)

// Java's \s is [ \t\n\x0B\f\r]; Go's lacks \x0B, so the classes are spelt
// out. A token is a run of non-space characters not starting with a quote,
// or a double- or single-quoted string (ZooKeeperMain.ARGS_PATTERN).
var (
	argsPattern   = regexp.MustCompile(`[ \t\n\x0B\f\r]*([^"' \t\n\x0B\f\r][^ \t\n\x0B\f\r]*|"[^"]*"|'[^']*')[ \t\n\x0B\f\r]*`)
	quotedPattern = regexp.MustCompile(`^(?:'.*'|".*")$`)
)

// splitLine breaks a command line into words as zkCli does: a quoted word
// loses its surrounding quotes, and a quote that opens no complete quoted
// word is skipped.
func splitLine(line string) []string {
	var args []string
	for _, m := range argsPattern.FindAllStringSubmatch(line, -1) {
		v := m[1]
		if quotedPattern.MatchString(v) && len(v) >= 2 {
			v = v[1 : len(v)-1]
		}
		args = append(args, v)
	}
	return args
}

// cmdLine is a command's words after option parsing, as commons-cli's
// CommandLine: args holds the command name and its non-option words.
type cmdLine struct {
	args   []string
	values map[byte]string // option letter → its value ("" for a flag)
}

func (c *cmdLine) has(opt byte) bool {
	_, ok := c.values[opt]
	return ok
}

func (c *cmdLine) value(opt byte) string { return c.values[opt] }

// parseError is a commons-cli ParseException; zkCli prints it with its
// Java class name (CliParseException wraps the exception itself).
type parseError struct {
	class string // UnrecognizedOptionException, MissingArgumentException
	msg   string
}

func (e *parseError) Error() string { return "org.apache.commons.cli." + e.class + ": " + e.msg }

// parseOptions parses words with commons-cli 1.5's DefaultParser rules for
// short options only, as zkCli's commands declare them. spec lists the
// option letters, each followed by ':' when it takes a value ("sv:").
// Options may come anywhere, "--" ends them, letters may be bundled
// ("-sw"), a value may be attached ("-v3", "-v=3") or follow, and a
// negative number is a value, not an option.
func parseOptions(spec string, words []string) (*cmdLine, error) {
	return parseGroupOptions(spec, nil, words)
}

// optionGroup is a commons-cli OptionGroup: at most one of its options
// may be given (AlreadySelectedException), and a required group needs
// one (MissingOptionException, which names the group as desc).
type optionGroup struct {
	letters  string
	required bool
	desc     string // OptionGroup.toString: "[-n num soft quota, -b bytes soft quota]"
}

// parseGroupOptions is parseOptions for a command whose options form a
// group.
func parseGroupOptions(spec string, group *optionGroup, words []string) (*cmdLine, error) {
	known := map[byte]bool{} // letter → takes a value
	for i := 0; i < len(spec); i++ {
		known[spec[i]] = i+1 < len(spec) && spec[i+1] == ':'
		if known[spec[i]] {
			i++
		}
	}
	cl := &cmdLine{values: map[byte]string{}}
	var waiting byte  // option still needing its value, or 0
	var selected byte // the group's option given, or 0
	skip := false
	addOption := func(opt byte) error {
		if waiting != 0 {
			return missingArgument(waiting)
		}
		if group != nil && strings.IndexByte(group.letters, opt) >= 0 {
			if selected != 0 && selected != opt {
				return &parseError{"AlreadySelectedException", "The option '" + string(opt) +
					"' was specified but an option from this group has already been selected: '" + string(selected) + "'"}
			}
			selected = opt
		}
		if _, dup := cl.values[opt]; !dup {
			cl.values[opt] = ""
		}
		if known[opt] {
			waiting = opt
		}
		return nil
	}
	setValue := func(opt byte, v string) {
		if cl.values[opt] == "" {
			cl.values[opt] = v
		}
		waiting = 0
	}
	unknown := func(tok string) error {
		if strings.HasPrefix(tok, "-") && len(tok) > 1 {
			return &parseError{"UnrecognizedOptionException", "Unrecognized option: " + tok}
		}
		cl.args = append(cl.args, tok)
		return nil
	}
	isOption := func(tok string) bool {
		if !strings.HasPrefix(tok, "-") || len(tok) == 1 {
			return false
		}
		name := tok[1:]
		if i := strings.IndexByte(name, '='); i >= 0 {
			name = name[:i]
		}
		_, ok := known[firstByte(name)]
		return name != "" && ok
	}
	for _, tok := range words {
		switch {
		case skip:
			cl.args = append(cl.args, tok)
		case tok == "--":
			skip = true
		case waiting != 0 && (!isOption(tok) || isNegativeNumber(tok)):
			setValue(waiting, stripQuotes(tok))
		case strings.HasPrefix(tok, "--"):
			if err := unknown(tok); err != nil {
				return nil, err
			}
		case strings.HasPrefix(tok, "-") && tok != "-":
			if err := shortOption(tok, known, addOption, setValue, unknown); err != nil {
				return nil, err
			}
		default:
			cl.args = append(cl.args, tok)
		}
	}
	if waiting != 0 {
		return nil, missingArgument(waiting)
	}
	if group != nil && group.required && selected == 0 {
		return nil, &parseError{"MissingOptionException", "Missing required option: " + group.desc}
	}
	return cl, nil
}

// shortOption handles a token of one dash: "-s", "-sw", "-v3", "-v=3".
func shortOption(tok string, known map[byte]bool, add func(byte) error, set func(byte, string), unknown func(string) error) error {
	t := tok[1:]
	if eq := strings.IndexByte(t, '='); eq >= 0 {
		name, v := t[:eq], t[eq+1:]
		if takes, ok := known[firstByte(name)]; len(name) == 1 && ok && takes {
			if err := add(name[0]); err != nil {
				return err
			}
			set(name[0], v)
			return nil
		}
		return unknown(tok)
	}
	if len(t) == 1 {
		if _, ok := known[t[0]]; ok {
			return add(t[0])
		}
		return unknown(tok)
	}
	// Bundled letters; the first that takes a value takes the rest.
	for i := 0; i < len(t); i++ {
		takes, ok := known[t[i]]
		if !ok {
			return unknown(tok)
		}
		if err := add(t[i]); err != nil {
			return err
		}
		if takes && i+1 < len(t) {
			set(t[i], t[i+1:])
			return nil
		}
	}
	return nil
}

func firstByte(s string) byte {
	if s == "" {
		return 0
	}
	return s[0]
}

func missingArgument(opt byte) error {
	return &parseError{"MissingArgumentException", "Missing argument for option: " + string(opt)}
}

// isNegativeNumber is commons-cli's test, Double.parseDouble succeeding.
func isNegativeNumber(tok string) bool {
	_, err := strconv.ParseFloat(tok, 64)
	return err == nil
}

// stripQuotes removes one pair of surrounding double quotes from an
// option's value, as commons-cli does when no other quote is inside.
func stripQuotes(s string) string {
	if len(s) > 1 && s[0] == '"' && s[len(s)-1] == '"' && !strings.Contains(s[1:len(s)-1], `"`) {
		return s[1 : len(s)-1]
	}
	return s
}

// javaSplit is Java's String.split on a one-character separator: without
// a match the whole string, else the pieces with trailing empty ones
// dropped.
func javaSplit(s, sep string) []string {
	parts := strings.Split(s, sep)
	if len(parts) == 1 {
		return parts
	}
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// parseACL reads zkCli's ACL syntax, scheme:id:perms[,...], as its
// AclParser: an entry without two colons is reported on warn and skipped,
// and so is each unknown permission letter.
func parseACL(s string, warn func(string)) []wire.ACL {
	acl := []wire.ACL{}
	for _, a := range javaSplit(s, ",") {
		first, last := strings.IndexByte(a, ':'), strings.LastIndexByte(a, ':')
		if first < 0 || first == last {
			warn(a + " does not have the form scheme:id:perm")
			continue
		}
		var perms int32
		for _, c := range a[last+1:] {
			switch c {
			case 'r':
				perms |= wire.PermRead
			case 'w':
				perms |= wire.PermWrite
			case 'c':
				perms |= wire.PermCreate
			case 'd':
				perms |= wire.PermDelete
			case 'a':
				perms |= wire.PermAdmin
			default:
				warn("Unknown perm type: " + string(c))
			}
		}
		acl = append(acl, wire.ACL{Perms: perms, ID: wire.ID{Scheme: a[:first], ID: a[first+1 : last]}})
	}
	return acl
}
