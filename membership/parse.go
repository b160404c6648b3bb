package membership

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/hutchzk/hutch/javaprops"
)

// Parse errors, split as ZooKeeper's reconfig answers them.
var (
	// ErrInvalid is input ZooKeeper refuses with a ConfigException or
	// BadArgumentsException: a reconfig answers it BADARGUMENTS.
	ErrInvalid = errors.New("membership: invalid")
	// ErrMalformed is input on which ZooKeeper's parser fails with a Java
	// runtime exception (an id that is not a number, a port out of range,
	// observers without participants): a reconfig answers it
	// MARSHALLINGERROR, as ZooKeeper answers any unexpected exception.
	ErrMalformed = errors.New("membership: malformed")
)

// parseError says what is wrong with the input; errors.Is tells its kind.
type parseError struct {
	kind error
	msg  string
}

func (e *parseError) Error() string { return e.msg }
func (e *parseError) Unwrap() error { return e.kind }

func invalidf(format string, args ...any) error {
	return &parseError{kind: ErrInvalid, msg: fmt.Sprintf(format, args...)}
}

func malformedf(format string, args ...any) error {
	return &parseError{kind: ErrMalformed, msg: fmt.Sprintf(format, args...)}
}

// ParseServer decodes the value of a server.N line as ZooKeeper's
// QuorumServer does: host:quorumPort:electionPort[:participant|observer]
// and, after ';', an optional [clientHost:]clientPort (a bare port means
// 0.0.0.0). Several addresses separated by '|' (multiAddress) are refused,
// as ZooKeeper refuses them unless that feature is on. The host is kept as
// written and not resolved.
func ParseServer(id uint64, spec string) (Member, error) {
	m := Member{ID: id, Role: Participant}
	parts := javaSplit(spec, ";")
	if len(parts) == 0 {
		return m, malformedf("%q has no address", spec)
	}
	if len(parts) == 2 {
		cp, err := hostAndPort(parts[1])
		if err != nil {
			return m, err
		}
		if len(cp) > 2 || len(cp) == 0 {
			return m, invalidf("client part %q is not [host:]port", parts[1])
		}
		m.ClientHost = "0.0.0.0"
		if len(cp) == 2 {
			m.ClientHost = cp[0]
		}
		if m.ClientPort, err = parsePort("client port", cp[len(cp)-1]); err != nil {
			return m, err
		}
	}
	addrs := javaSplit(parts[0], "|")
	if len(addrs) > 1 {
		return m, invalidf("%q lists several addresses (multiAddress): hutch takes one address per server", parts[0])
	}
	hp, err := hostAndPort(parts[0])
	if err != nil {
		return m, err
	}
	if len(parts) > 2 || len(hp) < 3 || len(hp) > 4 {
		return m, invalidf("%q is not host:quorumPort:electionPort[:participant|observer][;[clientHost:]clientPort]", spec)
	}
	m.Host = hp[0]
	if m.QuorumPort, err = parsePort("quorum port", hp[1]); err != nil {
		return m, err
	}
	if m.ElectionPort, err = parsePort("election port", hp[2]); err != nil {
		return m, err
	}
	if m.QuorumPort == m.ElectionPort {
		return m, invalidf("quorum and election port are both %d: they must differ", m.QuorumPort)
	}
	if len(hp) == 4 {
		switch strings.ToLower(strings.TrimSpace(hp[3])) {
		case "participant":
		case "observer":
			m.Role = Observer
		default:
			return m, invalidf("role %q is neither participant nor observer", hp[3])
		}
	}
	return m, nil
}

// parsePort reads a port as Integer.parseInt and InetSocketAddress do: not
// a number is a ConfigException ("Address unresolved"), out of 0-65535 an
// IllegalArgumentException.
func parsePort(what, s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, invalidf("%s: %q is not a number", what, s)
	}
	if n < 0 || n > 65535 {
		return 0, malformedf("%s: port %d out of range 0 to 65535", what, n)
	}
	return int(n), nil
}

// hostAndPort splits "host:p:p" or "[v6]:p:p" as ConfigUtils.getHostAndPort.
func hostAndPort(s string) ([]string, error) {
	if !strings.HasPrefix(s, "[") {
		return javaSplit(s, ":"), nil
	}
	i := strings.Index(s, "]")
	switch {
	case i < 0:
		return nil, invalidf("%q starts with '[' but has no matching ']:'", s)
	case i+2 == len(s):
		return nil, invalidf("%q has no port after ']:'", s)
	case i+2 < len(s):
		return append([]string{s[1:i]}, javaSplit(s[i+2:], ":")...), nil
	}
	return []string{strings.NewReplacer("[", "", "]", "").Replace(s)}, nil
}

// javaSplit is Java's String.split on a literal separator: no match gives
// the string itself, and trailing empty strings are dropped.
func javaSplit(s, sep string) []string {
	if !strings.Contains(s, sep) {
		return []string{s}
	}
	parts := strings.Split(s, sep)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// splitTrimmed is ZooKeeper's StringUtils.split: Java's split, each part
// trimmed, empty parts dropped.
func splitTrimmed(s, sep string) []string {
	var out []string
	for _, p := range javaSplit(s, sep) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseID reads a server id as Long.parseLong: not a number is a runtime
// failure in ZooKeeper. hutch also refuses ids below 1, which ZooKeeper
// would take.
func parseID(s string) (uint64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, malformedf("server id %q is not a number", s)
	}
	if n <= 0 {
		return 0, invalidf("server id %d is not positive", n)
	}
	return uint64(n), nil
}

// FromMembers makes the configuration of members (in any order) as
// ZooKeeper holds one it has parsed: its first, from zoo.cfg.
func FromMembers(version int64, members []Member) Config {
	ids := make([]uint64, len(members))
	for i, m := range members {
		ids[i] = m.ID
	}
	slices.Sort(ids)
	return Config{Version: version, Members: byOrder(parsedOrder(ids, true), members)}
}

// byOrder returns the members in the order of ids.
func byOrder(ids []uint64, members []Member) []Member {
	out := make([]Member, 0, len(ids))
	for _, id := range ids {
		for _, m := range members {
			if m.ID == id {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// Incremental applies an incremental reconfig to prev as ZooKeeper's
// PrepRequestProcessor does: joining and leaving are the request's
// comma-separated lists (nil for a null string); each leaving id is
// removed, then each joiner (server.N=spec, which must name a client
// address unless anyClient) replaces any member of its id. A leaving id
// that is not a member is no error. The result has version 0: the caller
// sets it.
func Incremental(prev Config, joining, leaving []byte, anyClient bool) (Config, error) {
	var leavers []uint64
	if leaving != nil {
		for _, s := range splitTrimmed(string(leaving), ",") {
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return Config{}, malformedf("leaving server id %q is not a number", s)
			}
			leavers = append(leavers, uint64(id))
		}
	}
	next := make(map[uint64]Member, len(prev.Members))
	prevOrder := make([]uint64, 0, len(prev.Members))
	for _, m := range prev.Members {
		next[m.ID] = m
		prevOrder = append(prevOrder, m.ID)
	}
	for _, id := range leavers {
		delete(next, id)
	}
	var joiners []uint64
	if joining != nil {
		for _, j := range splitTrimmed(string(joining), ",") {
			parts := splitTrimmed(j, "=")
			if len(parts) != 2 {
				return Config{}, invalidf("wrong format of server string %q", j)
			}
			id, err := parseID(parts[0][strings.LastIndex(parts[0], ".")+1:])
			if err != nil {
				return Config{}, err
			}
			m, err := ParseServer(id, parts[1])
			if err != nil {
				return Config{}, err
			}
			if m.ClientPort == 0 && !anyClient {
				return Config{}, invalidf("wrong format of server string %q: each server needs a quorum, an election and a client port", j)
			}
			for _, o := range next {
				if o.ID != id {
					if err := checkAddressDuplicate(m, o); err != nil {
						return Config{}, err
					}
				}
			}
			next[id] = m
			joiners = append(joiners, id)
		}
	}
	members := make([]Member, 0, len(next))
	for _, m := range next {
		members = append(members, m)
	}
	return Config{Members: byOrder(incrementalOrder(prevOrder, leavers, joiners), members)}, nil
}

// checkAddressDuplicate refuses a joiner that reuses another member's
// address, as QuorumServer.checkAddressDuplicate: wildcard and loopback
// addresses are left out of the comparison, and so, since hutch does not
// resolve names here, are host names.
func checkAddressDuplicate(m, o Member) error {
	addrs := func(x Member) []string {
		var out []string
		add := func(host string, port int) {
			if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() && !ip.IsLoopback() && port != 0 {
				out = append(out, net.JoinHostPort(ip.String(), strconv.Itoa(port)))
			}
		}
		add(x.Host, x.QuorumPort)
		add(x.ClientHost, x.ClientPort)
		add(x.Host, x.ElectionPort)
		return out
	}
	theirs := addrs(o)
	for _, a := range addrs(m) {
		if slices.Contains(theirs, a) {
			return invalidf("%s of server.%d conflicts with server.%d", a, m.ID, o.ID)
		}
	}
	return nil
}

// Replace parses a non-incremental reconfig's new members as ZooKeeper
// does: commas become newlines, the text is read as Java properties, and
// only server.N keys and version may appear. hutch refuses hierarchical
// quorums (group and weight keys). standaloneEnabled is the leader's
// setting: without it, a configuration needs a participant. The result
// has version 0: the caller sets it.
func Replace(newMembers []byte, standaloneEnabled bool) (Config, error) {
	props, err := javaprops.Read(strings.NewReader(strings.ReplaceAll(string(newMembers), ",", "\n")))
	if err != nil {
		return Config{}, malformedf("new members: %v", err)
	}
	keys := make([]string, 0, len(props))
	values := make(map[string]string, len(props))
	for _, p := range props {
		if strings.HasPrefix(p.Key, "group") || strings.HasPrefix(p.Key, "weight") {
			return Config{}, invalidf("hierarchical quorums (%s) are not supported: hutch's Raft counts a plain majority", p.Key)
		}
		if !strings.HasPrefix(p.Key, "server.") && p.Key != "version" {
			return Config{}, invalidf("unrecognised parameter: %s", p.Key)
		}
		keys = append(keys, p.Key)
		values[p.Key] = p.Value // the last wins, as in java.util.Properties
	}
	m := &javaHashMap{}
	byID := map[uint64]Member{}
	participants, observers := 0, 0
	for _, k := range propertiesOrder(keys) {
		if k == "version" {
			if _, err := strconv.ParseInt(values[k], 16, 64); err != nil {
				return Config{}, malformedf("version %q is not a hexadecimal number", values[k])
			}
			continue
		}
		id, err := parseID(k[len("server."):])
		if err != nil {
			return Config{}, err
		}
		s, err := ParseServer(id, values[k])
		if err != nil {
			return Config{}, err
		}
		if old, dup := byID[id]; dup {
			if old.Votes() {
				participants--
			} else {
				observers--
			}
		}
		if s.Votes() {
			participants++
		} else {
			observers++
		}
		byID[id] = s
		m.put(id)
	}
	switch {
	case participants == 0 && !standaloneEnabled:
		return Config{}, malformedf("standaloneEnabled is false, so the number of participants must be above 0")
	case participants == 0 && observers > 0:
		return Config{}, malformedf("observers without participants are an invalid configuration")
	case participants == 1 && standaloneEnabled && observers > 0:
		return Config{}, malformedf("observers without a quorum are an invalid configuration")
	}
	members := make([]Member, 0, len(byID))
	for _, s := range byID {
		members = append(members, s)
	}
	return Config{Members: byOrder(m.order(), members)}, nil
}
