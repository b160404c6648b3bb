package zkdb

import (
	"time"

	"github.com/hutchzk/hutch/session"
)

// Session returns a session's timeout (as negotiated at its creation or
// last attach) and password.
func (d *DB) Session(id int64) (timeout time.Duration, passwd []byte, ok bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	_, pw, ok := d.tree.Session(id)
	return d.timeoutLocked(id), pw, ok
}

// SessionInfo is one open session as the operator views list it.
type SessionInfo struct {
	ID      int64
	Timeout time.Duration // as negotiated at its creation or last attach
	// Conn is the connection that created or last attached it, on
	// whichever node that was; 0 when none is recorded.
	Conn int64
}

// Sessions lists the open sessions by id.
func (d *DB) Sessions() []SessionInfo {
	d.mu.RLock()
	defer d.mu.RUnlock()
	ids := d.tree.Sessions()
	out := make([]SessionInfo, 0, len(ids))
	for _, id := range ids {
		info := SessionInfo{ID: id, Timeout: d.timeoutLocked(id)}
		if o := d.owners[id]; o != nil {
			info.Conn = o.conn
		}
		out = append(out, info)
	}
	return out
}

// Touch records client activity on a session at now. It reports false for
// a session this node does not know or is closing; the client's connection
// should then end. It waits for no apply or snapshot.
func (d *DB) Touch(id int64, now time.Time) bool {
	d.timersMu.Lock()
	defer d.timersMu.Unlock()
	if d.closing[id] {
		return false
	}
	return d.timers.Touch(id, now)
}

// TouchAll records activity another node saw on sessions; unknown ones are
// skipped.
func (d *DB) TouchAll(ids []int64, now time.Time) {
	d.timersMu.Lock()
	defer d.timersMu.Unlock()
	for _, id := range ids {
		if !d.closing[id] {
			d.timers.Touch(id, now)
		}
	}
}

// ExpireSessions returns the sessions whose timeout has run out at now, for
// the caller to close; only the node that owns expiry (the leader) calls
// it. They are not forgotten until their closeSession applies: each stays
// closing (touches no longer count) and comes out again one timeout later
// if its close was lost, as it may be when leadership changes hands.
func (d *DB) ExpireSessions(now time.Time) []int64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	d.timersMu.Lock()
	defer d.timersMu.Unlock()
	ids := d.timers.Expired(now)
	for _, id := range ids {
		d.closing[id] = true
		d.timers.Add(id, max(d.timeoutLocked(id), d.tick), now)
	}
	return ids
}

// timeoutLocked is a session's negotiated timeout; mu is held.
func (d *DB) timeoutLocked(id int64) time.Duration {
	ms, _, _ := d.tree.Session(id)
	if o := d.owners[id]; o != nil {
		ms = o.timeout
	}
	return millis(ms)
}

// NextExpiry returns when the earliest session timer falls due.
func (d *DB) NextExpiry() (time.Time, bool) {
	d.timersMu.Lock()
	defer d.timersMu.Unlock()
	return d.timers.NextDeadline()
}

// ResetTimers rebuilds the session timers from the session table, every
// session on a full timeout from now. A node that takes over expiry (a
// new leader) calls it before it expires anything: the previous leader
// heard the clients' activity, this node did not, so it must not blame
// the sessions for its own ignorance (ZooKeeper's rule too).
func (d *DB) ResetTimers(now time.Time) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	d.timersMu.Lock()
	defer d.timersMu.Unlock()
	d.resetTimersLocked(now)
}

// resetTimersLocked needs mu (read or write) and timersMu.
func (d *DB) resetTimersLocked(now time.Time) {
	d.timers = session.NewTracker(d.tick)
	clear(d.closing)
	for _, id := range d.tree.Sessions() {
		d.timers.Add(id, d.timeoutLocked(id), now)
	}
}

// ShiftTimers delays every session deadline by pause: the expiry loop was
// held up that long, and with it the touches it would have seen.
func (d *DB) ShiftTimers(pause time.Duration) {
	d.timersMu.Lock()
	defer d.timersMu.Unlock()
	d.timers.Shift(pause)
}

// ExpiryCandidates lists the containers and TTL nodes due for cleanup by
// nowMs (tree.ExpiryCandidates).
func (d *DB) ExpiryCandidates(nowMs int64) []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.tree.ExpiryCandidates(nowMs)
}

// LastSessionID returns the largest session id in use whose top byte (the
// server that minted it) is id's; false if there is none. A server that
// finds an id it minted already taken skips past it (session.IDGenerator
// SkipPast).
func (d *DB) LastSessionID(id int64) (int64, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var last int64
	found := false
	for _, s := range d.tree.Sessions() { // ascending
		if s>>56 == id>>56 {
			last, found = s, true
		}
	}
	return last, found
}
