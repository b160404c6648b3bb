// Package zoocfg reads ZooKeeper's zoo.cfg, so an operator replacing
// ZooKeeper with hutch keeps the file. It decodes the Java properties
// format, the keys QuorumPeerConfig accepts (with ZooKeeper's defaults),
// the server.N member lines, the myid file in dataDir and ZooKeeper's
// server JAAS section, and builds a TLS configuration from the ssl.* keys
// (PEM files only). It knows nothing of hutch's server: cmd/hutch maps the
// result onto server.Config.
package zoocfg
