package zoocfg

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hutchzk/hutch/membership"
)

// Server is one server.N line (membership.ParseServer decodes it) and the
// line it is on.
type Server struct {
	membership.Member
	// Line is where the server.N line is, for error messages.
	Line int
}

// QuorumAddr is host:quorumPort, the address hutch's Raft peers dial.
func (s Server) QuorumAddr() string { return s.RaftAddr() }

// parseServerID decodes N of a server.N key (Long.parseLong in ZooKeeper).
func parseServerID(key string) (uint64, error) {
	n, err := strconv.ParseInt(strings.TrimPrefix(key, "server."), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q does not end in a positive server id", key)
	}
	return uint64(n), nil
}

// parseServer decodes a server line's value as QuorumServer does, and
// refuses what would not run: no host, or a port of 0.
func parseServer(id uint64, value string) (Server, error) {
	m, err := membership.ParseServer(id, value)
	if err != nil {
		return Server{}, err
	}
	switch {
	case m.Host == "":
		return Server{}, fmt.Errorf("%q has no host", value)
	case m.QuorumPort == 0:
		return Server{}, errors.New("quorum port: 0 is not a port to listen on")
	case m.ElectionPort == 0:
		return Server{}, errors.New("election port: 0 is not a port to listen on")
	case m.ClientHost != "" && m.ClientPort == 0:
		return Server{}, errors.New("client port: 0 is not a port to listen on")
	}
	return Server{Member: m}, nil
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
