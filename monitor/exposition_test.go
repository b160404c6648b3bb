package monitor_test

import (
	"bufio"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hutchzk/hutch/monitor"
	"github.com/hutchzk/hutch/monitor/prometheus"
)

// TestMetricsExposition: /metrics, as the hutch command serves it
// (monitor/prometheus), is byte for byte what it was when the monitor
// linked the Prometheus client itself (testdata/metrics-*.txt, written by
// that code from the same fixtures), and carries the same Go runtime and
// process families, whose values change from one scrape to the next.
func TestMetricsExposition(t *testing.T) {
	runtimeWant := readLines(t, "testdata/metrics-runtime.txt")
	for _, mode := range []string{"leader", "follower", "standalone"} {
		t.Run(mode, func(t *testing.T) {
			rec := httptest.NewRecorder()
			prometheus.Handler(monitor.MetricsFixture(t, mode)).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			ours, runtime := splitRuntime(rec.Body.String())
			want, err := os.ReadFile("testdata/metrics-" + mode + ".txt")
			if err != nil {
				t.Fatal(err)
			}
			if ours, want := maskProcess(ours), maskProcess(string(want)); ours != want {
				t.Errorf("/metrics differs from testdata/metrics-%s.txt:\n%s", mode, firstDiff(ours, string(want)))
			}
			if !slices.Equal(runtime, runtimeWant) {
				t.Errorf("runtime and process families %v, want %v", runtime, runtimeWant)
			}
		})
	}
}

// TestMetricsHandler: /metrics answers the text format's content type,
// gzipped for a scraper that accepts it.
func TestMetricsHandler(t *testing.T) {
	h := prometheus.Handler(monitor.MetricsFixture(t, "leader"))
	for _, gz := range []bool{false, true} {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if gz {
			r.Header.Set("Accept-Encoding", "gzip")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := io.Reader(rec.Body)
		if gz {
			zr, err := gzip.NewReader(rec.Body)
			if err != nil || rec.Header().Get("Content-Encoding") != "gzip" {
				t.Fatalf("gzip asked: %q, %v", rec.Header().Get("Content-Encoding"), err)
			}
			body = zr
		}
		text, _ := io.ReadAll(body)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8; escaping=underscores" ||
			!strings.Contains(string(text), "\nznode_count 7\n") || !strings.Contains(string(text), "\ngo_goroutines ") {
			t.Errorf("gzip %v: %d %q\n%.300s", gz, rec.Code, rec.Header().Get("Content-Type"), text)
		}
	}
}

// splitRuntime separates the go_ and process_ families from the others
// and returns the others' text and the runtime families' names.
func splitRuntime(text string) (string, []string) {
	var keep strings.Builder
	var names []string
	skip := false
	for _, line := range strings.SplitAfter(text, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" {
			skip = strings.HasPrefix(f[2], "go_") || strings.HasPrefix(f[2], "process_")
			if skip && f[1] == "TYPE" {
				names = append(names, f[2])
			}
		}
		if !skip {
			keep.WriteString(line)
		}
	}
	return keep.String(), names
}

// processValue is a sample read from the process (mntr's descriptor
// counts), which differs from run to run.
var processValue = regexp.MustCompile(`(?m)^((?:open|max)_file_descriptor_count) \d+$`)

func maskProcess(text string) string { return processValue.ReplaceAllString(text, "$1 N") }

func readLines(tb testing.TB, path string) []string {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		out = append(out, sc.Text())
	}
	return out
}

// firstDiff shows the first line where got and want part.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n got  " + gl + "\n want " + wl
		}
	}
	return "(same lines)"
}
