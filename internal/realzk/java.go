package realzk

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// curatorJars is the classpath of a Curator program in JavaDir; their
// manifests' Class-Path entries bring in the rest (guava, jute, netty,
// slf4j-api). slf4j-simple sends Curator's warnings to stderr.
var curatorJars = []string{
	"curator-recipes.jar", "curator-framework.jar", "curator-client.jar",
	"zookeeper.jar", "slf4j-simple.jar",
}

// javacTimeout bounds one javac run, JVM start included.
const javacTimeout = 60 * time.Second

// CompileCurator compiles the Java program src against Debian's Curator
// and ZooKeeper jars, and any extra jars of JavaDir (junit4.jar, ...), into
// a directory removed when tb ends, and returns the classpath that runs
// it. It skips tb (fails it under CI) when java, javac or a jar is
// missing.
func CompileCurator(tb testing.TB, src string, extra ...string) string {
	tb.Helper()
	return CompileCuratorAll(tb, []string{src}, extra...)
}

// CompileCuratorAll is CompileCurator for several sources at once: one
// javac run.
func CompileCuratorAll(tb testing.TB, srcs []string, extra ...string) string {
	tb.Helper()
	for _, tool := range []string{"java", "javac"} {
		if _, err := exec.LookPath(tool); err != nil {
			Unavailable(tb, tool+" (Debian's default-jdk-headless)")
		}
	}
	all := append(append([]string(nil), curatorJars...), extra...)
	jars := make([]string, len(all))
	for i, jar := range all {
		jars[i] = filepath.Join(JavaDir, jar)
		if _, err := os.Stat(jars[i]); err != nil {
			Unavailable(tb, jars[i]+" (Debian's libcurator-*-java, libzookeeper-java, libslf4j-java)")
		}
	}
	dir := tb.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), javacTimeout)
	defer cancel()
	args := append([]string{"-nowarn", "-encoding", "UTF-8", "-cp", strings.Join(jars, ":"), "-d", dir}, srcs...)
	out, err := exec.CommandContext(ctx, "javac", args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("javac %s: %v\n%s", strings.Join(srcs, " "), err, out)
	}
	return strings.Join(append([]string{dir}, jars...), ":")
}
