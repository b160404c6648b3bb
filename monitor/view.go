package monitor

import (
	"os"
	"runtime/debug"
	"sync"
	"time"
)

// Version is what hutch reports as ZooKeeper's version: the release whose
// protocol and behaviour it follows. Clients parse the leading x.y.z
// (kazoo's server_version reads it from envi).
const Version = "3.8.0-hutch"

// FullVersion is Version as ZooKeeper's Version.getFullVersion prints it
// in srvr, stat, mntr, envi and the admin server_stats: "3.8.0-hutch,
// built on 2026-11-27 09:41 UTC". Tools that parse srvr's first line look
// for the ", built on " part.
func FullVersion() string {
	fullVersionOnce.Do(func() { fullVersion = Version + ", built on " + buildTime().UTC().Format(builtOnLayout) })
	return fullVersion
}

// builtOnLayout is ZooKeeper's build date format (yyyy-MM-dd HH:mm, in UTC).
const builtOnLayout = "2006-01-02 15:04 UTC"

var (
	fullVersionOnce sync.Once
	fullVersion     string
)

// buildTime is when this binary was built, as well as it can be told: the
// commit time the Go toolchain stamped into it, else the executable's
// modification time, else now.
func buildTime() time.Time {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.time" {
				if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
					return t
				}
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if st, err := os.Stat(exe); err == nil {
			return st.ModTime()
		}
	}
	return time.Now()
}

// view is what a command renders from: one snapshot, and the monitor's
// own settings.
type view struct {
	*Snapshot
	words []string // the four-letter words answered, sorted
	// ens is what the other members reported, for a live view of the
	// whole ensemble; nil for a view of this member alone.
	ens *peerViews
}

// Ens is what the other members reported, nil for a view of this member
// alone (for the templates).
func (v *view) Ens() *peerViews { return v.ens }

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
