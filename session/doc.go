// Package session decides how long a ZooKeeper session may stay silent before
// it expires: it negotiates timeouts, mints session ids and passwords, and
// tracks each session's deadline in tick-sized buckets as ZooKeeper's
// ExpiryQueue does, so the server can close every silent session within
// [timeout, timeout+tick] of its last sign of life.
//
// Nothing here reads the clock or starts goroutines; the caller passes the time
// in and owns the loop that sleeps until NextDeadline.
package session
