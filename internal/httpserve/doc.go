// Package httpserve serves hutch's HTTP ports (admin, metrics, live view,
// test controls) so that no client can exhaust them: every connection has
// read, write and idle deadlines, a port holds a bounded number of
// connections at once, and a guard keeps other sites' pages in a browser
// from driving controls meant for programs on the same machine.
package httpserve
