package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	ten := ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	thousand := make([]time.Duration, 1000)
	for i := range thousand {
		thousand[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, c := range []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one sample is every percentile", ms(7), 0.001, 7 * time.Millisecond},
		{"one sample max", ms(7), 1, 7 * time.Millisecond},
		{"p50 of ten is the fifth", ten, 0.50, 5 * time.Millisecond},
		{"p90 of ten is the ninth, not the tenth", ten, 0.90, 9 * time.Millisecond},
		{"p99 of ten is the max", ten, 0.99, 10 * time.Millisecond},
		{"max", ten, 1, 10 * time.Millisecond},
		{"p10 of ten is the first", ten, 0.10, 1 * time.Millisecond},
		{"just above a rank takes the next", ten, 0.51, 6 * time.Millisecond},
		{"p99.9 of a thousand", thousand, 0.999, 999 * time.Millisecond},
		{"p99 of a thousand", thousand, 0.99, 990 * time.Millisecond},
		{"two samples p50 is the lower", ms(1, 2), 0.5, 1 * time.Millisecond},
	} {
		if got := Percentile(c.sorted, c.q); got != c.want {
			t.Errorf("%s: Percentile(q=%v) = %v, want %v", c.name, c.q, got, c.want)
		}
	}
}

func TestMedianAndRatio(t *testing.T) {
	in := []float64{5, 1, 3}
	if got := Median(in); got != 3 {
		t.Errorf("Median(5,1,3) = %v, want 3", got)
	}
	if in[0] != 5 || in[1] != 1 {
		t.Errorf("Median reordered its argument: %v", in)
	}
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{9}, 9},
		{[]float64{2, 2, 100}, 2},
	} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v, want NaN", got)
	}
	for _, c := range []struct {
		a, b, want float64
	}{
		{10, 5, 2},
		{5, 10, 0.5},
		{0, 10, 0},
		{10, 0, math.NaN()},
		{math.NaN(), 3, math.NaN()},
		{3, math.NaN(), math.NaN()},
	} {
		got := Ratio(c.a, c.b)
		if got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("Ratio(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestLatencyFigures(t *testing.T) {
	lat := []time.Duration{4 * time.Millisecond, time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond}
	got := latencyFigures("acquire", lat)
	want := map[string]float64{"acquire p50": 2, "acquire p90": 4, "acquire p99": 4, "acquire p99.9": 4, "acquire max": 4}
	if len(got) != len(want) {
		t.Fatalf("latencyFigures gave %d figures, want %d: %v", len(got), len(want), got)
	}
	for _, f := range got {
		if w, ok := want[f.Name]; !ok || f.Value != w || f.Unit != "ms" || f.Better != Lower {
			t.Errorf("figure %+v, want %s = %v ms, lower better", f, f.Name, w)
		}
	}
	if rate(10, 2*time.Second) != 5 || rate(10, 0) != 0 {
		t.Errorf("rate(10, 2s) = %v, rate(10, 0) = %v; want 5 and 0", rate(10, 2*time.Second), rate(10, 0))
	}
}

// TestSummarize: each figure's median is over its own side's rounds, the
// ratio is target / against, and a figure one side lacks is unknown
// there, not zero.
func TestSummarize(t *testing.T) {
	run := func(figs ...Figure) *measurement { return &measurement{figures: figs} }
	ops := func(v float64) Figure { return Figure{Name: "ops/s", Unit: "/s", Better: Higher, Value: v} }
	p99 := func(v float64) Figure { return Figure{Name: "p99", Unit: "ms", Better: Lower, Value: v} }
	rss := Figure{Name: "RSS after", Unit: "MiB", Better: Lower, Value: 50}
	target := []*measurement{run(ops(100), p99(4), rss), run(ops(300), p99(2), rss), run(ops(200), p99(3), rss)}
	against := []*measurement{run(ops(50), p99(8)), run(ops(70), p99(6)), run(ops(60), p99(1))}
	wr := &WorkloadReport{Name: "w"}
	summarize(wr, [][]*measurement{target, against})
	if len(wr.Figures) != 3 {
		t.Fatalf("%d figures, want 3: %+v", len(wr.Figures), wr.Figures)
	}
	byName := map[string]*FigureReport{}
	for _, f := range wr.Figures {
		byName[f.Name] = f
	}
	check := func(name string, tMed, aMed, ratio float64) {
		t.Helper()
		f := byName[name]
		if f == nil {
			t.Fatalf("no figure %q", name)
		}
		eq := func(a Number, b float64) bool { return float64(a) == b || math.IsNaN(float64(a)) && math.IsNaN(b) }
		if !eq(f.Target.Median, tMed) || !eq(f.Against.Median, aMed) || !eq(*f.Ratio, ratio) {
			t.Errorf("%s: target %v, against %v, ratio %v; want %v, %v, %v",
				name, f.Target.Median, f.Against.Median, *f.Ratio, tMed, aMed, ratio)
		}
	}
	check("ops/s", 200, 60, 200.0/60)
	check("p99", 3, 6, 0.5)
	check("RSS after", 50, math.NaN(), math.NaN())
	if got := byName["ops/s"].Target.Rounds; len(got) != 3 || got[0] != 100 || got[1] != 300 {
		t.Errorf("target rounds %v, want 100 300 200 in order", got)
	}

	var out bytes.Buffer
	writeTable(&out, wr, true)
	text := out.String()
	for _, want := range []string{"ops/s", "p99 (ms)", "RSS after (MiB)", "unknown", "n/a", "higher", "lower", "3.33"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "ops/s (/s)") {
		t.Errorf("table repeats the unit of a rate:\n%s", text)
	}

	// JSON: unknown values are null, not NaN (which encoding/json refuses).
	out.Reset()
	if err := writeJSON(&out, &Report{Workloads: []*WorkloadReport{wr}}); err != nil {
		t.Fatalf("writeJSON: %v", err)
	}
	var back struct {
		Workloads []struct {
			Figures []struct {
				Name    string
				Ratio   *float64
				Against struct{ Median *float64 }
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("JSON does not read back: %v\n%s", err, out.String())
	}
	for _, f := range back.Workloads[0].Figures {
		if f.Name == "RSS after" && (f.Ratio != nil || f.Against.Median != nil) {
			t.Errorf("unknown RSS reads as ratio %v, median %v; want null", f.Ratio, f.Against.Median)
		}
		if f.Name == "p99" && (f.Ratio == nil || *f.Ratio != 0.5) {
			t.Errorf("p99 ratio %v, want 0.5", f.Ratio)
		}
	}
}

// TestWriteTableOneTarget: without --against the table shows each figure's
// median and its range over the rounds.
func TestWriteTableOneTarget(t *testing.T) {
	wr := &WorkloadReport{Name: "lock", Description: "d", Notes: []string{"target: RSS unknown"}}
	summarize(wr, [][]*measurement{{
		{figures: []Figure{{Name: "handoffs/s", Unit: "/s", Better: Higher, Value: 1500}}},
		{figures: []Figure{{Name: "handoffs/s", Unit: "/s", Better: Higher, Value: 1200}}},
		{figures: []Figure{{Name: "handoffs/s", Unit: "/s", Better: Higher, Value: 9.5}}},
	}})
	var out bytes.Buffer
	writeTable(&out, wr, false)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want title, header, one row, note:\n%s", len(lines), out.String())
	}
	if f := strings.Fields(lines[1]); strings.Join(f, " ") != "figure median min max spread samples" {
		t.Errorf("header %q", lines[1])
	}
	// The spread is (max - min) / median: (1500 - 9.5) / 1200.
	if f := strings.Fields(lines[2]); strings.Join(f, " ") != "handoffs/s 1200 9.50 1500 124.2%" {
		t.Errorf("row %q, want handoffs/s 1200 9.50 1500 124.2%%", lines[2])
	}
	if !strings.Contains(lines[3], "note: target: RSS unknown") {
		t.Errorf("note line %q", lines[3])
	}
}

// TestWriteTableSamplesAndResolution: a percentile shows how many samples
// it was taken from, and the server's CPU per operation how finely /proc's
// ticks let it be known; with --against, each side's spread.
func TestWriteTableSamplesAndResolution(t *testing.T) {
	round := func(p99, cpu float64, samples int) *measurement {
		return &measurement{figures: []Figure{
			{Name: "p99", Unit: "ms", Better: Lower, Value: p99, Samples: samples},
			{Name: "server CPU per op", Unit: "µs", Better: Lower, Value: cpu, Resolution: 10000.0 / 2000},
		}}
	}
	wr := &WorkloadReport{Name: "read-sync", Description: "d"}
	summarize(wr, [][]*measurement{{round(2, 40, 2000), round(3, 50, 2000)}, {round(4, 80, 1000), round(4, 90, 1000)}})
	var out bytes.Buffer
	writeTable(&out, wr, true)
	text := out.String()
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if f := strings.Fields(lines[1]); strings.Join(f, " ") != "figure target spread against spread ratio better samples" {
		t.Errorf("header %q", lines[1])
	}
	// p99: target 2.5 (2 and 3: spread 40%), against 4 (0%), 2000 and
	// 1000 samples a round.
	if f := strings.Fields(lines[2]); strings.Join(f, " ") != "p99 (ms) 2.50 40.0% 4.00 0.0% 0.62 lower 2000/1000" {
		t.Errorf("p99 row %q", lines[2])
	}
	if !strings.Contains(text, "note: /proc counts CPU time in 10ms ticks, so server CPU per op is known to within 5.00 µs") {
		t.Errorf("no resolution note:\n%s", text)
	}
}
