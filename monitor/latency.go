package monitor

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// latencyBuckets are the request-latency histogram's upper bounds in
// seconds: from a tenth of a millisecond (a read served from memory) to
// ten seconds (a write stuck behind an election).
var latencyBuckets = []float64{
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
// zero value is not usable; call NewDurations.
type Durations struct {
	hist [requestKinds]prometheus.Histogram
}

// NewDurations returns empty histograms.
func NewDurations() *Durations {
	d := &Durations{}
	for k := range d.hist {
		// Named only for the library: the collector exports copies
		// (hutch_request_duration_seconds).
		d.hist[k] = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "request_duration", Buckets: latencyBuckets})
	}
	return d
}

// Observe records one answered request; it neither locks nor allocates.
func (d *Durations) Observe(kind RequestKind, elapsed time.Duration) {
	d.hist[kind].Observe(elapsed.Seconds())
}

// Read copies the histograms.
func (d *Durations) Read() [requestKinds]Histogram {
	var out [requestKinds]Histogram
	for k, h := range d.hist {
		var pb dto.Metric
		if h.Write(&pb) != nil || pb.Histogram == nil {
			continue
		}
		hist := Histogram{Count: pb.Histogram.GetSampleCount(), Sum: pb.Histogram.GetSampleSum()}
		for _, b := range pb.Histogram.GetBucket() {
			hist.Cumulative = append(hist.Cumulative, b.GetCumulativeCount())
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
