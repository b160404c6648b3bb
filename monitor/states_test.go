package monitor

import "github.com/hutchzk/hutch/membership"

// The states the fixtures run as.
const (
	Standalone = membership.Standalone
	Leader     = membership.Leading
	Follower   = membership.Following
)
