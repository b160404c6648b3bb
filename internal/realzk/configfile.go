package realzk

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// ConfigProcess is one server to start from a configuration file the test
// wrote: its zoo.cfg and the client address that file makes it listen on.
type ConfigProcess struct {
	ConfigFile string
	ClientAddr string
}

// adminServerJars are what ZooKeeper's JettyAdminServer needs besides
// zookeeper.jar, whose manifest does not name them: without them ZooKeeper
// logs "Unable to load jetty" and serves no admin HTTP.
var adminServerJars = []string{
	"jetty9-server.jar", "jetty9-servlet.jar", "jetty9-util.jar", "jetty9-http.jar", "jetty9-io.jar",
	"jetty9-security.jar", "servlet-api.jar", "jackson-databind.jar", "jackson-core.jar", "jackson-annotations.jar",
}

// AdminServerInstalled reports whether Debian's jetty and jackson jars are
// there, so StartZooKeeperConfigs' servers serve admin.serverPort.
func AdminServerInstalled() bool {
	for _, jar := range adminServerJars {
		if _, err := os.Stat(filepath.Join(JavaDir, jar)); err != nil {
			return false
		}
	}
	return true
}

// StartZooKeeperConfigs runs real ZooKeeper (QuorumPeerMain, as
// zkServer.sh does) on each zoo.cfg unchanged, concurrently, and returns
// once every client port accepts connections; ZooKeeper listens before its
// election, so quorum is not waited for (see Mode). Only logging (a log4j file next to
// each zoo.cfg) and, when installed, the admin server's jars are added. The servers are stopped by pid when
// the test ends. Without Debian's ZooKeeper the test is skipped (failed
// under CI=true).
func StartZooKeeperConfigs(tb testing.TB, procs []ConfigProcess) []*Server {
	tb.Helper()
	if !Installed() {
		Unavailable(tb, "Debian's zookeeper package")
	}
	return startConfigs(tb, "zookeeper", procs, func(p ConfigProcess) (*exec.Cmd, string, error) {
		dir := filepath.Dir(p.ConfigFile)
		logFile := filepath.Join(dir, "zookeeper.log")
		log4jFile := filepath.Join(dir, "log4j.properties")
		log4j := "log4j.rootLogger=INFO, FILE\n" +
			"log4j.appender.FILE=org.apache.log4j.FileAppender\n" +
			"log4j.appender.FILE.File=" + logFile + "\n" +
			"log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n" +
			"log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] %m%n\n"
		if err := os.WriteFile(log4jFile, []byte(log4j), 0o644); err != nil {
			return nil, "", err
		}
		cp := []string{dir}
		for _, jar := range serverJars {
			cp = append(cp, filepath.Join(JavaDir, jar))
		}
		if AdminServerInstalled() {
			for _, jar := range adminServerJars {
				cp = append(cp, filepath.Join(JavaDir, jar))
			}
		}
		cmd := exec.Command("java",
			"-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
			"-Djava.net.preferIPv4Stack=true", "-Dlog4j.configuration=file:"+log4jFile,
			"-cp", strings.Join(cp, ":"), "org.apache.zookeeper.server.quorum.QuorumPeerMain", p.ConfigFile)
		return cmd, logFile, nil
	})
}

// StartHutchConfigs runs the hutch binary bin with each zoo.cfg as its
// one argument (as zkServer.sh passes it), concurrently, and returns once
// every client port accepts connections. The processes are stopped by pid
// when the test ends.
func StartHutchConfigs(tb testing.TB, bin string, procs []ConfigProcess) []*Server {
	tb.Helper()
	return startConfigs(tb, "hutch", procs, func(p ConfigProcess) (*exec.Cmd, string, error) {
		cmd := exec.Command(bin, p.ConfigFile)
		return cmd, filepath.Join(filepath.Dir(p.ConfigFile), fmt.Sprintf("hutch.%d.log", time.Now().UnixNano())), nil
	})
}

// startConfigs launches one process per configuration concurrently. Their
// ports come from files the test wrote, so a port taken meanwhile fails
// the test rather than being retried.
func startConfigs(tb testing.TB, what string, procs []ConfigProcess, command func(ConfigProcess) (*exec.Cmd, string, error)) []*Server {
	tb.Helper()
	servers := make([]*Server, len(procs))
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() {
			cmd, logFile, err := command(p)
			if err != nil {
				errs[i] = err
				return
			}
			cmd.Dir = filepath.Dir(p.ConfigFile)
			servers[i], err = launch(cmd, p.ClientAddr, cmd.Dir, logFile, acceptsConnections)
			errs[i] = classifyStartError(err, logFile)
		})
	}
	wg.Wait()
	for i, s := range servers {
		if s == nil {
			continue
		}
		tb.Cleanup(func() {
			if err := s.Stop(); err != nil {
				tb.Errorf("stop %s %d: %v", what, i+1, err)
			}
			if tb.Failed() {
				tb.Logf("%s %d log tail (%s):\n%s", what, i+1, s.LogFile, s.LogTail(8<<10))
			}
		})
	}
	if err := errors.Join(errs...); err != nil {
		tb.Fatalf("start %s: %v", what, err)
	}
	return servers
}

// acceptsConnections is ready once the client port accepts a connection:
// an ensemble member listens before it has a quorum, and until then may
// close connections at once.
func acceptsConnections(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	return c.Close()
}
