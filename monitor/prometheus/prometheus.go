// Package prometheus serves a hutch server's metrics in Prometheus's
// exposition format with the Prometheus Go client, beside the client's Go
// runtime and process collectors (memory, goroutines, open and maximum
// file descriptors). It is the metrics provider the hutch command plugs
// in (server.Config.MetricsProvider), as ZooKeeper's
// metricsProvider.className names PrometheusMetricsProvider; a program
// that embeds a server without serving /metrics does not link it.
package prometheus

import (
	"fmt"
	"net/http"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hutchzk/hutch/monitor"
)

// Handler serves /metrics for m: its metrics (monitor.Metrics, one
// snapshot per scrape) and the Go client's runtime and process
// collectors, in a registry of its own, never the global default: one
// process may run many servers. It is a monitor.MetricsProvider.
func Handler(m *monitor.Monitor) http.Handler {
	reg := prom.NewRegistry()
	reg.MustRegister(
		Collector(m),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      errorLog{m},
		ErrorHandling: promhttp.ContinueOnError,
	}))
	return mux
}

var _ monitor.MetricsProvider = Handler

// errorLog hands promhttp's errors to the monitor's logger.
type errorLog struct{ m *monitor.Monitor }

func (l errorLog) Println(v ...any) { l.m.Logger().Warn("metrics", "err", fmt.Sprint(v...)) }

// Collector is m's metrics as a Prometheus collector, for a registry of
// the caller's own.
func Collector(m *monitor.Monitor) prom.Collector { return collector{m} }

// collector reads one snapshot per scrape. Its metrics change with the
// node's role, so it describes none in advance: the registry checks them
// as they are collected.
type collector struct{ m *monitor.Monitor }

func (collector) Describe(chan<- *prom.Desc) {}

func (c collector) Collect(ch chan<- prom.Metric) {
	for _, mt := range c.m.Metrics() {
		var names, values []string
		for i := 0; i+1 < len(mt.Labels); i += 2 {
			names, values = append(names, mt.Labels[i]), append(values, mt.Labels[i+1])
		}
		desc := prom.NewDesc(mt.Name, mt.Help, names, nil)
		switch mt.Type {
		case monitor.GaugeMetric:
			ch <- prom.MustNewConstMetric(desc, prom.GaugeValue, mt.Value, values...)
		case monitor.CounterMetric:
			ch <- prom.MustNewConstMetric(desc, prom.CounterValue, mt.Value, values...)
		case monitor.HistogramMetric:
			buckets := make(map[float64]uint64, len(mt.Buckets))
			for _, b := range mt.Buckets {
				buckets[b.UpperBound] = b.Count
			}
			ch <- prom.MustNewConstHistogram(desc, mt.Count, mt.Sum, buckets, values...)
		case monitor.SummaryMetric:
			quantiles := make(map[float64]float64, len(mt.Quantiles))
			for _, q := range mt.Quantiles {
				quantiles[q.Q] = q.Value
			}
			ch <- prom.MustNewConstSummary(desc, mt.Count, mt.Sum, quantiles, values...)
		}
	}
}
