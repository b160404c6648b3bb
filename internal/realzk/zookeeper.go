package realzk

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Where Debian's packages put ZooKeeper 3.8 and its clients.
const (
	// JavaDir holds the jars of Debian's Java packages.
	JavaDir = "/usr/share/java"
	// ZkCli is ZooKeeper's Java command-line client.
	ZkCli = "/usr/share/zookeeper/bin/zkCli.sh"
	// CliMT is ZooKeeper's C command-line client (multi-threaded library).
	CliMT = "/usr/lib/zookeeper/bin/cli_mt"
	// Python is the interpreter Debian's python3-kazoo is installed for;
	// another python3 earlier on PATH would not find kazoo.
	Python = "/usr/bin/python3"
)

// serverJars is the server's classpath besides its conf dir. zookeeper.jar's
// manifest Class-Path names everything else it needs (jute, netty, metrics,
// slf4j-api, …); the two logging jars route slf4j to log4j so the server
// logs into a file instead of slf4j's no-op logger.
var serverJars = []string{"zookeeper.jar", "slf4j-log4j12.jar", "log4j-1.2.jar"}

// Installed reports whether Debian's ZooKeeper server and a java runtime are
// present, so that Start can run.
func Installed() bool {
	if _, err := exec.LookPath("java"); err != nil {
		return false
	}
	for _, jar := range serverJars {
		if _, err := os.Stat(filepath.Join(JavaDir, jar)); err != nil {
			return false
		}
	}
	return true
}

// Option changes how Start configures ZooKeeper.
type Option func(*options)

type options struct {
	tickTime time.Duration
	config   [][2]string // extra zoo.cfg lines, in order
	props    [][2]string // extra JVM system properties
	jars     []string    // extra classpath entries, in JavaDir
	// heap, when set, runs the JVM as an operator would (OperatorJVM).
	heap string
	// prepare, when set, fills the data directory before the server
	// starts (Prepare).
	prepare func(dataDir string) error
	// dataIn, when set, is where the data directories go (DataIn).
	dataIn string
}

// DataIn keeps the servers' data directories in a directory made under
// dir (and removed when the test ends) instead of the test's temporary
// directory: under /dev/shm a benchmark takes the disk out of what it
// compares.
func DataIn(dir string) Option {
	return func(o *options) { o.dataIn = dir }
}

// dataBase is the directory the data directories of a server or an
// ensemble started with opts go in.
func dataBase(tb testing.TB, opts []Option) string {
	tb.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.dataIn == "" {
		return tb.TempDir()
	}
	dir, err := os.MkdirTemp(o.dataIn, "realzk-")
	if err != nil {
		tb.Fatalf("realzk: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Prepare calls fill with the server's data directory (for an ensemble,
// each member's) before the server starts, to start it from files a
// test wrote there (a snapshot to load).
func Prepare(fill func(dataDir string) error) Option {
	return func(o *options) { o.prepare = fill }
}

// OperatorJVM runs ZooKeeper's JVM as an operator would, for speed and
// memory comparisons: the default garbage collector and the optimizing
// compiler, with heap as -Xms and -Xmx (e.g. "2g"). Without it a test's
// server starts lean (a small heap, serial GC and the quick compiler only),
// which suits tests and understates ZooKeeper's throughput.
func OperatorJVM(heap string) Option {
	return func(o *options) { o.heap = heap }
}

// TickTime sets zoo.cfg's tickTime (2 s by default), which also scales the
// default session timeout bounds (2 and 20 ticks).
func TickTime(d time.Duration) Option {
	return func(o *options) { o.tickTime = d }
}

// Config adds a zoo.cfg line key=value, e.g. Config("minSessionTimeout", "4000").
func Config(key, value string) Option {
	return func(o *options) { o.config = append(o.config, [2]string{key, value}) }
}

// configured reports whether a test set key with Config.
func (o *options) configured(key string) bool {
	for _, kv := range o.config {
		if kv[0] == key {
			return true
		}
	}
	return false
}

// SystemProperty adds a JVM flag -Dkey=value, e.g.
// SystemProperty("znode.container.checkIntervalMs", "500").
func SystemProperty(key, value string) Option {
	return func(o *options) { o.props = append(o.props, [2]string{key, value}) }
}

// Jars adds jars from JavaDir to the server's classpath, e.g. the netty
// codec and resolver jars that Debian's zookeeper.jar manifest leaves out
// and NettyServerCnxnFactory needs.
func Jars(names ...string) Option {
	return func(o *options) { o.jars = append(o.jars, names...) }
}

// Start runs ZooKeeper standalone on a free loopback port with a fresh data
// directory and returns once it answers imok. The server is stopped when the
// test ends. Without Debian's ZooKeeper the test is skipped (failed under
// CI=true).
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	if !Installed() {
		Unavailable(tb, "Debian's zookeeper package")
	}
	o := options{tickTime: 2 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	base := dataBase(tb, opts)
	attempt := 0
	return startWithRetry(tb, "zookeeper", func(port int) (*Server, error) {
		attempt++
		dir := filepath.Join(base, strconv.Itoa(attempt))
		cmd, logFile, err := zookeeperCommand(dir, port, o)
		if err != nil {
			return nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		s, err := launch(cmd, addr, dir, logFile, zookeeperServing)
		return s, classifyStartError(err, logFile)
	})
}

// ZooKeeperCommand prepares, in dir, a standalone ZooKeeper on port with
// the defaults Start uses, and returns the command that runs it, not yet
// started (benchmarks time its start themselves); its log goes to
// dir/zookeeper.log. It skips tb without Debian's ZooKeeper.
func ZooKeeperCommand(tb testing.TB, dir string, port int) *exec.Cmd {
	tb.Helper()
	if !Installed() {
		Unavailable(tb, "Debian's zookeeper package")
	}
	cmd, _, err := zookeeperCommand(dir, port, options{tickTime: 2 * time.Second})
	if err != nil {
		tb.Fatalf("zookeeper command: %v", err)
	}
	return cmd
}

// zookeeperServing is ready once ZooKeeper serves clients. ZooKeeper answers
// ruok with imok as soon as it listens, before its database is loaded; until
// then it drops client connections and answers srvr with "This ZooKeeper
// instance is not currently serving requests".
func zookeeperServing(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	if err := answersImok(addr, timeout); err != nil {
		return err
	}
	reply, err := FourLetterWord(addr, "srvr", time.Until(deadline))
	if err == nil && !strings.Contains(reply, "Mode: standalone") {
		err = fmt.Errorf("srvr answered %q", reply)
	}
	return err
}

// zookeeperCommand writes zoo.cfg and log4j.properties into dir and returns
// the java command that runs ZooKeeperServerMain on them.
func zookeeperCommand(dir string, port int, o options) (*exec.Cmd, string, error) {
	conf := filepath.Join(dir, "conf")
	data := filepath.Join(dir, "data")
	for _, d := range []string{conf, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, "", err
		}
	}
	if o.prepare != nil {
		if err := o.prepare(data); err != nil {
			return nil, "", fmt.Errorf("prepare %s: %w", data, err)
		}
	}
	logFile := filepath.Join(dir, "zookeeper.log")

	var cfg strings.Builder
	fmt.Fprintf(&cfg, "tickTime=%d\n", o.tickTime.Milliseconds())
	fmt.Fprintf(&cfg, "dataDir=%s\n", data)
	fmt.Fprintf(&cfg, "clientPort=%d\n", port)
	cfg.WriteString("clientPortAddress=127.0.0.1\n")
	// The AdminServer stays off unless a test asks for it with
	// Config("admin.enableServer", "true") and a free admin.serverPort.
	admin := o.configured("admin.enableServer")
	if !admin {
		cfg.WriteString("admin.enableServer=false\n")
	}
	if !o.configured("4lw.commands.whitelist") {
		cfg.WriteString("4lw.commands.whitelist=*\n")
	}
	cfg.WriteString("maxClientCnxns=0\n")
	for _, kv := range o.config {
		fmt.Fprintf(&cfg, "%s=%s\n", kv[0], kv[1])
	}
	cfgFile := filepath.Join(conf, "zoo.cfg")
	if err := os.WriteFile(cfgFile, []byte(cfg.String()), 0o644); err != nil {
		return nil, "", err
	}

	// log4j's FileAppender writes the log; stdout and stderr (JVM crashes,
	// slf4j warnings) go to the same file through launch.
	log4j := "log4j.rootLogger=INFO, FILE\n" +
		"log4j.appender.FILE=org.apache.log4j.FileAppender\n" +
		"log4j.appender.FILE.File=" + logFile + "\n" +
		"log4j.appender.FILE.Append=true\n" +
		"log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n" +
		"log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] %m%n\n"
	log4jFile := filepath.Join(conf, "log4j.properties")
	if err := os.WriteFile(log4jFile, []byte(log4j), 0o644); err != nil {
		return nil, "", err
	}

	cp := []string{conf}
	for _, jar := range append(append([]string(nil), serverJars...), o.jars...) {
		cp = append(cp, filepath.Join(JavaDir, jar))
	}
	if admin {
		// Debian's zookeeper.jar names Jetty in its manifest but not the
		// servlet API Jetty needs.
		cp = append(cp, filepath.Join(JavaDir, "servlet-api.jar"))
	}
	// A small heap and the C1 compiler only: a test server needs neither
	// peak throughput nor a quarter of the machine's memory, and starts
	// faster on a loaded machine.
	jvm := []string{"-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData"}
	if o.heap != "" {
		jvm = []string{"-Xms" + o.heap, "-Xmx" + o.heap}
	}
	args := append(jvm,
		"-Djava.net.preferIPv4Stack=true",
		"-Dlog4j.configuration=file:"+log4jFile,
		"-Dzookeeper.extendedTypesEnabled=true",
	)
	if !o.configured("4lw.commands.whitelist") {
		args = append(args, "-Dzookeeper.4lw.commands.whitelist=*")
	}
	if !admin {
		args = append(args, "-Dzookeeper.admin.enableServer=false")
	}
	for _, kv := range o.props {
		args = append(args, "-D"+kv[0]+"="+kv[1])
	}
	args = append(args, "-cp", strings.Join(cp, ":"),
		"org.apache.zookeeper.server.ZooKeeperServerMain", cfgFile)
	cmd := exec.Command("java", args...)
	cmd.Dir = dir
	return cmd, logFile, nil
}
