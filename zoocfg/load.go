package zoocfg

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Load reads the zoo.cfg at path as QuorumPeerConfig.parse does: the file,
// the server.N lines of dynamicConfigFile when it is set, and this node's
// id from <dataDir>/myid when that file exists. An ensemble must have a
// myid naming one of its servers, initLimit and syncLimit.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := Parse(f)
	if err != nil {
		return nil, inFile(err, path)
	}
	if c.DynamicConfigFile != "" {
		if err := c.readDynamic(c.DynamicConfigFile); err != nil {
			return nil, inFile(err, c.DynamicConfigFile)
		}
	}
	if err := c.readMyID(); err != nil {
		return nil, err
	}
	if err := c.checkEnsemble(); err != nil {
		return nil, inFile(err, path)
	}
	return c, nil
}

// inFile names path in err when it is a zoo.cfg error.
func inFile(err error, path string) error {
	var e *Error
	if errors.As(err, &e) && e.File == "" {
		e.File = path
	}
	return err
}

// readDynamic adds the server.N lines of a dynamic configuration file,
// which may hold nothing else but version.
func (c *Config) readDynamic(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	props, err := ReadProperties(f)
	if err != nil {
		return err
	}
	for _, p := range props {
		switch {
		case strings.HasPrefix(p.Key, "server."):
			if err := c.addServer(p); err != nil {
				return &Error{Line: p.Line, Key: p.Key, Err: err}
			}
		case p.Key == "version":
		case strings.HasPrefix(p.Key, "group") || strings.HasPrefix(p.Key, "weight"):
			return &Error{Line: p.Line, Key: p.Key, Err: errors.New("hierarchical quorums (group/weight) are not supported: hutch's Raft counts a plain majority")}
		default:
			return &Error{Line: p.Line, Key: p.Key, Err: errors.New("unrecognised parameter in a dynamic config file")}
		}
	}
	return c.checkServers()
}

// readMyID reads <dataDir>/myid when it is a file, as setupMyId does.
func (c *Config) readMyID() error {
	path := filepath.Join(c.DataDir, "myid")
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	line := sc.Text()
	// Long.parseLong takes no white space; a trailing newline is not part
	// of the first line.
	id, err := strconv.ParseInt(line, 10, 64)
	if err != nil || id <= 0 {
		return fmt.Errorf("%s: server id %q is not a positive number", path, line)
	}
	c.MyID = uint64(id)
	return nil
}

// checkEnsemble makes QuorumPeerConfig.checkValidity's checks and
// setupClientPort's consistency check.
func (c *Config) checkEnsemble() error {
	if c.Distributed() {
		if c.InitLimit == 0 {
			return c.errorAt("initLimit", errors.New("is not set (an ensemble needs it)"))
		}
		if c.SyncLimit == 0 {
			return c.errorAt("syncLimit", errors.New("is not set (an ensemble needs it)"))
		}
		if c.MyID == 0 {
			return &Error{Key: "dataDir", Err: fmt.Errorf("%s holds no myid file: an ensemble member reads its id from it", c.DataDir)}
		}
		if _, ok := c.Servers[c.MyID]; !ok {
			return &Error{Key: "dataDir", Err: fmt.Errorf("myid %d is not one of the server.N lines", c.MyID)}
		}
	}
	s, ok := c.Servers[c.MyID]
	if !ok || c.MyID == 0 || s.ClientAddr() == "" || c.ClientPort == 0 {
		return nil
	}
	// Both the static keys and the server line name a client address.
	static := joinPort(c.ClientPortAddress, c.ClientPort)
	wildcard := c.ClientPortAddress == "" || c.ClientPortAddress == "0.0.0.0" || c.ClientPortAddress == "::"
	_, linePort, _ := net.SplitHostPort(s.ClientAddr())
	if (wildcard && linePort != strconv.Itoa(c.ClientPort)) || (!wildcard && static != s.ClientAddr()) {
		return &Error{Line: s.Line, Key: fmt.Sprintf("server.%d", s.ID),
			Err: fmt.Errorf("client address %s differs from clientPortAddress:clientPort %s", s.ClientAddr(), static)}
	}
	return nil
}
