package monitor

import "time"

// Version is what hutch reports as ZooKeeper's version: the release whose
// protocol and behaviour it follows. Clients parse the leading x.y.z
// (kazoo's server_version reads it from envi).
const Version = "3.8.0-hutch"

// view is what a command renders from: one snapshot, and the monitor's
// own settings.
type view struct {
	*Snapshot
	words []string // the four-letter words answered, sorted
}

// elapsedMillis is ZooKeeper's Time.currentElapsedTime for t: milliseconds
// on a monotonic clock (here: since the server started), 0 for never.
func (v *view) elapsedMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Sub(v.Server.Started).Milliseconds()
}

// uptime is how long the server has run.
func (v *view) uptime() time.Duration { return v.Taken.Sub(v.Server.Started) }
