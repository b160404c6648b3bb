package hutchtest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLightImport: a test that imports hutchtest links no metrics
// library, command-line or benchmark code: the hutch command plugs
// Prometheus in (monitor/prometheus), and the CLI and the benchmarks are
// packages of their own. Each of these once came with the import, and a
// cold build of a user's tests paid for them.
func TestLightImport(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".", "../server").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, heavy := range []string{"github.com/prometheus/", "google.golang.org/protobuf", "github.com/spf13/pflag",
			"github.com/hutchzk/hutch/cli", "github.com/hutchzk/hutch/bench", "github.com/hutchzk/hutch/monitor/prometheus",
			"github.com/chromedp/"} {
			if strings.HasPrefix(dep, heavy) {
				t.Errorf("hutchtest or server imports %s", dep)
			}
		}
	}
}
