package zoocfg

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Role is a member's part in the ensemble: a participant votes, an
// observer only follows.
type Role string

// The roles a server.N line can name.
const (
	Participant Role = "participant"
	Observer    Role = "observer"
)

// Server is one server.N line: server.N=host:quorumPort:electionPort[:role][;[clientHost:]clientPort].
type Server struct {
	ID uint64
	// Host is the member's host name or address, without brackets.
	Host string
	// QuorumPort is where followers reach the leader in ZooKeeper; hutch
	// runs Raft there.
	QuorumPort int
	// ElectionPort is ZooKeeper's leader-election port. Raft elects over
	// the quorum port, so hutch does not use it.
	ElectionPort int
	Role         Role
	// ClientAddr is the client address from the part after ';'
	// ("host:port"; a bare port means 0.0.0.0), or "" when there is none.
	ClientAddr string
	// Line is where the server.N line is, for error messages.
	Line int
}

// QuorumAddr is host:quorumPort, the address hutch's Raft peers dial.
func (s Server) QuorumAddr() string {
	return net.JoinHostPort(s.Host, strconv.Itoa(s.QuorumPort))
}

// parseServerID decodes N of a server.N key (Long.parseLong in ZooKeeper).
func parseServerID(key string) (uint64, error) {
	n, err := strconv.ParseInt(strings.TrimPrefix(key, "server."), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q does not end in a positive server id", key)
	}
	return uint64(n), nil
}

// parseServer decodes a server line's value as QuorumServer does.
func parseServer(id uint64, value string) (Server, error) {
	s := Server{ID: id, Role: Participant}
	parts := splitDropTrailingEmpty(value, ";")
	if len(parts) == 0 || len(parts) > 2 {
		return s, fmt.Errorf("%q is not host:quorumPort:electionPort[:participant|observer][;[clientHost:]clientPort]", value)
	}
	if strings.Contains(parts[0], "|") {
		return s, fmt.Errorf("%q lists several addresses (multiAddress): hutch takes one address per server", value)
	}
	hp, err := hostAndPorts(parts[0])
	if err != nil {
		return s, err
	}
	if len(hp) < 3 || len(hp) > 4 {
		return s, fmt.Errorf("%q is not host:quorumPort:electionPort[:participant|observer]", parts[0])
	}
	if hp[0] == "" {
		return s, fmt.Errorf("%q has no host", parts[0])
	}
	s.Host = hp[0]
	if s.QuorumPort, err = parsePort(hp[1]); err != nil {
		return s, fmt.Errorf("quorum port: %w", err)
	}
	if s.ElectionPort, err = parsePort(hp[2]); err != nil {
		return s, fmt.Errorf("election port: %w", err)
	}
	if s.QuorumPort == s.ElectionPort {
		return s, fmt.Errorf("quorum and election port are both %d: they must differ", s.QuorumPort)
	}
	if len(hp) == 4 {
		switch Role(strings.ToLower(strings.TrimSpace(hp[3]))) {
		case Participant:
		case Observer:
			s.Role = Observer
		default:
			return s, fmt.Errorf("role %q is neither participant nor observer", hp[3])
		}
	}
	if len(parts) == 2 {
		cp, err := hostAndPorts(parts[1])
		if err != nil {
			return s, err
		}
		host := "0.0.0.0"
		switch len(cp) {
		case 1:
		case 2:
			host = cp[0]
		default:
			return s, fmt.Errorf("client part %q is not [host:]port", parts[1])
		}
		port, err := parsePort(cp[len(cp)-1])
		if err != nil {
			return s, fmt.Errorf("client port: %w", err)
		}
		s.ClientAddr = net.JoinHostPort(host, strconv.Itoa(port))
	}
	return s, nil
}

// hostAndPorts splits "host:p:p" or "[v6]:p:p" as ConfigUtils.getHostAndPort does.
func hostAndPorts(s string) ([]string, error) {
	if !strings.HasPrefix(s, "[") {
		return splitDropTrailingEmpty(s, ":"), nil
	}
	end := strings.Index(s, "]")
	switch {
	case end < 0:
		return nil, fmt.Errorf("%q starts with '[' but has no matching ']'", s)
	case end+1 == len(s):
		return []string{s[1:end]}, nil
	case s[end+1] != ':' || end+2 == len(s):
		return nil, fmt.Errorf("%q has no port after ']:'", s)
	}
	return append([]string{s[1:end]}, splitDropTrailingEmpty(s[end+2:], ":")...), nil
}

// splitDropTrailingEmpty splits like Java's String.split, which drops
// trailing empty strings ("a:1:2:" has three parts).
func splitDropTrailingEmpty(s, sep string) []string {
	parts := strings.Split(s, sep)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// parsePort decodes a TCP port, 1 to 65535.
func parsePort(s string) (int, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %d out of range 1 to 65535", n)
	}
	return int(n), nil
}
