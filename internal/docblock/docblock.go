package docblock

import (
	"os"
	"strings"
	"testing"
)

// Text returns the body of the fenced block of the Markdown file at path
// opened with "```text <tag>", failing tb if there is none.
func Text(tb testing.TB, path, tag string) string {
	tb.Helper()
	md, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	open := "```text " + tag + "\n"
	start := strings.Index(string(md), open)
	if start < 0 {
		tb.Fatalf("%s has no ```text %s block", path, tag)
	}
	rest := string(md[start+len(open):])
	end := strings.Index(rest, "```")
	if end < 0 {
		tb.Fatalf("%s: the ```text %s block is not closed", path, tag)
	}
	return rest[:end]
}
