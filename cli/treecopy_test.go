package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDumpLoad: dump -s writes a subtree with its Stats to a file, load
// puts it under another path, and the copy holds the same data and ACLs.
func TestDumpLoad(t *testing.T) {
	addr := startServer(t)
	file := filepath.Join(t.TempDir(), "app.json")
	script := strings.Join([]string{
		"addauth digest u:p",
		"create /app top",
		"create /app/a one",
		"create /app/a/b two digest:u:Jq7wMyA/w2Vd5WIDAKdu4OIIFEQ=:cdrwa",
		"dump -s /app " + file,
		"load " + file + " /copy",
		"get /copy/a",
		"getAcl /copy/a/b",
		"load " + file + " /copy",
	}, "\n") + "\n"
	out, _ := run(t, script, "-server", addr)
	for _, want := range []string{
		"dumped 3 nodes to " + file,
		"created 3 nodes",
		"one\n",
		"'digest,'u:Jq7wMyA/w2Vd5WIDAKdu4OIIFEQ=\n: cdrwa",
		"create /copy: zookeeper: NODEEXISTS for /copy (0 nodes created before it)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
