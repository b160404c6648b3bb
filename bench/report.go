package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Report is everything a hutch bench run measured, as --json prints it.
type Report struct {
	Target    Target            `json:"target"`
	Against   *Target           `json:"against,omitempty"`
	Rounds    int               `json:"rounds"`
	WarmUp    bool              `json:"warm_up"`
	Workloads []*WorkloadReport `json:"workloads"`
}

// WorkloadReport is one workload's figures over every measured round.
type WorkloadReport struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Figures     []*FigureReport `json:"figures"`
	Notes       []string        `json:"notes,omitempty"`
	// Error says why the workload failed; its figures are then missing.
	Error string `json:"error,omitempty"`
}

// FigureReport is one figure: its value in each measured round and the
// median, for the target and the --against server, and their ratio.
type FigureReport struct {
	Name    string  `json:"name"`
	Unit    string  `json:"unit"`
	Better  Better  `json:"better"`
	Target  Side    `json:"target"`
	Against *Side   `json:"against,omitempty"`
	Ratio   *Number `json:"ratio,omitempty"` // target / against
}

// Side is one server's values of a figure.
type Side struct {
	Median Number   `json:"median"`
	Rounds []Number `json:"rounds"` // in the order they ran; null where unknown
	// Spread is how far apart the rounds were: (max - min) / |median|,
	// null with fewer than two known rounds.
	Spread Number `json:"spread"`
	// Samples is the median over the rounds of the samples behind a
	// percentile; 0 for other figures.
	Samples int `json:"samples,omitempty"`
	// Resolution is the median over the rounds of the figure's
	// measuring step, when it has one (Figure.Resolution).
	Resolution Number `json:"resolution,omitempty"`
}

// Number is a figure's value; NaN (unknown) reads as null in JSON.
type Number float64

// MarshalJSON writes NaN as null.
func (n Number) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(n), 'g', -1, 64), nil
}

// summarize turns each side's measured rounds into a workload's figures:
// every figure any round reported, in the order first reported, with its
// median per side and the ratio.
func summarize(wr *WorkloadReport, sides [][]*measurement) {
	var order []Figure
	index := map[string]int{}
	for _, runs := range sides {
		for _, m := range runs {
			for _, f := range m.figures {
				if _, ok := index[f.Name]; !ok {
					index[f.Name] = len(order)
					order = append(order, f)
				}
			}
		}
	}
	side := func(runs []*measurement, name string) Side {
		s := Side{Rounds: make([]Number, len(runs))}
		var known, samples, steps []float64
		for i, m := range runs {
			s.Rounds[i] = Number(math.NaN())
			for _, f := range m.figures {
				if f.Name == name {
					s.Rounds[i] = Number(f.Value)
					known = append(known, f.Value)
					if f.Samples > 0 {
						samples = append(samples, float64(f.Samples))
					}
					if f.Resolution > 0 {
						steps = append(steps, f.Resolution)
					}
				}
			}
		}
		s.Median = Number(Median(known))
		s.Spread = spreadOf(known, float64(s.Median))
		if len(samples) > 0 {
			s.Samples = int(Median(samples))
		}
		if len(steps) > 0 {
			s.Resolution = Number(Median(steps))
		}
		return s
	}
	for _, f := range order {
		fr := &FigureReport{Name: f.Name, Unit: f.Unit, Better: f.Better, Target: side(sides[0], f.Name)}
		if len(sides) > 1 {
			a := side(sides[1], f.Name)
			r := Number(Ratio(float64(fr.Target.Median), float64(a.Median)))
			fr.Against, fr.Ratio = &a, &r
		}
		wr.Figures = append(wr.Figures, fr)
	}
}

// writeHeader prints what the tables below compare.
func writeHeader(w io.Writer, r *Report) {
	fmt.Fprintf(w, "hutch bench: target %s", describeTarget(r.Target))
	if r.Against != nil {
		fmt.Fprintf(w, ", against %s", describeTarget(*r.Against))
	}
	fmt.Fprintln(w)
	rounds := fmt.Sprintf("median of %d round(s)", r.Rounds)
	if r.Against != nil {
		rounds += " per server, the servers taking turns"
	}
	if r.WarmUp {
		rounds += ", after a discarded warm-up round"
	}
	fmt.Fprintln(w, "each figure is the "+rounds+".")
	fmt.Fprintln(w, "spread = (max - min) / median over the rounds; samples = latencies per round behind each percentile.")
	if r.Against != nil {
		fmt.Fprintln(w, "ratio = target / against; \"better\" says which way the figure is good.")
	}
}

func describeTarget(t Target) string {
	switch len(t.PIDs) {
	case 0:
		return t.Connect
	case 1:
		return fmt.Sprintf("%s (pid %d)", t.Connect, t.PIDs[0])
	}
	pids := make([]string, len(t.PIDs))
	for i, pid := range t.PIDs {
		pids[i] = strconv.Itoa(pid)
	}
	return fmt.Sprintf("%s (pids %s)", t.Connect, strings.Join(pids, ","))
}

// writeTable prints one workload's figures: with one server the median and
// the range over its rounds; with two, both medians and their ratio.
func writeTable(w io.Writer, wr *WorkloadReport, against bool) {
	fmt.Fprintf(w, "\n%s: %s\n", wr.Name, wr.Description)
	if wr.Error != "" {
		fmt.Fprintf(w, "  FAILED: %s\n", wr.Error)
	}
	if len(wr.Figures) > 0 {
		rows := [][]string{{"figure", "median", "min", "max", "spread", "samples"}}
		if against {
			rows[0] = []string{"figure", "target", "spread", "against", "spread", "ratio", "better", "samples"}
		}
		var resolutions []string
		for _, f := range wr.Figures {
			name := f.Name
			if f.Unit != "" && !strings.HasSuffix(name, f.Unit) {
				name += " (" + f.Unit + ")"
			}
			if against {
				rows = append(rows, []string{name, formatNumber(f.Target.Median), formatSpread(f.Target.Spread),
					formatNumber(f.Against.Median), formatSpread(f.Against.Spread), formatRatio(*f.Ratio), f.Better.String(),
					formatSamples(f.Target.Samples, f.Against.Samples)})
			} else {
				lo, hi := spread(f.Target.Rounds)
				rows = append(rows, []string{name, formatNumber(f.Target.Median), formatNumber(lo), formatNumber(hi),
					formatSpread(f.Target.Spread), formatSamples(f.Target.Samples, 0)})
			}
			if r := resolutionNote(f, against); r != "" {
				resolutions = append(resolutions, r)
			}
		}
		writeColumns(w, rows)
		if len(resolutions) > 0 {
			fmt.Fprintf(w, "  note: /proc counts CPU time in %v ticks, so %s\n", cpuTick, strings.Join(resolutions, "; "))
		}
	}
	for _, n := range wr.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

// spreadOf is (max - min) / |median| of the known values, NaN with fewer
// than two or a zero median.
func spreadOf(known []float64, median float64) Number {
	if len(known) < 2 || median == 0 || math.IsNaN(median) {
		return Number(math.NaN())
	}
	lo, hi := known[0], known[0]
	for _, v := range known[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	return Number((hi - lo) / math.Abs(median))
}

// formatSpread prints a spread as a percentage; "-" when unknown.
func formatSpread(n Number) string {
	if math.IsNaN(float64(n)) {
		return "-"
	}
	return strconv.FormatFloat(100*float64(n), 'f', 1, 64) + "%"
}

// formatSamples prints the samples behind a percentile on each side; ""
// for a figure that is not one.
func formatSamples(target, against int) string {
	switch {
	case target == 0 && against == 0:
		return ""
	case against == 0 || against == target:
		return strconv.Itoa(target)
	}
	return strconv.Itoa(target) + "/" + strconv.Itoa(against)
}

// resolutionNote says how finely a figure with a measuring step is known.
func resolutionNote(f *FigureReport, against bool) string {
	step := float64(f.Target.Resolution)
	if against && f.Against != nil && float64(f.Against.Resolution) > step {
		step = float64(f.Against.Resolution)
	}
	if step <= 0 || math.IsNaN(step) {
		return ""
	}
	return fmt.Sprintf("%s is known to within %s %s", f.Name, formatNumber(Number(step)), f.Unit)
}

// writeColumns prints rows indented, the first column aligned left and the
// others right, two spaces apart.
func writeColumns(w io.Writer, rows [][]string) {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// spread returns the least and greatest known value.
func spread(values []Number) (lo, hi Number) {
	lo, hi = Number(math.NaN()), Number(math.NaN())
	for _, v := range values {
		if math.IsNaN(float64(v)) {
			continue
		}
		if math.IsNaN(float64(lo)) || v < lo {
			lo = v
		}
		if math.IsNaN(float64(hi)) || v > hi {
			hi = v
		}
	}
	return lo, hi
}

// formatNumber prints a figure with about four significant digits.
func formatNumber(n Number) string {
	v := float64(n)
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "unknown"
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}

func formatRatio(n Number) string {
	if math.IsNaN(float64(n)) {
		return "n/a"
	}
	return strconv.FormatFloat(float64(n), 'f', 2, 64)
}

// writeJSON prints the whole report.
func writeJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
