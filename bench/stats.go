package bench

import (
	"math"
	"slices"
	"time"
)

// Better says which direction of a figure is the good one.
type Better int

const (
	// Neither: the figure describes the run (a size, a setting) and is
	// neither good nor bad.
	Neither Better = iota
	// Higher is better: a rate.
	Higher
	// Lower is better: a latency, a memory footprint.
	Lower
)

// String is how the tables and the JSON name the direction.
func (b Better) String() string {
	switch b {
	case Higher:
		return "higher"
	case Lower:
		return "lower"
	}
	return ""
}

// MarshalText writes the direction as its name in JSON.
func (b Better) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// Figure is one number a run measured, such as "ops/s" or "p99 ms".
type Figure struct {
	Name   string  `json:"name"`
	Unit   string  `json:"unit"`
	Better Better  `json:"better"`
	Value  float64 `json:"value"`
	// Samples is how many measurements a percentile was taken from: a
	// p99.9 of 500 samples is their largest.
	Samples int `json:"samples,omitempty"`
	// Resolution is the step the figure is measured in, when coarser than
	// it looks: the server's CPU time per operation comes from /proc in
	// 10 ms ticks, so it is known to within Resolution.
	Resolution float64 `json:"resolution,omitempty"`
}

// Percentile returns the q-quantile (0 < q ≤ 1) of sorted by nearest rank:
// the smallest sample with at least a fraction q of the samples at or
// below it. An empty sample has no percentile: it returns 0.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// The rank is ceil(q·n); the small epsilon keeps q·n that should be a
	// whole number (0.9·10) from rounding up past it.
	rank := int(math.Ceil(q*float64(n) - 1e-9))
	return sorted[max(0, min(rank, n)-1)]
}

// Median returns the median of values, the mean of the middle two for an
// even count, or NaN for none. values is not changed.
func Median(values []float64) float64 {
	n := len(values)
	if n == 0 {
		return math.NaN()
	}
	s := slices.Clone(values)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Ratio returns a / b, or NaN when it has no meaning: b zero or either
// side unknown (NaN).
func Ratio(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}

// Ms converts a duration to fractional milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// quantiles are the latency percentiles every workload reports, with the
// name of each.
var quantiles = []struct {
	name string
	q    float64
}{{"p50", 0.50}, {"p90", 0.90}, {"p99", 0.99}, {"p99.9", 0.999}, {"max", 1}}

// latencyFigures sorts lat and returns its percentiles in milliseconds,
// each named prefix + " " + quantile ("acquire p99"), or just the quantile
// when prefix is empty.
func latencyFigures(prefix string, lat []time.Duration) []Figure {
	slices.Sort(lat)
	out := make([]Figure, 0, len(quantiles))
	for _, q := range quantiles {
		name := q.name
		if prefix != "" {
			name = prefix + " " + name
		}
		out = append(out, Figure{Name: name, Unit: "ms", Better: Lower, Value: Ms(Percentile(lat, q.q)), Samples: len(lat)})
	}
	return out
}

// rated is the usual measurement: count operations over elapsed as a rate
// named name ("ops/s"), then the percentiles of their latencies, named
// with prefix.
func rated(name string, count int, elapsed time.Duration, prefix string, lat ...[]time.Duration) *measurement {
	m := &measurement{}
	m.add(Figure{Name: name, Unit: "/s", Better: Higher, Value: rate(count, elapsed)})
	m.add(latencyFigures(prefix, slices.Concat(lat...))...)
	return m
}

// rate is count per second of elapsed, 0 when nothing elapsed.
func rate(count int, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(count) / elapsed.Seconds()
}
