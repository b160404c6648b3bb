package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestSplit(t *testing.T) {
	for _, tt := range []struct{ name, check, target string }{
		{"TestGoZK/zookeeper", "TestGoZK", "zookeeper"},
		{"TestCurator/hutch-binary/mutex-stock", "TestCurator/mutex-stock", "hutch-binary"},
		{"TestDifferential/seed=1", "TestDifferential/seed=1", "both"},
	} {
		if c, tg := split(tt.name); c != tt.check || tg != tt.target {
			t.Errorf("split(%q) = %q, %q", tt.name, c, tg)
		}
	}
}

func TestCollectAndRender(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"pass","Test":"TestRecipeStockDeduction/zookeeper"}`,
		`{"Action":"output","Test":"TestRecipeStockDeduction/hutch","Output":"    RESULT recipe=stock-deduction target=hutch handoffs=4999 events=4999 events_per_handoff=1.00 ops_per_sec=765.0\n"}`,
		`{"Action":"fail","Test":"TestRecipeStockDeduction/hutch"}`,
		`{"Action":"pass","Test":"TestRecipeStockDeduction"}`,
		`not json`,
	}, "\n")
	results, tp, err := collect(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	render(&b, results, tp, time.Second)
	out := b.String()
	for _, want := range []string{"| hutch | 765.0 |", "| TestRecipeStockDeduction | pass | fail |  |  |", "1 pass, 1 fail"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
