package monitor

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// expiryBucket is one tick's worth of session timers, as dump shows it.
type expiryBucket struct {
	expires  time.Time
	sessions []int64 // in timer order
}

// expiryBuckets groups the sessions by when their timers fire, soonest
// first; none where this node runs no timers.
func expiryBuckets(v *view) []expiryBucket {
	var out []expiryBucket
	for _, s := range v.Sessions {
		if s.Expires.IsZero() {
			continue
		}
		if n := len(out); n > 0 && out[n-1].expires.Equal(s.Expires) {
			out[n-1].sessions = append(out[n-1].sessions, s.ID)
			continue
		}
		out = append(out, expiryBucket{expires: s.Expires, sessions: []int64{s.ID}})
	}
	return out
}

// writeDump writes dump: the session expiry buckets, each session's
// ephemeral nodes and the connections, as ZooKeeper's DumpCommand.
func writeDump(b *strings.Builder, v *view) {
	b.WriteString("SessionTracker dump:\n")
	buckets := expiryBuckets(v)
	if !v.Mode.RunsSessionTimers() {
		// A follower does not expire sessions: like ZooKeeper's learner
		// it lists the sessions connected through it, with their timeouts.
		var list []Connection
		for _, c := range v.Connections {
			if c.Session != 0 {
				list = append(list, c)
			}
		}
		slices.SortFunc(list, func(a, b Connection) int { return cmp.Compare(a.Session, b.Session) })
		fmt.Fprintf(b, "Global Sessions(%d):\n", len(list))
		for _, c := range list {
			fmt.Fprintf(b, "0x%x\t%dms\n", c.Session, c.Timeout.Milliseconds())
		}
	} else {
		total := 0
		for _, bk := range buckets {
			total += len(bk.sessions)
		}
		fmt.Fprintf(b, "Session Sets (%d)/(%d):\n", len(buckets), total)
	}
	expiry := map[int64]time.Time{}
	for _, bk := range buckets {
		fmt.Fprintf(b, "%d expire at %s:\n", len(bk.sessions), javaDate(bk.expires))
		ids := slices.Clone(bk.sessions)
		slices.Sort(ids)
		for _, id := range ids {
			fmt.Fprintf(b, "\t0x%x\n", id)
			expiry[id] = bk.expires
		}
	}
	var owners []Session
	for _, s := range v.Sessions {
		if len(s.Ephemerals) > 0 {
			owners = append(owners, s)
		}
	}
	slices.SortFunc(owners, func(a, b Session) int { return cmp.Compare(a.ID, b.ID) })
	fmt.Fprintf(b, "ephemeral nodes dump:\nSessions with Ephemerals (%d):\n", len(owners))
	for _, s := range owners {
		fmt.Fprintf(b, "0x%x:\n", s.ID)
		for _, p := range s.Ephemerals {
			fmt.Fprintf(b, "\t%s\n", p)
		}
	}
	// A connection lives as long as its session, or, before a session,
	// until the handshake deadline.
	type connExpiry struct {
		at    time.Time
		lines []string
	}
	var groups []*connExpiry
	byTime := map[time.Time]*connExpiry{}
	for _, c := range v.Connections {
		at, ok := expiry[c.Session]
		if !ok {
			at = c.Established.Add(v.Server.MaxSessionTimeout).Truncate(v.Server.TickTime)
		}
		g := byTime[at]
		if g == nil {
			g = &connExpiry{at: at}
			byTime[at] = g
			groups = append(groups, g)
		}
		g.lines = append(g.lines, fmt.Sprintf("\tip: /%s sessionId: 0x%x\n", c.Remote, c.Session))
	}
	slices.SortFunc(groups, func(a, b *connExpiry) int { return a.at.Compare(b.at) })
	conns := 0
	for _, g := range groups {
		conns += len(g.lines)
	}
	fmt.Fprintf(b, "Connections dump:\nConnections Sets (%d)/(%d):\n", len(groups), conns)
	for _, g := range groups {
		fmt.Fprintf(b, "%d expire at %s:\n", len(g.lines), javaDate(g.at))
		for _, l := range g.lines {
			b.WriteString(l)
		}
	}
}

// dumpJSON fills the dump answer: session ids by the elapsed time their
// timers fire, and each session's ephemeral paths.
func dumpJSON(out map[string]any, v *view) {
	expiry := map[string][]int64{}
	for _, bk := range expiryBuckets(v) {
		k := strconv.FormatInt(v.elapsedMillis(bk.expires), 10)
		expiry[k] = append(expiry[k], bk.sessions...)
	}
	eph := map[string][]string{}
	for _, s := range v.Sessions {
		if len(s.Ephemerals) > 0 {
			eph[strconv.FormatInt(s.ID, 10)] = s.Ephemerals
		}
	}
	out["expiry_time_to_session_ids"] = expiry
	out["session_id_to_ephemeral_paths"] = eph
}
