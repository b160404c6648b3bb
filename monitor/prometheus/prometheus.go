package prometheus

import (
	"compress/gzip"
	"io"
	"net/http"
	"strings"

	"github.com/hutchzk/hutch/monitor"
)

// contentType is the text format's, as the Go client answers it.
const contentType = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"

// Handler serves /metrics for m: its metrics (monitor.Metrics, one
// snapshot per scrape), the Go runtime's and the process's, gzipped when
// the scraper accepts it. It is a monitor.MetricsProvider.
func Handler(m *monitor.Monitor) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		metrics := append(m.Metrics(), goMetrics()...)
		proc, err := processMetrics()
		if err != nil {
			m.Logger().Warn("metrics: process metrics", "err", err)
		}
		metrics = append(metrics, proc...)
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Vary", "Accept-Encoding")
		var out io.Writer = w
		if acceptsGzip(r) {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			defer gz.Close()
			out = gz
		}
		if err := writeText(out, families(metrics)); err != nil {
			m.Logger().Warn("metrics: write", "err", err)
		}
	})
	return mux
}

var _ monitor.MetricsProvider = Handler

// acceptsGzip reports whether the request's Accept-Encoding allows gzip.
func acceptsGzip(r *http.Request) bool {
	for part := range strings.SplitSeq(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.ReplaceAll(params, " ", "") != "q=0" {
			return true
		}
	}
	return false
}
