package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/server"
	"github.com/hutchzk/hutch/zoocfg"
)

// fileSettings are what a zoo.cfg sets that has no flag.
type fileSettings struct {
	fourLetterWords []string
	secureListen    string
	tls             *tls.Config
	initLimit       int
	syncLimit       int
	dataLogDir      string
	jaasSection     string
	// members are the server.N lines when they make an ensemble: its
	// first configuration, client addresses and all.
	members []membership.Member
	// standaloneDisabled is standaloneEnabled=false: a reconfig may leave
	// one participant.
	standaloneDisabled bool
}

// builtinAuthProviders are the authProvider.N classes whose scheme hutch
// serves itself.
var builtinAuthProviders = map[string]string{
	"org.apache.zookeeper.server.auth.SASLAuthenticationProvider":   "sasl",
	"org.apache.zookeeper.server.auth.X509AuthenticationProvider":   "x509",
	"org.apache.zookeeper.server.auth.DigestAuthenticationProvider": "digest",
	"org.apache.zookeeper.server.auth.IPAuthenticationProvider":     "ip",
}

// applyZooCfg reads the zoo.cfg at path and fills every flag the command
// line did not give from it, as ZooKeeper would run from the file; it
// returns what has no flag and logs what hutch does not act on.
func applyZooCfg(path string, fs *pflag.FlagSet, f *flags, logger *slog.Logger) (fileSettings, error) {
	zc, err := zoocfg.Load(path)
	if err != nil {
		return fileSettings{}, err
	}
	given := func(flag string) bool { return fs.Changed(flag) }
	for _, ig := range zc.Ignored {
		if ig.Reason == "" {
			logger.Warn("zoo.cfg: key not used by hutch", "key", ig.Key, "line", ig.Line)
		} else {
			logger.Info("zoo.cfg: key not acted on", "key", ig.Key, "line", ig.Line, "reason", ig.Reason)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(zc.AuthProviders)) {
		class := zc.AuthProviders[k]
		if scheme, ok := builtinAuthProviders[class]; ok {
			logger.Info("zoo.cfg: authentication scheme built in", "key", "authProvider."+k, "scheme", scheme)
		} else {
			logger.Warn("zoo.cfg: hutch has no such authentication provider; its scheme is not served", "key", "authProvider."+k, "class", class)
		}
	}
	if !zc.ExtendedTypesEnabled {
		logger.Info("zoo.cfg: extendedTypesEnabled is false, but hutch always serves TTL nodes")
	}

	if !given("listen") {
		addr := zc.ClientAddr()
		if addr == "" {
			return fileSettings{}, fmt.Errorf("%s: no clientPort, and no client port in this server's server.N line: add clientPort=2181 (or pass --listen)", path)
		}
		f.listen = addr
	}
	if !given("tick-time") {
		f.tick = zc.TickTime
	}
	// Session bounds the file leaves out follow the tick time in use,
	// which may be --tick-time's.
	if !given("min-session-timeout") && zc.Has("minSessionTimeout") {
		f.minTimeout = zc.MinSessionTimeout
	}
	if !given("max-session-timeout") && zc.Has("maxSessionTimeout") {
		f.maxTimeout = zc.MaxSessionTimeout
	}
	if !given("max-client-conns") {
		f.maxConns = zc.MaxClientCnxns
	}
	if !given("super-digest") && zc.SuperDigest != "" {
		f.superDigest = zc.SuperDigest
	}
	if !given("admin-listen") {
		f.adminListen = zc.AdminAddr()
	}
	if !given("admin-token-file") && zc.AdminTokenFile != "" {
		f.adminToken = zc.AdminTokenFile
	}
	if !given("metrics-listen") {
		f.metricsListen = zc.MetricsAddr()
	}
	if !given("jaas-file") && zc.JAASFile != "" {
		f.jaasFile = zc.JAASFile
	}
	if !given("data-dir") {
		// ZooKeeper persists in dataDir; so does hutch, as a one-node
		// Raft group unless server.N lines make an ensemble.
		f.dataDir = zc.DataDir
		warnZooKeeperData(f.dataDir, logger)
	}
	if !given("reconfig-enabled") {
		f.reconfig = zc.ReconfigEnabled
	}
	if !given("enforce-quota") {
		f.enforceQuota = zc.EnforceQuota
	}
	if !given("read-only-mode") {
		f.readOnlyMode = zc.ReadOnlyMode
	}
	if !given("peer-secret-file") && zc.PeerSecretFile != "" {
		f.secretFile = zc.PeerSecretFile
	}
	if err := applyServers(path, zc, given, f, logger); err != nil {
		return fileSettings{}, err
	}

	s := fileSettings{
		members:            ensembleMembers(zc, given),
		standaloneDisabled: !zc.StandaloneEnabled,
		fourLetterWords:    zc.FourLetterWords,
		initLimit:          zc.InitLimit,
		syncLimit:          zc.SyncLimit,
		dataLogDir:         zc.DataLogDir,
		jaasSection:        zc.SASLLoginContext,
	}
	if s.fourLetterWords == nil {
		// ZooKeeper answers srvr only unless 4lw.commands.whitelist says
		// otherwise (FourLetterCommands.isEnabled).
		s.fourLetterWords = []string{"srvr"}
	}
	if s.tls, err = zc.TLSConfig(); err != nil {
		return fileSettings{}, err
	}
	if s.tls != nil {
		s.secureListen = zc.SecureClientAddr()
	}
	return s, nil
}

// warnZooKeeperData says when dataDir holds ZooKeeper's own snapshots and
// transaction logs but no hutch state: hutch does not read them, so the
// tree starts empty there.
func warnZooKeeperData(dataDir string, logger *slog.Logger) {
	_, zkErr := os.Stat(filepath.Join(dataDir, "version-2"))
	_, hutchErr := os.Stat(filepath.Join(dataDir, "raft.db"))
	if zkErr == nil && errors.Is(hutchErr, os.ErrNotExist) {
		logger.Warn("zoo.cfg: dataDir holds ZooKeeper's snapshots and logs (version-2), which hutch does not read: the tree starts empty", "dataDir", dataDir)
	}
}

// ensembleMembers are the server.N lines, when they make the ensemble
// (not overridden by --peers).
func ensembleMembers(zc *zoocfg.Config, given func(string) bool) []membership.Member {
	if !zc.Distributed() || given("peers") {
		return nil
	}
	var out []membership.Member
	for _, id := range slices.Sorted(maps.Keys(zc.Servers)) {
		out = append(out, zc.Servers[id].Member)
	}
	return out
}

// applyServers turns server.N lines into the ensemble flags: this node's
// id from myid, and every member's host:quorumPort as its Raft address.
func applyServers(path string, zc *zoocfg.Config, given func(string) bool, f *flags, logger *slog.Logger) error {
	ids := slices.Sorted(maps.Keys(zc.Servers))
	for _, id := range ids {
		s := zc.Servers[id]
		if id > server.MaxServerID {
			return &zoocfg.Error{File: path, Line: s.Line, Key: fmt.Sprintf("server.%d", id),
				Err: fmt.Errorf("hutch takes server ids 1 to %d (session ids carry the id in one byte)", server.MaxServerID)}
		}
	}
	if self, ok := zc.Servers[zc.MyID]; ok && zc.Has("peerType") && self.Role != zc.PeerType {
		logger.Warn("zoo.cfg: peerType differs from this server's server.N line; the line wins, as in ZooKeeper",
			"peerType", zc.PeerType.String(), "line", self.Role.String())
	}
	if !zc.Distributed() {
		if len(ids) > 0 {
			logger.Info("zoo.cfg: one participant and standaloneEnabled: running standalone, as ZooKeeper does")
		}
		return nil
	}
	if given("peers") {
		return nil // the command line names the ensemble
	}
	peers := make([]string, 0, len(ids))
	for _, id := range ids {
		peers = append(peers, fmt.Sprintf("%d=%s", id, zc.Servers[id].QuorumAddr()))
	}
	f.peers = strings.Join(peers, ",")
	if !given("id") {
		f.nodeID = zc.MyID
	}
	if !given("raft-listen") && zc.QuorumListenOnAllIPs {
		self := zc.Servers[f.nodeID]
		f.raftListen = net.JoinHostPort("0.0.0.0", strconv.Itoa(self.QuorumPort))
	}
	if f.secretFile == "" {
		return fmt.Errorf("%s: an ensemble needs hutch.peerSecretFile: add hutch.peerSecretFile=<file holding a secret of at least 16 bytes, the same on every member> (ZooKeeper ignores the key), or pass --peer-secret-file", path)
	}
	logger.Info("zoo.cfg: ensemble from server.N lines; Raft runs on each quorum port, election ports are not used",
		"myid", zc.MyID, "peers", f.peers)
	return nil
}
