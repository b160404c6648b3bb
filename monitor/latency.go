package monitor

import (
	"math"
	"sort"
	"sync/atomic"
	"time"
)

// latencyBuckets are the request-latency histogram's upper bounds in
// seconds: from a tenth of a millisecond (a read served from memory) to
// ten seconds (a write stuck behind an election).
var latencyBuckets = [...]float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// RequestKind is how the latency histograms split requests, as srvr
// splits read and write latency.
type RequestKind int

// The kinds of request.
const (
	ReadRequest  RequestKind = iota // a read
	WriteRequest                    // anything else but a ping
	PingRequest
	requestKinds = iota
)

var requestKindNames = [requestKinds]string{"read", "write", "ping"}

// Durations record request latencies, one histogram per RequestKind. The
// zero value is ready to use.
type Durations struct {
	hist [requestKinds]histogram
}

// histogram counts samples per bucket of latencyBuckets (the last slot
// for those past every bound) and sums them, with atomics only: Observe
// sits on every request's path.
type histogram struct {
	counts  [len(latencyBuckets) + 1]atomic.Uint64
	sumBits atomic.Uint64 // math.Float64bits of the sum, in seconds
}

// NewDurations returns empty histograms.
func NewDurations() *Durations { return &Durations{} }

// Observe records one answered request; it neither locks nor allocates.
func (d *Durations) Observe(kind RequestKind, elapsed time.Duration) {
	h := &d.hist[kind]
	v := elapsed.Seconds()
	// The first bound at or above v: a bucket holds samples up to and
	// including its bound, as Prometheus's do.
	h.counts[sort.SearchFloat64s(latencyBuckets[:], v)].Add(1)
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Read copies the histograms. Count is the sum of the buckets read, so a
// copy taken while requests are recorded never has a bucket above it.
func (d *Durations) Read() [requestKinds]Histogram {
	var out [requestKinds]Histogram
	for k := range d.hist {
		h := &d.hist[k]
		hist := Histogram{Sum: math.Float64frombits(h.sumBits.Load()), Cumulative: make([]uint64, len(latencyBuckets))}
		for i := range h.counts {
			hist.Count += h.counts[i].Load()
			if i < len(latencyBuckets) {
				hist.Cumulative[i] = hist.Count
			}
		}
		out[k] = hist
	}
	return out
}

// Histogram is a copy of one latency histogram.
type Histogram struct {
	Count uint64
	Sum   float64 // seconds
	// Cumulative counts the samples up to each of latencyBuckets' bounds.
	Cumulative []uint64
}

// quantile estimates the q-quantile by linear interpolation within the
// bucket that holds it, as PromQL's histogram_quantile; NaN when empty.
func (h Histogram) quantile(q float64) float64 {
	if h.Count == 0 {
		return math.NaN()
	}
	rank := q * float64(h.Count)
	lower, below := 0.0, uint64(0)
	for i, cum := range h.Cumulative {
		upper := latencyBuckets[i]
		if float64(cum) >= rank {
			in := cum - below
			if in == 0 {
				return upper
			}
			return lower + (upper-lower)*(rank-float64(below))/float64(in)
		}
		lower, below = upper, cum
	}
	return lower // past the last finite bound
}
