package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
)

// kazooRecipesScript is the Python program TestKazooRecipes runs.
const kazooRecipesScript = "testdata/kazoo/recipes.py"

// kazooRecipesTimeout bounds one run of every scenario; each scenario has
// its own, shorter, limit inside the script.
const kazooRecipesTimeout = 4 * time.Minute

// kazooRecipeLine is one line the script prints: a scenario's result or
// the error that ended it.
type kazooRecipeLine struct {
	Scenario  string         `json:"scenario"`
	Result    map[string]any `json:"result"`
	Error     string         `json:"error"`
	ElapsedMS int64          `json:"elapsed_ms"`
}

// TestKazooRecipes runs kazoo's recipes (Debian's python3-kazoo) against
// each target: Lock, ReadLock/WriteLock, Semaphore, Election, Party,
// Counter, Barrier, DoubleBarrier, Queue, LockingQueue, DataWatch,
// ChildrenWatch and TreeCache, several clients and threads each. One
// Python process per target runs every scenario; each scenario is a
// subtest checking what it recorded.
func TestKazooRecipes(t *testing.T) {
	forEachTarget(t, func(t *testing.T, addr string, _ *ledger) {
		results := runKazooRecipes(t, addr)
		for _, sc := range kazooRecipeScenarios {
			t.Run(sc.name, func(t *testing.T) {
				l, ok := results[sc.name]
				switch {
				case !ok:
					t.Fatalf("the script printed nothing for %s", sc.name)
				case l.Error != "":
					t.Fatalf("%s failed in Python: %s", sc.name, l.Error)
				}
				t.Logf("ran in %dms", l.ElapsedMS)
				sc.check(t, kazooRecipeResult(l.Result))
			})
		}
	})
}

// runKazooRecipes runs the script against addr and returns its lines by
// scenario; kazoo's logs (stderr) are shown if the test fails.
func runKazooRecipes(t *testing.T, addr string) map[string]kazooRecipeLine {
	t.Helper()
	if _, err := os.Stat(realzk.Python); err != nil {
		realzk.Unavailable(t, realzk.Python)
	}
	if err := exec.Command(realzk.Python, "-c", "import kazoo.recipe.cache").Run(); err != nil {
		realzk.Unavailable(t, "kazoo for "+realzk.Python+" (Debian's python3-kazoo)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), kazooRecipesTimeout)
	defer cancel()
	cmd := groupCommand(ctx, realzk.Python, kazooRecipesScript, addr)
	var stdout bytes.Buffer
	stderr := newLogBuffer()
	dumpOnFailure(t, "kazoo recipes stderr", stderr)
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s after %v: %v\nstdout:\n%s", kazooRecipesScript, time.Since(start).Round(time.Millisecond), err, stdout.String())
	}
	t.Logf("%s ran in %v", kazooRecipesScript, time.Since(start).Round(time.Millisecond))

	results := make(map[string]kazooRecipeLine)
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l kazooRecipeLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s printed %q: %v", kazooRecipesScript, sc.Text(), err)
		}
		results[l.Scenario] = l
	}
	return results
}

// kazooRecipeResult is what one scenario recorded, as decoded from JSON.
type kazooRecipeResult map[string]any

// want reports every key whose value differs from the one given. Wanted
// values go through JSON too, so 3 matches 3.0 and []string matches []any.
func (r kazooRecipeResult) want(t *testing.T, want map[string]any) {
	t.Helper()
	for k, w := range want {
		b, err := json.Marshal(w)
		if err != nil {
			t.Fatalf("want[%s]: %v", k, err)
		}
		var norm any
		if err := json.Unmarshal(b, &norm); err != nil {
			t.Fatalf("want[%s]: %v", k, err)
		}
		got, ok := r[k]
		if !ok {
			t.Errorf("%s: not recorded, want %s", k, b)
		} else if !reflect.DeepEqual(got, norm) {
			g, _ := json.Marshal(got)
			t.Errorf("%s = %s, want %s", k, g, b)
		}
	}
}

// int returns a recorded number.
func (r kazooRecipeResult) int(t *testing.T, key string) int {
	t.Helper()
	f, ok := r[key].(float64)
	if !ok {
		t.Errorf("%s = %v, want a number", key, r[key])
	}
	return int(f)
}
