// Package monitor holds hutch's operator surfaces: the four-letter words,
// the AdminServer commands, the Prometheus metrics, and the live web view
// with its event trace, all rendered from what a server shows through
// Source: one introspection snapshot, the tree read a node and a page at
// a time, and the trace it publishes.
//
// Every command is one entry of one registry (commands.go), from which the
// four-letter dispatcher, the /commands listing and each /commands/<name>
// are derived; its text and its JSON are rendered from the same snapshot,
// taken once per request. The answers are ZooKeeper 3.8's, byte for byte.
//
// The live view (ui.go, UIHandler) is read-only HTML, one file per panel
// (ui_*.go, each registered with addPanel), redrawn in place by a little
// embedded JavaScript (ui/); its viewers share one snapshot a second, and
// GET /trace (trace_http.go) streams the trace as JSON lines to each
// viewer through one subscription, rate-limited per viewer.
package monitor
