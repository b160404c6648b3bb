package zoocfg

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/membership"
)

func TestParseDefaults(t *testing.T) {
	c, err := Parse(strings.NewReader("dataDir=/var/lib/zookeeper\n"))
	if err != nil {
		t.Fatal(err)
	}
	// ZooKeeper 3.8's defaults.
	if c.TickTime != 3*time.Second || c.MinSessionTimeout != 6*time.Second || c.MaxSessionTimeout != 60*time.Second ||
		c.MaxClientCnxns != 60 || c.DataLogDir != "/var/lib/zookeeper" || !c.StandaloneEnabled ||
		c.AdminAddr() != "0.0.0.0:8080" || c.MetricsAddr() != "" || c.ClientAddr() != "" ||
		c.SSL.ClientAuth != "need" || c.FourLetterWords != nil || c.ExtendedTypesEnabled || c.SASLLoginContext != "Server" {
		t.Errorf("defaults: %+v", c)
	}
}

func TestParse(t *testing.T) {
	const base = "dataDir=/d\n"
	for _, tc := range []struct {
		name  string
		in    string
		check func(t *testing.T, c *Config)
	}{
		{"client port on every interface", "clientPort=2181\n", func(t *testing.T, c *Config) {
			if c.ClientAddr() != ":2181" {
				t.Errorf("ClientAddr = %q", c.ClientAddr())
			}
		}},
		{"client port address", "clientPort=2181\nclientPortAddress=127.0.0.1\n", func(t *testing.T, c *Config) {
			if c.ClientAddr() != "127.0.0.1:2181" {
				t.Errorf("ClientAddr = %q", c.ClientAddr())
			}
		}},
		{"IPv6 client address", "clientPort=2181\nclientPortAddress=::1\n", func(t *testing.T, c *Config) {
			if c.ClientAddr() != "[::1]:2181" {
				t.Errorf("ClientAddr = %q", c.ClientAddr())
			}
		}},
		{"timeouts in ms, session bounds from tick", "tickTime=500\nmaxSessionTimeout=40000\n", func(t *testing.T, c *Config) {
			if c.TickTime != 500*time.Millisecond || c.MinSessionTimeout != time.Second || c.MaxSessionTimeout != 40*time.Second {
				t.Errorf("%v %v %v", c.TickTime, c.MinSessionTimeout, c.MaxSessionTimeout)
			}
		}},
		{"limits and dirs", "initLimit=10\nsyncLimit=5\ndataLogDir=/l\nmaxClientCnxns=0\n", func(t *testing.T, c *Config) {
			if c.InitLimit != 10 || c.SyncLimit != 5 || c.DataLogDir != "/l" || c.MaxClientCnxns != 0 {
				t.Errorf("%+v", c)
			}
		}},
		{"whitelist", "4lw.commands.whitelist= srvr, ruok ,,mntr\n", func(t *testing.T, c *Config) {
			if !reflect.DeepEqual(c.FourLetterWords, []string{"srvr", "ruok", "mntr"}) {
				t.Errorf("%q", c.FourLetterWords)
			}
		}},
		{"admin", "admin.serverAddress=127.0.0.1\nadmin.serverPort=9090\n", func(t *testing.T, c *Config) {
			if c.AdminAddr() != "127.0.0.1:9090" {
				t.Errorf("%q", c.AdminAddr())
			}
		}},
		{"readonlymode.enabled", "readonlymode.enabled=true\n", func(t *testing.T, c *Config) {
			if !c.ReadOnlyMode || ignored(c, "readonlymode.enabled") {
				t.Errorf("ReadOnlyMode %v, ignored %+v", c.ReadOnlyMode, c.Ignored)
			}
		}},
		{"enforceQuota", "enforceQuota=True\n", func(t *testing.T, c *Config) {
			if !c.EnforceQuota || ignored(c, "enforceQuota") {
				t.Errorf("EnforceQuota %v, ignored %+v", c.EnforceQuota, c.Ignored)
			}
		}},
		{"admin off", "admin.enableServer=FALSE\n", func(t *testing.T, c *Config) {
			if c.AdminAddr() != "" {
				t.Errorf("%q", c.AdminAddr())
			}
		}},
		{"prometheus", "metricsProvider.className=" + PrometheusProvider + "\nmetricsProvider.httpPort=7001\n", func(t *testing.T, c *Config) {
			if c.MetricsAddr() != "0.0.0.0:7001" {
				t.Errorf("%q", c.MetricsAddr())
			}
		}},
		{"metrics port without prometheus", "metricsProvider.httpPort=7001\n", func(t *testing.T, c *Config) {
			if c.MetricsAddr() != "" || !ignored(c, "metricsProvider.httpPort") {
				t.Errorf("%q %+v", c.MetricsAddr(), c.Ignored)
			}
		}},
		{"ssl and auth", "secureClientPort=2281\nssl.keyStore.location=/k.pem\nssl.clientAuth=Want\nauthProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\nhutch.jaasFile=/j\n", func(t *testing.T, c *Config) {
			if c.SecureClientAddr() != ":2281" || c.SSL.KeyStoreLocation != "/k.pem" || c.SSL.ClientAuth != "want" ||
				c.AuthProviders["1"] == "" || c.JAASFile != "/j" {
				t.Errorf("%+v", c)
			}
		}},
		{"hutch keys", "hutch.peerSecretFile=/s\nhutch.adminTokenFile=/t\n", func(t *testing.T, c *Config) {
			if c.PeerSecretFile != "/s" || c.AdminTokenFile != "/t" {
				t.Errorf("%+v", c)
			}
		}},
		{"unknown and ignored keys once each", "autopurge.purgeInterval=1\nfoo=1\nfoo=2\nsyncEnabled=true\n", func(t *testing.T, c *Config) {
			want := []Ignored{
				{"autopurge.purgeInterval", 2, "hutch's Raft snapshots handle retention"},
				{"foo", 3, ""},
				{"syncEnabled", 5, ""},
			}
			if !reflect.DeepEqual(c.Ignored, want) {
				t.Errorf("Ignored = %+v", c.Ignored)
			}
		}},
		{"servers", "server.1=zk1:2888:3888\nserver.2=[::1]:2889:3889:participant;2182\nserver.3=zk3:2888:3888:OBSERVER;127.0.0.1:2183\n", func(t *testing.T, c *Config) {
			want := map[uint64]Server{
				1: {membership.Member{ID: 1, Host: "zk1", QuorumPort: 2888, ElectionPort: 3888, Role: membership.Participant}, 2},
				2: {membership.Member{ID: 2, Host: "::1", QuorumPort: 2889, ElectionPort: 3889, Role: membership.Participant, ClientHost: "0.0.0.0", ClientPort: 2182}, 3},
				3: {membership.Member{ID: 3, Host: "zk3", QuorumPort: 2888, ElectionPort: 3888, Role: membership.Observer, ClientHost: "127.0.0.1", ClientPort: 2183}, 4},
			}
			if !reflect.DeepEqual(c.Servers, want) {
				t.Errorf("Servers = %+v", c.Servers)
			}
			if c.Servers[2].QuorumAddr() != "[::1]:2889" || !c.Distributed() {
				t.Errorf("%q %v", c.Servers[2].QuorumAddr(), c.Distributed())
			}
		}},
		{"one participant is standalone", "server.1=a:1:2\n", func(t *testing.T, c *Config) {
			if c.Distributed() {
				t.Error("Distributed")
			}
		}},
		{"one participant without standalone", "server.1=a:1:2\nstandaloneEnabled=false\n", func(t *testing.T, c *Config) {
			if !c.Distributed() {
				t.Error("not Distributed")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(strings.NewReader(base + tc.in))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func ignored(c *Config, key string) bool {
	for _, ig := range c.Ignored {
		if ig.Key == key {
			return true
		}
	}
	return false
}

// TestParseErrors: a bad value is an error naming the key and its line.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"no dataDir", "clientPort=2181\n", "dataDir: is not set"},
		{"clientPort not a number", "dataDir=/d\nclientPort=x\n", `line 2: clientPort: "x" is not a number`},
		{"clientPort out of range", "dataDir=/d\n\nclientPort=70000\n", "line 3: clientPort: port 70000 out of range"},
		{"negative maxClientCnxns", "dataDir=/d\nmaxClientCnxns=-1\n", "line 2: maxClientCnxns: -1 is negative"},
		{"zero tickTime", "dataDir=/d\ntickTime=0\n", "line 2: tickTime"},
		{"bad boolean", "dataDir=/d\nadmin.enableServer=yes\n", `line 2: admin.enableServer: "yes" is neither`},
		{"admin port", "dataDir=/d\nadmin.serverPort=0\n", "line 2: admin.serverPort"},
		{"bad clientAuth", "dataDir=/d\nssl.clientAuth=maybe\n", "line 2: ssl.clientAuth"},
		{"address without port", "dataDir=/d\nclientPortAddress=127.0.0.1\n", "line 2: clientPortAddress: is set but clientPort is not"},
		{"min above max", "dataDir=/d\nminSessionTimeout=9000\nmaxSessionTimeout=8000\n", "line 2: minSessionTimeout"},
		{"electionAlg", "dataDir=/d\nelectionAlg=1\n", "line 2: electionAlg"},
		{"server id", "dataDir=/d\nserver.x=a:1:2\n", "line 2: server.x"},
		{"server id zero", "dataDir=/d\nserver.0=a:1:2\n", "line 2: server.0"},
		{"server too few parts", "dataDir=/d\nserver.1=a:1\n", "line 2: server.1"},
		{"server port", "dataDir=/d\nserver.1=a:x:2\n", "line 2: server.1: quorum port"},
		{"server port range", "dataDir=/d\nserver.1=a:1:99999\n", "line 2: server.1: election port"},
		{"same ports", "dataDir=/d\nserver.1=a:5:5\n", "line 2: server.1: quorum and election port"},
		{"bad role", "dataDir=/d\nserver.1=a:1:2:leader\n", "line 2: server.1: role"},
		{"bad client part", "dataDir=/d\nserver.1=a:1:2;a:b:3\n", "line 2: server.1: client part"},
		{"multi address", "dataDir=/d\nserver.1=a:1:2|b:1:2\n", "line 2: server.1: \"a:1:2|b:1:2\" lists several addresses"},
		{"bracket", "dataDir=/d\nserver.1=[::1:1:2\n", "line 2: server.1"},
		{"duplicate id", "dataDir=/d\nserver.1=a:1:2\nserver.01=b:1:2\n", "line 3: server.01: server id 1 is already given on line 2"},
		{"duplicate key", "dataDir=/d\nserver.1=a:1:2\nserver.1=b:1:2\n", "line 3: server.1: server id 1 is already given"},
		{"observers only", "dataDir=/d\nserver.1=a:1:2:observer\n", "observers without participants"},
		{"group", "dataDir=/d\ngroup.1=1:2\n", "line 2: group.1: hierarchical"},
		{"unknown hutch key", "dataDir=/d\nhutch.peerSecret=/s\n", "line 2: hutch.peerSecret: unknown hutch key"},
		{"server line with dynamic file", "dataDir=/d\ndynamicConfigFile=/x\nserver.1=a:1:2\n", "line 3: server.1: must be in the dynamic config file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %+v, err %v; want an error containing %q", c, err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("%v is not a *zoocfg.Error", err)
			}
		})
	}
}

// writeFiles writes name→content under a fresh directory, replacing
// "$DIR" in contents, and returns the directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(content, "$DIR", dir)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const ensembleCfg = "dataDir=$DIR/data\ninitLimit=5\nsyncLimit=2\nclientPort=2181\n" +
	"server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.2:2888:3888\nserver.3=127.0.0.3:2888:3888\n"

func TestLoad(t *testing.T) {
	dir := writeFiles(t, map[string]string{"zoo.cfg": ensembleCfg, "data/myid": "2\n"})
	c, err := Load(filepath.Join(dir, "zoo.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if c.MyID != 2 || !c.Distributed() || c.ClientAddr() != ":2181" {
		t.Errorf("MyID %d, Distributed %v, ClientAddr %q", c.MyID, c.Distributed(), c.ClientAddr())
	}

	// A dynamic file holds the members; this server's client address
	// comes from its line.
	dir = writeFiles(t, map[string]string{
		"zoo.cfg":         "dataDir=$DIR/data\ninitLimit=5\nsyncLimit=2\ndynamicConfigFile=$DIR/zoo.cfg.dynamic\n",
		"zoo.cfg.dynamic": "server.1=127.0.0.1:2888:3888;2181\nserver.2=127.0.0.2:2888:3888:participant;127.0.0.2:2181\nversion=100000000\n",
		"data/myid":       "2",
	})
	if c, err = Load(filepath.Join(dir, "zoo.cfg")); err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) != 2 || c.ClientAddr() != "127.0.0.2:2181" {
		t.Errorf("Servers %+v, ClientAddr %q", c.Servers, c.ClientAddr())
	}

	// Standalone needs no myid.
	dir = writeFiles(t, map[string]string{"zoo.cfg": "dataDir=$DIR/data\nclientPort=2181\n"})
	if c, err = Load(filepath.Join(dir, "zoo.cfg")); err != nil || c.MyID != 0 || c.Distributed() {
		t.Errorf("standalone: %+v %v", c, err)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no myid", map[string]string{"zoo.cfg": ensembleCfg}, "holds no myid file"},
		{"myid not a number", map[string]string{"zoo.cfg": ensembleCfg, "data/myid": "two\n"}, `server id "two" is not a positive number`},
		{"myid not a member", map[string]string{"zoo.cfg": ensembleCfg, "data/myid": "7\n"}, "myid 7 is not one of the server.N lines"},
		{"no initLimit", map[string]string{"zoo.cfg": strings.Replace(ensembleCfg, "initLimit=5\n", "", 1), "data/myid": "1"}, "initLimit: is not set"},
		{"no syncLimit", map[string]string{"zoo.cfg": strings.Replace(ensembleCfg, "syncLimit=2\n", "", 1), "data/myid": "1"}, "syncLimit: is not set"},
		{"client address differs", map[string]string{
			"zoo.cfg":   strings.Replace(ensembleCfg, "3888\nserver.2", "3888;127.0.0.1:2182\nserver.2", 1) + "clientPortAddress=127.0.0.1\n",
			"data/myid": "1",
		}, "line 5: server.1: client address 127.0.0.1:2182 differs"},
		{"dynamic file with other keys", map[string]string{
			"zoo.cfg": "dataDir=$DIR/data\ndynamicConfigFile=$DIR/dyn\n",
			"dyn":     "server.1=a:1:2\ntickTime=5\n",
		}, "dyn line 2: tickTime: unrecognised parameter"},
		{"bad line names the file", map[string]string{"zoo.cfg": "dataDir=/d\nclientPort=x\n"}, "zoo.cfg line 2: clientPort"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, tc.files)
			c, err := Load(filepath.Join(dir, "zoo.cfg"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %+v, err %v; want an error containing %q", c, err, tc.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"dataDir=/d\n",
		"dataDir=/d\nclientPort=2181\nserver.1=a:1:2\nserver.2=[::1]:3:4:observer;127.0.0.1:5\n",
		"a \\\n b\n#c\n!d\nk\\u0041=v",
		"dataDir=/d\nminSessionTimeout=1\nmaxSessionTimeout=0\n",
		"dataDir=/d\nserver.1=[::1\nssl.clientAuth=\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c, err := Parse(strings.NewReader(in))
		if err != nil {
			var e *Error
			if _, rerr := ReadProperties(strings.NewReader(in)); rerr == nil && !errors.As(err, &e) {
				t.Fatalf("decoding error %v is not a *zoocfg.Error", err)
			}
			return
		}
		if c.DataDir == "" || c.TickTime <= 0 || c.MinSessionTimeout > c.MaxSessionTimeout {
			t.Fatalf("accepted an invalid config: %+v", c)
		}
		for id, s := range c.Servers {
			if id != s.ID || s.QuorumPort < 1 || s.QuorumPort > 65535 || s.QuorumPort == s.ElectionPort {
				t.Fatalf("accepted a bad server: %+v", s)
			}
		}
		_ = c.ClientAddr()
		_ = c.Distributed()
	})
}
