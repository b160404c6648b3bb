package zoocfg

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/hutchzk/hutch/membership"
)

// Config is a decoded zoo.cfg. Fields hold ZooKeeper 3.8's defaults for
// keys the file leaves out.
type Config struct {
	// TickTime is tickTime (default 3000 ms, ZooKeeperServer.DEFAULT_TICK_TIME).
	TickTime time.Duration
	// InitLimit and SyncLimit are in ticks; an ensemble must set both.
	InitLimit int
	SyncLimit int
	// DataDir is required; DataLogDir defaults to it.
	DataDir    string
	DataLogDir string
	// ClientPort is 0 when unset. ClientPortAddress is "" when unset
	// (ZooKeeper then listens on every interface).
	ClientPort              int
	ClientPortAddress       string
	SecureClientPort        int
	SecureClientPortAddress string
	// MaxClientCnxns is per client IP; 0 means unlimited (default 60).
	MaxClientCnxns int
	// MinSessionTimeout and MaxSessionTimeout default to 2 and 20 ticks.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// StandaloneEnabled (default true) lets a configuration with one
	// participant run standalone, as QuorumPeerMain does; without it a
	// reconfig may leave a single participant.
	StandaloneEnabled bool
	// ReconfigEnabled is reconfigEnabled (default false): clients may
	// change the membership with reconfig.
	ReconfigEnabled bool
	// PeerType is peerType, this server's role; its own server.N line
	// wins where they differ, as in ZooKeeper.
	PeerType membership.Role
	// QuorumListenOnAllIPs makes the quorum port listen on 0.0.0.0.
	QuorumListenOnAllIPs bool
	// Servers are the server.N lines (of the file or of dynamicConfigFile).
	Servers map[uint64]Server
	// DynamicConfigFile is where the server.N lines are when it is set.
	DynamicConfigFile string
	// MyID is this node's id from <dataDir>/myid (Load reads it), 0 when
	// there is no myid file.
	MyID uint64
	// FourLetterWords is 4lw.commands.whitelist split on commas ("*" kept
	// as is); nil when the key is absent, which in ZooKeeper enables srvr
	// only.
	FourLetterWords []string
	// Admin server: admin.enableServer (default true),
	// admin.serverAddress (0.0.0.0), admin.serverPort (8080).
	AdminEnabled bool
	AdminAddress string
	AdminPort    int
	// Metrics: metricsProvider.className and, for the Prometheus provider,
	// metricsProvider.httpHost (0.0.0.0) and httpPort (7000).
	MetricsProviderClass string
	MetricsHTTPHost      string
	MetricsHTTPPort      int
	// ExtendedTypesEnabled is extendedTypesEnabled (TTL nodes), default false.
	ExtendedTypesEnabled bool
	// ReadOnlyMode is readonlymode.enabled, a Java system property in
	// ZooKeeper (which would take the key in zoo.cfg as
	// zookeeper.readonlymode.enabled, and ignore it); hutch takes it here
	// too. Default false.
	ReadOnlyMode bool
	// EnforceQuota is enforceQuota, which ZooKeeper takes as the system
	// property zookeeper.enforceQuota (as it takes every key it does not
	// know): hard quota limits refuse writes. Default false.
	EnforceQuota bool
	// Autopurge settings: accepted, but Raft snapshots handle retention.
	SnapRetainCount int
	PurgeInterval   int
	// SSL holds the ssl.* keys.
	SSL SSL
	// AuthProviders are the authProvider.* class names, by key suffix.
	AuthProviders map[string]string
	// SuperDigest is DigestAuthenticationProvider.superDigest.
	SuperDigest string
	// SASLLoginContext is sasl.serverconfig: the JAAS section the server
	// logs in with (default "Server").
	SASLLoginContext string
	// hutch's own keys; ZooKeeper ignores them.
	JAASFile       string // hutch.jaasFile
	PeerSecretFile string // hutch.peerSecretFile
	AdminTokenFile string // hutch.adminTokenFile
	// Ignored lists, once each, the keys hutch accepts but does not act
	// on, with the line of their first occurrence. Reason is empty for
	// keys hutch does not know at all.
	Ignored []Ignored
	// lines remembers where each key was set, for errors found after
	// decoding.
	lines map[string]int
}

// SSL holds the ssl.* keys of the secure client port.
type SSL struct {
	KeyStoreLocation   string
	KeyStoreType       string
	KeyStorePassword   string
	TrustStoreLocation string
	TrustStoreType     string
	TrustStorePassword string
	// ClientAuth is none, want or need (the default, as X509Util's).
	ClientAuth string
}

// Ignored is a key hutch does not act on.
type Ignored struct {
	Key    string
	Line   int
	Reason string
}

// PrometheusProvider is the metricsProvider.className that turns on
// ZooKeeper's Prometheus endpoint.
const PrometheusProvider = "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider"

// Error is a bad value in a zoo.cfg: the key, the line it is on and why.
type Error struct {
	File string
	Line int
	Key  string
	Err  error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("zoo.cfg")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, " line %d", e.Line)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": %s", e.Key)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// defaults are ZooKeeper 3.8's (QuorumPeerConfig, JettyAdminServer,
// PrometheusMetricsProvider, X509Util).
func defaults() *Config {
	return &Config{
		TickTime:          3000 * time.Millisecond,
		MaxClientCnxns:    60,
		StandaloneEnabled: true,
		Servers:           map[uint64]Server{},
		AdminEnabled:      true,
		AdminAddress:      "0.0.0.0",
		AdminPort:         8080,
		MetricsHTTPHost:   "0.0.0.0",
		MetricsHTTPPort:   7000,
		SnapRetainCount:   3,
		SSL:               SSL{ClientAuth: "need"},
		AuthProviders:     map[string]string{},
		SASLLoginContext:  "Server",
		lines:             map[string]int{},
	}
}

// Parse decodes a zoo.cfg. It reads no other file: Load adds the dynamic
// configuration file and myid and checks what needs them.
func Parse(r io.Reader) (*Config, error) {
	props, err := ReadProperties(r)
	if err != nil {
		return nil, err
	}
	c := defaults()
	minTimeout, maxTimeout := -1, -1
	seen := map[string]int{}
	for _, p := range props {
		if first, dup := seen[p.Key]; dup && !strings.HasPrefix(p.Key, "server.") {
			// java.util.Properties keeps the last; say so rather than
			// hide it.
			c.ignore(p.Key, first, fmt.Sprintf("set again on line %d, which wins", p.Line))
		}
		seen[p.Key] = p.Line
		c.lines[p.Key] = p.Line
		if err := c.set(p, &minTimeout, &maxTimeout); err != nil {
			return nil, &Error{Line: p.Line, Key: p.Key, Err: err}
		}
	}
	if err := c.finish(minTimeout, maxTimeout); err != nil {
		return nil, err
	}
	return c, nil
}

// set decodes one key.
func (c *Config) set(p Property, minTimeout, maxTimeout *int) error {
	v := p.Value
	var err error
	switch key := p.Key; {
	case key == "dataDir":
		c.DataDir = v
	case key == "dataLogDir":
		c.DataLogDir = v
	case key == "clientPort":
		c.ClientPort, err = parseOptionalPort(v)
	case key == "clientPortAddress":
		c.ClientPortAddress = v
	case key == "secureClientPort":
		c.SecureClientPort, err = parseOptionalPort(v)
	case key == "secureClientPortAddress":
		c.SecureClientPortAddress = v
	case key == "tickTime":
		var ms int
		if ms, err = parseInt(v); err == nil {
			if ms <= 0 {
				return fmt.Errorf("%d must be positive", ms)
			}
			c.TickTime = time.Duration(ms) * time.Millisecond
		}
	case key == "initLimit":
		c.InitLimit, err = parseNonNegative(v)
	case key == "syncLimit":
		c.SyncLimit, err = parseNonNegative(v)
	case key == "maxClientCnxns":
		c.MaxClientCnxns, err = parseNonNegative(v)
	case key == "minSessionTimeout":
		*minTimeout, err = parseInt(v)
	case key == "maxSessionTimeout":
		*maxTimeout, err = parseInt(v)
	case key == "standaloneEnabled":
		c.StandaloneEnabled, err = parseBool(v)
	case key == "reconfigEnabled":
		c.ReconfigEnabled, err = parseBool(v)
	case key == "peerType":
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "observer":
			c.PeerType = membership.Observer
		case "participant":
			c.PeerType = membership.Participant
		default:
			return fmt.Errorf("%q is neither observer nor participant", v)
		}
	case key == "quorumListenOnAllIPs":
		c.QuorumListenOnAllIPs, err = parseBool(v)
	case key == "dynamicConfigFile":
		c.DynamicConfigFile = v
	case strings.HasPrefix(key, "server."):
		return c.addServer(p)
	case strings.HasPrefix(key, "group") || strings.HasPrefix(key, "weight"):
		return errors.New("hierarchical quorums (group/weight) are not supported: hutch's Raft counts a plain majority")
	case key == "4lw.commands.whitelist":
		c.FourLetterWords = []string{}
		for w := range strings.SplitSeq(v, ",") {
			if w = strings.TrimSpace(w); w != "" {
				c.FourLetterWords = append(c.FourLetterWords, w)
			}
		}
	case key == "admin.enableServer":
		c.AdminEnabled, err = parseBool(v)
	case key == "admin.serverAddress":
		c.AdminAddress = v
	case key == "admin.serverPort":
		c.AdminPort, err = parsePort(v)
	case key == "metricsProvider.className":
		c.MetricsProviderClass = v
	case key == "metricsProvider.httpHost":
		c.MetricsHTTPHost = v
	case key == "metricsProvider.httpPort":
		c.MetricsHTTPPort, err = parsePort(v)
	case key == "extendedTypesEnabled":
		c.ExtendedTypesEnabled, err = parseBool(v)
	case key == "enforceQuota":
		c.EnforceQuota, err = parseBool(v)
	case key == "readonlymode.enabled":
		c.ReadOnlyMode, err = parseBool(v)
	case key == "autopurge.snapRetainCount":
		c.SnapRetainCount, err = parseInt(v)
		c.ignore(key, p.Line, "hutch's Raft snapshots handle retention")
	case key == "autopurge.purgeInterval":
		c.PurgeInterval, err = parseInt(v)
		c.ignore(key, p.Line, "hutch's Raft snapshots handle retention")
	case key == "electionAlg":
		var n int
		if n, err = parseInt(v); err == nil && n != 3 {
			return fmt.Errorf("%d: only 3 is supported (as in ZooKeeper)", n)
		}
		c.ignore(key, p.Line, "hutch elects leaders with Raft")
	case key == "ssl.keyStore.location":
		c.SSL.KeyStoreLocation = v
	case key == "ssl.keyStore.type":
		c.SSL.KeyStoreType = v
	case key == "ssl.keyStore.password":
		c.SSL.KeyStorePassword = v
	case key == "ssl.trustStore.location":
		c.SSL.TrustStoreLocation = v
	case key == "ssl.trustStore.type":
		c.SSL.TrustStoreType = v
	case key == "ssl.trustStore.password":
		c.SSL.TrustStorePassword = v
	case key == "ssl.clientAuth":
		switch a := strings.ToLower(v); a {
		case "":
			c.SSL.ClientAuth = "need"
		case "none", "want", "need":
			c.SSL.ClientAuth = a
		default:
			return fmt.Errorf("%q is not none, want or need", v)
		}
	case strings.HasPrefix(key, "authProvider."):
		c.AuthProviders[strings.TrimPrefix(key, "authProvider.")] = v
	case key == "DigestAuthenticationProvider.superDigest":
		c.SuperDigest = v
	case key == "sasl.serverconfig":
		c.SASLLoginContext = v
	case key == "hutch.jaasFile":
		c.JAASFile = v
	case key == "hutch.peerSecretFile":
		c.PeerSecretFile = v
	case key == "hutch.adminTokenFile":
		c.AdminTokenFile = v
	case strings.HasPrefix(key, "hutch."):
		// ZooKeeper ignores these, so only hutch can catch a misspelling.
		return errors.New("unknown hutch key (hutch.peerSecretFile, hutch.adminTokenFile and hutch.jaasFile are known)")
	default:
		c.ignore(key, p.Line, "")
	}
	return err
}

// addServer decodes a server.N line; an id given twice is an error.
func (c *Config) addServer(p Property) error {
	id, err := parseServerID(p.Key)
	if err != nil {
		return err
	}
	if prev, dup := c.Servers[id]; dup {
		return fmt.Errorf("server id %d is already given on line %d", id, prev.Line)
	}
	s, err := parseServer(id, p.Value)
	if err != nil {
		return err
	}
	s.Line = p.Line
	c.Servers[id] = s
	return nil
}

// finish applies the defaults that depend on other keys and the checks
// QuorumPeerConfig.parseProperties makes on the file as a whole.
func (c *Config) finish(minTimeout, maxTimeout int) error {
	if c.DataDir == "" {
		return &Error{Key: "dataDir", Err: errors.New("is not set (ZooKeeper requires it)")}
	}
	if c.DataLogDir == "" {
		c.DataLogDir = c.DataDir
	}
	if c.ClientPort == 0 && c.ClientPortAddress != "" {
		return c.errorAt("clientPortAddress", errors.New("is set but clientPort is not"))
	}
	if c.SecureClientPort == 0 && c.SecureClientPortAddress != "" {
		return c.errorAt("secureClientPortAddress", errors.New("is set but secureClientPort is not"))
	}
	c.MinSessionTimeout = c.ticksOrMillis(minTimeout, 2)
	c.MaxSessionTimeout = c.ticksOrMillis(maxTimeout, 20)
	if c.MinSessionTimeout > c.MaxSessionTimeout {
		return c.errorAt("minSessionTimeout", fmt.Errorf("%v is larger than maxSessionTimeout %v", c.MinSessionTimeout, c.MaxSessionTimeout))
	}
	if c.DynamicConfigFile != "" {
		for _, s := range c.Servers {
			return &Error{Line: s.Line, Key: fmt.Sprintf("server.%d", s.ID), Err: errors.New("must be in the dynamic config file when dynamicConfigFile is set")}
		}
	}
	if c.MetricsProviderClass != PrometheusProvider {
		for _, k := range []string{"metricsProvider.httpHost", "metricsProvider.httpPort"} {
			if line, ok := c.lines[k]; ok {
				c.ignore(k, line, "only the Prometheus metrics provider serves HTTP")
			}
		}
	}
	return c.checkServers()
}

// checkServers checks the member lines once all are known (from the file
// or the dynamic file).
func (c *Config) checkServers() error {
	participants, observers := 0, 0
	for _, s := range c.Servers {
		if s.Role == membership.Observer {
			observers++
		} else {
			participants++
		}
	}
	if participants == 0 && observers > 0 {
		return &Error{Key: "server.N", Err: errors.New("observers without participants")}
	}
	if participants == 0 && !c.StandaloneEnabled {
		return c.errorAt("standaloneEnabled", errors.New("is false, so at least one server.N participant is needed"))
	}
	return nil
}

// ticksOrMillis is ms milliseconds, or n ticks when ms is -1 (unset).
func (c *Config) ticksOrMillis(ms, n int) time.Duration {
	if ms == -1 {
		return time.Duration(n) * c.TickTime
	}
	return time.Duration(ms) * time.Millisecond
}

// Distributed reports whether the file describes an ensemble rather than a
// standalone server, as QuorumPeerConfig.isDistributed: several
// participants, or any with standaloneEnabled=false.
func (c *Config) Distributed() bool {
	participants := 0
	for _, s := range c.Servers {
		if s.Role == membership.Participant {
			participants++
		}
	}
	return participants > 1 || (participants > 0 && !c.StandaloneEnabled)
}

// ClientAddr is where clients connect, as ZooKeeper decides it: this
// server's client address from its server.N line when it has one, else
// clientPortAddress:clientPort, with every interface when the address is
// unset (":port"). It is "" when no client port is configured.
func (c *Config) ClientAddr() string {
	if s, ok := c.Servers[c.MyID]; ok && c.MyID != 0 && s.ClientAddr() != "" {
		return s.ClientAddr()
	}
	return joinPort(c.ClientPortAddress, c.ClientPort)
}

// SecureClientAddr is secureClientPortAddress:secureClientPort, ":port"
// when the address is unset, "" without a secure port.
func (c *Config) SecureClientAddr() string {
	return joinPort(c.SecureClientPortAddress, c.SecureClientPort)
}

// AdminAddr is the admin server's address, "" when it is disabled.
func (c *Config) AdminAddr() string {
	if !c.AdminEnabled {
		return ""
	}
	return joinPort(c.AdminAddress, c.AdminPort)
}

// MetricsAddr is the Prometheus endpoint's address, "" unless
// metricsProvider.className names the Prometheus provider.
func (c *Config) MetricsAddr() string {
	if c.MetricsProviderClass != PrometheusProvider {
		return ""
	}
	return joinPort(c.MetricsHTTPHost, c.MetricsHTTPPort)
}

func joinPort(host string, port int) string {
	if port == 0 {
		return ""
	}
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(port)
}

// ignore records a key hutch does not act on, once.
func (c *Config) ignore(key string, line int, reason string) {
	for _, ig := range c.Ignored {
		if ig.Key == key {
			return
		}
	}
	c.Ignored = append(c.Ignored, Ignored{Key: key, Line: line, Reason: reason})
}

// errorAt is an error about key, at the line it was set on.
func (c *Config) errorAt(key string, err error) error {
	return &Error{Line: c.lines[key], Key: key, Err: err}
}

func parseInt(s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return int(n), nil
}

func parseNonNegative(s string) (int, error) {
	n, err := parseInt(s)
	if err == nil && n < 0 {
		err = fmt.Errorf("%d is negative", n)
	}
	return n, err
}

// parseOptionalPort is a port, or 0 for unset.
func parseOptionalPort(s string) (int, error) {
	if n, err := parseInt(s); err == nil && n == 0 {
		return 0, nil
	}
	return parsePort(s)
}

// parseBool accepts true or false in any case, as QuorumPeerConfig.parseBoolean.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is neither true nor false", s)
}

// Has reports whether the file set key (the last line wins, as in Java).
func (c *Config) Has(key string) bool {
	_, ok := c.lines[key]
	return ok
}

// Line is the line key was last set on, 0 when the file does not set it.
func (c *Config) Line(key string) int { return c.lines[key] }
