// Package prometheus serves a hutch server's metrics at /metrics in
// Prometheus's text exposition format (version 0.0.4), beside the Go
// runtime's and the process's (memory, goroutines, CPU, open and maximum
// file descriptors) under the names the Prometheus Go client gives them.
// It is the metrics provider the hutch command plugs in
// (server.Config.MetricsProvider), as ZooKeeper's metricsProvider.className
// names PrometheusMetricsProvider.
//
// It writes the format itself rather than through the Prometheus Go
// client: that client's package initialisation (its default registry's
// collectors, procfs's regular expressions, protobuf's descriptors) cost
// every start of the hutch binary about 2 ms, with metrics served or
// not, out of a start that has to stay under 4 ms. The client still
// checks this package's output in its tests (exposition_test.go).
package prometheus
