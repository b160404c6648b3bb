package main

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/testcerts"
	"github.com/hutchzk/hutch/server"
)

// configureFiles writes files into dir (contents may say $DIR for it) and
// runs configure on args, in which $DIR is replaced too. It returns the
// configuration, the log (with $DIR for dir) and the error.
func configureFiles(t *testing.T, dir string, files map[string]string, args ...string) (server.Config, string, error) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(content, "$DIR", dir)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i := range args {
		args[i] = strings.ReplaceAll(args[i], "$DIR", dir)
	}
	fs, f := newFlags()
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cfg, err := configure(fs, f, slog.New(slog.NewTextHandler(&logs, nil)))
	return cfg, strings.ReplaceAll(logs.String(), dir, "$DIR"), err
}

// mapped is the part of server.Config a zoo.cfg decides.
type mapped struct {
	ListenAddr, AdminAddr, MetricsAddr, SecureListenAddr, SuperDigest, DataLogDir string
	TickTime, MinSessionTimeout, MaxSessionTimeout                                time.Duration
	MaxClientConnsPerIP, InitLimit, SyncLimit                                     int
	EnforceQuota, ReadOnlyMode, ReconfigEnabled                                   bool
	FourLetterWords                                                               []string
	SASLUsers                                                                     map[string]string
	// Raft: node id, listen address, peers, data directory ("" for none),
	// the observers among the members, standaloneEnabled=false.
	NodeID             uint64
	RaftAddr           string
	Peers              map[uint64]string
	DataDir            string
	Observers          []uint64
	StandaloneDisabled bool
}

func mappedOf(c server.Config) mapped {
	m := mapped{
		ListenAddr: c.ListenAddr, AdminAddr: c.AdminAddr, MetricsAddr: c.MetricsAddr, SecureListenAddr: c.SecureListenAddr,
		SuperDigest: c.SuperDigest, DataLogDir: c.DataLogDir, TickTime: c.TickTime,
		MinSessionTimeout: c.MinSessionTimeout, MaxSessionTimeout: c.MaxSessionTimeout,
		MaxClientConnsPerIP: c.MaxClientConnsPerIP, InitLimit: c.InitLimit, SyncLimit: c.SyncLimit,
		FourLetterWords: c.FourLetterWords, SASLUsers: c.SASLUsers, EnforceQuota: c.EnforceQuota, ReadOnlyMode: c.ReadOnlyMode,
		ReconfigEnabled: c.ReconfigEnabled,
	}
	if c.Raft != nil {
		m.NodeID, m.RaftAddr, m.Peers, m.DataDir = c.Raft.NodeID, c.Raft.RaftAddr, c.Raft.Peers, c.Raft.DataDir
		m.StandaloneDisabled = c.Raft.StandaloneDisabled
		for _, mem := range c.Raft.Members {
			if !mem.Votes() {
				m.Observers = append(m.Observers, mem.ID)
			}
		}
	}
	return m
}

const secret = "0123456789abcdef0123"

const threeServers = "server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.2:2888:3888\nserver.3=127.0.0.3:2888:3888\n"

func TestZooCfgMapping(t *testing.T) {
	standalone := mapped{
		ListenAddr: ":2181", AdminAddr: "0.0.0.0:8080", DataLogDir: "$DIR/data",
		TickTime: 3 * time.Second, MaxClientConnsPerIP: 60, FourLetterWords: []string{"srvr"},
		NodeID: 1, RaftAddr: "127.0.0.1:0", Peers: map[uint64]string{}, DataDir: "$DIR/data",
	}
	with := func(change func(*mapped)) mapped {
		m := standalone
		m.Peers = map[uint64]string{}
		change(&m)
		return m
	}
	for _, tc := range []struct {
		name  string
		cfg   string
		files map[string]string
		args  []string // after the zoo.cfg argument
		want  mapped
		logs  []string
	}{
		{"minimal standalone: ZooKeeper's defaults, every interface, durable in dataDir",
			"dataDir=$DIR/data\nclientPort=2181\n", nil, nil, standalone, nil},
		{"the usual keys", "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=$DIR/data\ndataLogDir=$DIR/log\nclientPort=2181\n" +
			"clientPortAddress=127.0.0.1\nmaxClientCnxns=0\nminSessionTimeout=5000\nmaxSessionTimeout=50000\n" +
			"4lw.commands.whitelist=ruok, srvr,mntr\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=9090\n" +
			"metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider\n" +
			"metricsProvider.httpHost=127.0.0.1\nDigestAuthenticationProvider.superDigest=super:abc=\nautopurge.purgeInterval=1\n",
			nil, nil, with(func(m *mapped) {
				m.ListenAddr, m.TickTime, m.InitLimit, m.SyncLimit, m.DataLogDir = "127.0.0.1:2181", 2*time.Second, 10, 5, "$DIR/log"
				m.MaxClientConnsPerIP, m.MinSessionTimeout, m.MaxSessionTimeout = -1, 5*time.Second, 50*time.Second
				m.FourLetterWords, m.AdminAddr, m.MetricsAddr = []string{"ruok", "srvr", "mntr"}, "127.0.0.1:9090", "127.0.0.1:7000"
				m.SuperDigest = "super:abc="
			}), []string{`msg="zoo.cfg: key not acted on" key=autopurge.purgeInterval line=17 reason="hutch's Raft snapshots handle retention"`}},
		{"admin off, metrics keys without the Prometheus provider, unknown key",
			"dataDir=$DIR/data\nclientPort=2181\nadmin.enableServer=false\nmetricsProvider.httpPort=7001\nfoo.bar=1\n", nil, nil,
			with(func(m *mapped) { m.AdminAddr = "" }),
			[]string{`level=WARN msg="zoo.cfg: key not used by hutch" key=foo.bar line=5`, `key=metricsProvider.httpPort line=4 reason="only the Prometheus metrics provider serves HTTP"`}},
		{"flags given explicitly win", "dataDir=$DIR/data\nclientPort=2181\ntickTime=1000\nmaxSessionTimeout=9000\n4lw.commands.whitelist=*\n", nil,
			[]string{"--listen", "127.0.0.1:3000", "--tick-time", "500ms", "--data-dir", "$DIR/other", "--admin-listen", "", "--four-letter-words", "ruok,srvr"},
			with(func(m *mapped) {
				m.ListenAddr, m.TickTime, m.DataDir, m.AdminAddr = "127.0.0.1:3000", 500*time.Millisecond, "$DIR/other", ""
				m.MaxSessionTimeout, m.FourLetterWords = 9*time.Second, []string{"ruok", "srvr"}
			}), nil},
		{"enforceQuota, which ZooKeeper takes as zookeeper.enforceQuota", "dataDir=$DIR/data\nclientPort=2181\nenforceQuota=true\n", nil, nil,
			with(func(m *mapped) { m.EnforceQuota = true }), nil},
		{"readonlymode.enabled, a system property in ZooKeeper", "dataDir=$DIR/data\nclientPort=2181\nreadonlymode.enabled=true\n", nil, nil,
			with(func(m *mapped) { m.ReadOnlyMode = true }), nil},
		{"--enforce-quota=false wins over the file", "dataDir=$DIR/data\nclientPort=2181\nenforceQuota=true\n", nil,
			[]string{"--enforce-quota=false"}, standalone, nil},
		{"JAAS users", "dataDir=$DIR/data\nclientPort=2181\nhutch.jaasFile=$DIR/jaas.conf\n",
			map[string]string{"jaas.conf": `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_super="adminsecret" user_bob="bobsecret"; };`},
			nil, with(func(m *mapped) { m.SASLUsers = map[string]string{"super": "adminsecret", "bob": "bobsecret"} }), nil},
		{"JAAS section from sasl.serverconfig", "dataDir=$DIR/data\nclientPort=2181\nsasl.serverconfig=ZK\n",
			map[string]string{"jaas.conf": `ZK { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="b"; };`},
			[]string{"--jaas-file", "$DIR/jaas.conf"}, with(func(m *mapped) { m.SASLUsers = map[string]string{"a": "b"} }), nil},
		{"ensemble member", "dataDir=$DIR/data\nclientPort=2181\ninitLimit=10\nsyncLimit=5\nhutch.peerSecretFile=$DIR/secret\n" + threeServers,
			map[string]string{"data/myid": "2\n", "secret": secret}, nil,
			with(func(m *mapped) {
				m.InitLimit, m.SyncLimit, m.NodeID, m.RaftAddr = 10, 5, 2, "127.0.0.2:2888"
				m.Peers = map[uint64]string{1: "127.0.0.1:2888", 2: "127.0.0.2:2888", 3: "127.0.0.3:2888"}
			}), []string{"election ports are not used", `myid=2 peers="1=127.0.0.1:2888,2=127.0.0.2:2888,3=127.0.0.3:2888"`}},
		{"ensemble with an observer, reconfig enabled, standalone disabled",
			"dataDir=$DIR/data\nclientPort=2181\ninitLimit=10\nsyncLimit=5\nhutch.peerSecretFile=$DIR/secret\nreconfigEnabled=true\nstandaloneEnabled=false\npeerType=observer\n" +
				threeServers + "server.4=127.0.0.4:2888:3888:observer\n",
			map[string]string{"data/myid": "4\n", "secret": secret}, nil,
			with(func(m *mapped) {
				m.InitLimit, m.SyncLimit, m.NodeID, m.RaftAddr, m.ReconfigEnabled, m.StandaloneDisabled = 10, 5, 4, "127.0.0.4:2888", true, true
				m.Peers = map[uint64]string{1: "127.0.0.1:2888", 2: "127.0.0.2:2888", 3: "127.0.0.3:2888", 4: "127.0.0.4:2888"}
				m.Observers = []uint64{4}
			}), nil},
		{"ensemble: client port from the server line, quorum on every IP",
			"dataDir=$DIR/data\ninitLimit=10\nsyncLimit=5\nquorumListenOnAllIPs=true\nhutch.peerSecretFile=$DIR/secret\n" +
				"server.1=127.0.0.1:2888:3888;2181\nserver.2=127.0.0.2:2888:3888:participant;127.0.0.2:2182\n",
			map[string]string{"data/myid": "2", "secret": secret}, nil,
			with(func(m *mapped) {
				m.ListenAddr, m.InitLimit, m.SyncLimit, m.NodeID, m.RaftAddr = "127.0.0.2:2182", 10, 5, 2, "0.0.0.0:2888"
				m.Peers = map[uint64]string{1: "127.0.0.1:2888", 2: "127.0.0.2:2888"}
			}), nil},
		{"ZooKeeper's data in dataDir is not read", "dataDir=$DIR/data\nclientPort=2181\n",
			map[string]string{"data/version-2/snapshot.0": "x"}, nil, standalone,
			[]string{`level=WARN msg="zoo.cfg: dataDir holds ZooKeeper's snapshots and logs (version-2), which hutch does not read: the tree starts empty"`}},
		{"one server line runs standalone", "dataDir=$DIR/data\nclientPort=2181\nserver.1=127.0.0.1:2888:3888\n",
			map[string]string{"data/myid": "1"}, nil, standalone, []string{"running standalone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"zoo.cfg": tc.cfg}
			for k, v := range tc.files {
				files[k] = v
			}
			dir := t.TempDir()
			cfg, logs, err := configureFiles(t, dir, files, append([]string{"$DIR/zoo.cfg"}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			got := mappedOf(cfg)
			got.DataDir = strings.ReplaceAll(got.DataDir, dir, "$DIR")
			got.DataLogDir = strings.ReplaceAll(got.DataLogDir, dir, "$DIR")
			if got.Peers == nil {
				got.Peers = map[uint64]string{}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			for _, want := range tc.logs {
				if !strings.Contains(logs, want) {
					t.Errorf("log lacks %q:\n%s", want, logs)
				}
			}
		})
	}
}

// TestZooCfgTLS: secureClientPort with PEM stores sets the secure address
// and a TLS config asking for client certificates, as ZooKeeper's default
// ssl.clientAuth=need.
func TestZooCfgTLS(t *testing.T) {
	cfg, _, err := configureFiles(t, t.TempDir(), map[string]string{
		"server.pem": serverPEM(t),
		"zoo.cfg": "dataDir=$DIR/data\nclientPort=2181\nsecureClientPort=2281\nsecureClientPortAddress=127.0.0.1\n" +
			"ssl.keyStore.location=$DIR/server.pem\nssl.trustStore.location=$DIR/server.pem\n",
	}, "$DIR/zoo.cfg")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SecureListenAddr != "127.0.0.1:2281" || cfg.TLS == nil || cfg.TLS.ClientAuth != tls.RequireAndVerifyClientCert || cfg.TLS.ClientCAs == nil {
		t.Fatalf("SecureListenAddr %q, TLS %+v", cfg.SecureListenAddr, cfg.TLS)
	}
}

// TestZooCfgRefusals: a zoo.cfg hutch cannot run is refused with the key
// to fix.
func TestZooCfgRefusals(t *testing.T) {
	ensemble := "dataDir=$DIR/data\nclientPort=2181\ninitLimit=10\nsyncLimit=5\n" + threeServers
	for _, tc := range []struct {
		name  string
		files map[string]string
		args  []string
		want  string
	}{
		{"ensemble without a secret", map[string]string{"zoo.cfg": ensemble, "data/myid": "1"}, nil,
			"an ensemble needs hutch.peerSecretFile: add hutch.peerSecretFile="},
		{"short secret", map[string]string{"zoo.cfg": ensemble + "hutch.peerSecretFile=$DIR/s\n", "data/myid": "1", "s": "short"}, nil,
			"at least 16"},
		{"no myid", map[string]string{"zoo.cfg": ensemble + "hutch.peerSecretFile=$DIR/s\n", "s": secret}, nil, "no myid file"},
		{"id above 254", map[string]string{"zoo.cfg": strings.Replace(ensemble, "server.3=", "server.300=", 1), "data/myid": "1"}, nil,
			"line 7: server.300: hutch takes server ids 1 to 254"},
		{"no client port", map[string]string{"zoo.cfg": "dataDir=$DIR/data\n"}, nil, "no clientPort"},
		{"bad value", map[string]string{"zoo.cfg": "dataDir=$DIR/data\nclientPort=21x81\n"}, nil, "zoo.cfg line 2: clientPort"},
		{"missing JAAS file", map[string]string{"zoo.cfg": "dataDir=$DIR/data\nclientPort=1\nhutch.jaasFile=$DIR/nope\n"}, nil, "--jaas-file"},
		{"JKS key store", map[string]string{"zoo.cfg": "dataDir=$DIR/data\nclientPort=1\nsecureClientPort=2\nssl.keyStore.location=$DIR/k.jks\n"}, nil,
			"hutch reads PEM files only"},
		{"missing file", nil, nil, "no such file"},
		{"two files", map[string]string{"zoo.cfg": "dataDir=$DIR/data\nclientPort=1\n"}, []string{"$DIR/other.cfg"}, "one zoo.cfg argument at most"},
		{"--config and a file", map[string]string{"zoo.cfg": "dataDir=$DIR/data\nclientPort=1\n"}, []string{"--config", "$DIR/zoo.cfg"}, "zoo.cfg given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := configureFiles(t, t.TempDir(), tc.files, append([]string{"$DIR/zoo.cfg"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %+v, err %v; want an error containing %q", mappedOf(cfg), err, tc.want)
			}
		})
	}
}

func TestHelpMentionsZooCfg(t *testing.T) {
	fs, _ := newFlags()
	var out bytes.Buffer
	fs.SetOutput(&out)
	if err := fs.Parse([]string{"--help"}); err == nil {
		t.Fatal("--help did not stop parsing")
	}
	for _, want := range []string{"Usage: hutch [flags] [zoo.cfg]", "--config", "hutch.peerSecretFile", "election port is not used", "--jaas-file"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// serverPEM is a CA-signed server certificate followed by its key, as
// one PEM key store.
func serverPEM(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(testcerts.NewCA(t, "hutch").Server(t, "server").Combined)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
