package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyFixture copies the ZooKeeper 3.8 files zkformat's testdata holds
// into dir/data and dir/log, as ZooKeeper lays them out.
func copyFixture(t *testing.T, dir string) {
	t.Helper()
	for _, sub := range []string{"data", "log"} {
		src := filepath.Join("..", "..", "zkformat", "testdata", "zk38", sub)
		if err := os.CopyFS(filepath.Join(dir, sub, "version-2"), os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestImportExportCommands runs hutch import from a zoo.cfg and hutch
// export back, as an operator would, and the flag mistakes each refuses.
func TestImportExportCommands(t *testing.T) {
	dir := t.TempDir()
	copyFixture(t, dir)
	cfg := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte("tickTime=2000\nclientPort=2181\ndataDir="+filepath.Join(dir, "data")+"\ndataLogDir="+filepath.Join(dir, "log")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hutch")
	if err := run([]string{"import", "--zookeeper-config", cfg, "--data-dir", out, "--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	zk := filepath.Join(dir, "back")
	if err := run([]string{"export", "--data-dir", out, "--zookeeper-data-dir", zk}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"snapshot.34", "currentEpoch", "acceptedEpoch"} {
		if _, err := os.Stat(filepath.Join(zk, "version-2", f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "--data-dir", filepath.Join(dir, "x")}, "--zookeeper-data-dir or --zookeeper-config is required"},
		{[]string{"import", "--zookeeper-config", cfg, "--zookeeper-data-dir", dir, "--data-dir", filepath.Join(dir, "x")}, "do not give --zookeeper-data-dir"},
		{[]string{"import", "--zookeeper-config", cfg, "--data-dir", out}, "already holds files"},
		{[]string{"import", "--zookeeper-config", cfg, "--data-dir", filepath.Join(dir, "y"), "--peers", "1=a:1,1=b:2"}, "listed twice"},
		{[]string{"export", "--data-dir", out, "--zookeeper-data-dir", zk}, "already holds files"},
		{[]string{"export", "--data-dir", out}, "--zookeeper-data-dir is required"},
	} {
		if err := run(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("hutch %s: %v, want %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}
