package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
)

// docBlock returns the fenced block of docs/operations.md opened with
// "```text <tag>".
func docBlock(tb testing.TB, tag string) string {
	tb.Helper()
	md, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		tb.Fatal(err)
	}
	m := regexp.MustCompile("(?ms)^```text " + regexp.QuoteMeta(tag) + "\\n(.*?)^```").FindSubmatch(md)
	if m == nil {
		tb.Fatalf("docs/operations.md has no ```text %s block", tag)
	}
	return string(m[1])
}

// TestQuotaDocExample runs the worked example of docs/operations.md's
// Quotas section as it is written there: each "> command" through hutch
// cli against hutch --enforce-quota, its output compared with the lines
// below it; then the warnings the doc says the server logged must be in
// its log.
func TestQuotaDocExample(t *testing.T) {
	srv := realzk.StartHutchBinary(t, realzk.BuildHutch(t), "--enforce-quota")
	var cmd string
	var want []string
	check := func() {
		t.Helper()
		if cmd == "" {
			return
		}
		got, _ := run(t, "", append([]string{"-server", srv.Addr}, splitLine(cmd)...)...)
		if exp := strings.Join(want, ""); got != exp {
			t.Errorf("> %s\nprinted:\n%s\nthe doc says:\n%s", cmd, got, exp)
		}
	}
	for _, line := range strings.SplitAfter(docBlock(t, "cli=quota"), "\n") {
		if c, ok := strings.CutPrefix(line, "> "); ok {
			check()
			cmd, want = strings.TrimSuffix(c, "\n"), nil
			continue
		}
		if line != "" {
			want = append(want, line)
		}
	}
	check()
	for _, w := range strings.Split(strings.TrimSpace(docBlock(t, "log=quota")), "\n") {
		deadline := time.Now().Add(waitLong)
		for !strings.Contains(srv.LogTail(1<<20), `level=WARN msg="`+w+`"`) {
			if time.Now().After(deadline) {
				t.Fatalf("the server did not log %q:\n%s", w, srv.LogTail(4096))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
