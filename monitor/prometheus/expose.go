package prometheus

import (
	"bufio"
	"cmp"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hutchzk/hutch/monitor"
)

// family is one metric family: every sample of one name.
type family struct {
	name, help string
	typ        monitor.MetricType
	samples    []monitor.Metric
}

// families groups metrics by name, in name order, each family's samples
// in the order of their label values, as Prometheus's registry gathers
// them.
func families(ms []monitor.Metric) []family {
	byName := map[string]*family{}
	var out []*family
	for _, m := range ms {
		f := byName[m.Name]
		if f == nil {
			f = &family{name: m.Name, help: m.Help, typ: m.Type}
			byName[m.Name] = f
			out = append(out, f)
		}
		f.samples = append(f.samples, m)
	}
	slices.SortFunc(out, func(a, b *family) int { return cmp.Compare(a.name, b.name) })
	res := make([]family, len(out))
	for i, f := range out {
		slices.SortStableFunc(f.samples, func(a, b monitor.Metric) int { return compareLabels(a.Labels, b.Labels) })
		res[i] = *f
	}
	return res
}

// compareLabels orders label pairs by name, then value, pair by pair.
func compareLabels(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := cmp.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// writeText writes the families in Prometheus's text exposition format,
// version 0.0.4.
func writeText(w io.Writer, fams []family) error {
	bw := bufio.NewWriter(w)
	for _, f := range fams {
		bw.WriteString("# HELP " + f.name + " " + escapeHelp(f.help) + "\n")
		bw.WriteString("# TYPE " + f.name + " " + typeName(f.typ) + "\n")
		for _, m := range f.samples {
			switch f.typ {
			case monitor.HistogramMetric:
				for _, b := range m.Buckets {
					sample(bw, f.name+"_bucket", m.Labels, "le", formatFloat(b.UpperBound), float64(b.Count))
				}
				sample(bw, f.name+"_bucket", m.Labels, "le", "+Inf", float64(m.Count))
				sample(bw, f.name+"_sum", m.Labels, "", "", m.Sum)
				sample(bw, f.name+"_count", m.Labels, "", "", float64(m.Count))
			case monitor.SummaryMetric:
				for _, q := range m.Quantiles {
					sample(bw, f.name, m.Labels, "quantile", formatFloat(q.Q), q.Value)
				}
				sample(bw, f.name+"_sum", m.Labels, "", "", m.Sum)
				sample(bw, f.name+"_count", m.Labels, "", "", float64(m.Count))
			default:
				sample(bw, f.name, m.Labels, "", "", m.Value)
			}
		}
	}
	return bw.Flush()
}

// sample writes one line: name, the label pairs and one more (extra, if
// named), the value.
func sample(w *bufio.Writer, name string, labels []string, extra, extraValue string, v float64) {
	w.WriteString(name)
	if len(labels) > 0 || extra != "" {
		w.WriteByte('{')
		sep := ""
		for i := 0; i+1 < len(labels); i += 2 {
			w.WriteString(sep + labels[i] + `="` + escapeLabel(labels[i+1]) + `"`)
			sep = ","
		}
		if extra != "" {
			w.WriteString(sep + extra + `="` + extraValue + `"`)
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatFloat(v))
	w.WriteByte('\n')
}

func typeName(t monitor.MetricType) string {
	switch t {
	case monitor.CounterMetric:
		return "counter"
	case monitor.HistogramMetric:
		return "histogram"
	case monitor.SummaryMetric:
		return "summary"
	}
	return "gauge"
}

// formatFloat writes a value as the format does: the shortest decimal
// that reads back the same, +Inf, -Inf or NaN.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }
