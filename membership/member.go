package membership

import (
	"net"
	"strconv"
	"strings"
)

// Role is a member's place in the configuration: a participant votes and
// counts for quorum, an observer only follows.
type Role uint8

// The roles of ZooKeeper's LearnerType.
const (
	Participant Role = iota
	Observer
)

// String is the role as a server.N line names it.
func (r Role) String() string {
	if r == Observer {
		return "observer"
	}
	return "participant"
}

// Member is one server of the configuration: a server.N line,
// server.N=host:quorumPort:electionPort:role[;clientHost:clientPort].
type Member struct {
	ID uint64
	// Host names the member for its peers, as written (no brackets, not
	// resolved).
	Host string
	// QuorumPort is where hutch runs Raft (ZooKeeper's followers reach
	// the leader there).
	QuorumPort int
	// ElectionPort is ZooKeeper's leader-election port. Raft elects over
	// the quorum port, so hutch keeps it only to print it back; 0 when the
	// member came from hutch's own --peers, which has none.
	ElectionPort int
	Role         Role
	// ClientHost and ClientPort are the client address after ';' (a bare
	// port means 0.0.0.0); ClientPort is 0 when the line has none.
	ClientHost string
	ClientPort int
}

// Votes reports whether the member is a participant.
func (m Member) Votes() bool { return m.Role == Participant }

// RaftAddr is host:quorumPort, the address its Raft peers dial.
func (m Member) RaftAddr() string { return net.JoinHostPort(m.Host, strconv.Itoa(m.QuorumPort)) }

// ClientAddr is the client address, host:port, or "" without one.
func (m Member) ClientAddr() string {
	if m.ClientPort == 0 {
		return ""
	}
	return net.JoinHostPort(m.ClientHost, strconv.Itoa(m.ClientPort))
}

// String is the member's part of its server.N line as QuorumServer prints
// it: host:quorumPort:electionPort:role, then ;clientHost:clientPort when
// it has a client address.
func (m Member) String() string {
	var b strings.Builder
	b.WriteString(delimitedHost(m.Host))
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(m.QuorumPort))
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(m.ElectionPort))
	b.WriteByte(':')
	b.WriteString(m.Role.String())
	if m.ClientPort != 0 {
		b.WriteByte(';')
		b.WriteString(delimitedHost(m.ClientHost))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(m.ClientPort))
	}
	return b.String()
}

// delimitedHost brackets an IPv6 literal, as QuorumServer.delimitedHostString.
func delimitedHost(h string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

// Config is the membership of an ensemble: what ZooKeeper's
// QuorumVerifier holds and /zookeeper/config shows.
type Config struct {
	// Version is the zxid of the transaction that made this
	// configuration; 0 for none yet.
	Version int64
	// Members are in the order ZooKeeper prints them (the iteration order
	// of its member HashMap, see javaorder.go), each id once.
	Members []Member
}

// IsZero reports whether c holds no configuration (a standalone node, or
// an ensemble that has not written its first one).
func (c Config) IsZero() bool { return c.Version == 0 && len(c.Members) == 0 }

// Member returns the member with id.
func (c Config) Member(id uint64) (Member, bool) {
	for _, m := range c.Members {
		if m.ID == id {
			return m, true
		}
	}
	return Member{}, false
}

// Voters counts the participants.
func (c Config) Voters() int {
	n := 0
	for _, m := range c.Members {
		if m.Votes() {
			n++
		}
	}
	return n
}

// Clone returns a copy that shares nothing with c.
func (c Config) Clone() Config {
	c.Members = append([]Member(nil), c.Members...)
	return c
}

// Text is the configuration as ZooKeeper's QuorumMaj.toString writes it
// into /zookeeper/config and a reconfig's reply: a server.N=... line per
// member, then version=<hex>, with no newline at the end.
func (c Config) Text() string {
	var b strings.Builder
	for _, m := range c.Members {
		b.WriteString("server.")
		b.WriteString(strconv.FormatUint(m.ID, 10))
		b.WriteByte('=')
		b.WriteString(m.String())
		b.WriteByte('\n')
	}
	b.WriteString("version=")
	b.WriteString(strconv.FormatUint(uint64(c.Version), 16))
	return b.String()
}

// Equal reports whether a and b hold the same members in the same order
// and the same version.
func (c Config) Equal(o Config) bool {
	if c.Version != o.Version || len(c.Members) != len(o.Members) {
		return false
	}
	for i := range c.Members {
		if c.Members[i] != o.Members[i] {
			return false
		}
	}
	return true
}
