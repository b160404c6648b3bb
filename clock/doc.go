// Package clock is the time source of hutch's timers. Session expiry,
// container and TTL cleanup, touch reports and proposal time-outs all wait
// on a Clock, so a test can swap in a Fake and move time forward, and
// every timer that falls due fires, instead of sleeping.
//
// System is the real clock. Offset shifts another clock, to model nodes
// whose wall clocks disagree.
package clock
