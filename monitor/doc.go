// Package monitor holds hutch's operator surfaces: the four-letter words,
// the AdminServer commands and the Prometheus metrics — and, next, the
// live web view and the event trace — all rendered from one introspection
// snapshot a server provides through Source.
//
// Every command is one entry of one registry (commands.go), from which the
// four-letter dispatcher, the /commands listing and each /commands/<name>
// are derived; its text and its JSON are rendered from the same snapshot,
// taken once per request. The answers are ZooKeeper 3.8's, byte for byte.
package monitor
