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
	// Node is the member that connection is on (the command's Origin);
	// 0 when unknown (a session restored from a version-1 snapshot).
	Node uint64
	// Ephemerals are its ephemeral nodes' paths, sorted; filled by
	// SessionDetails only.
	Ephemerals []string
}

// Sessions lists the open sessions by id.
func (d *DB) Sessions() []SessionInfo {
	d.mu.RLock()
	defer d.mu.RUnlock()
	ids := d.tree.Sessions()
	out := make([]SessionInfo, 0, len(ids))
	for _, id := range ids {
		out = append(out, d.infoLocked(id))
	}
	return out
}

// infoLocked describes session id; mu is held.
func (d *DB) infoLocked(id int64) SessionInfo {
	info := SessionInfo{ID: id, Timeout: d.timeoutLocked(id)}
	if o := d.owners[id]; o != nil {
		info.Conn, info.Node = o.conn, o.node
	}
	return info
}

// SessionIDs lists the open sessions' ids in ascending order: the first
// step of a listing read in pieces (SessionDetails).
func (d *DB) SessionIDs() []int64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.tree.Sessions()
}

// SessionDetails describes the sessions named that are still open, with
// their ephemerals, in the order given. It holds the read lock once, for
// as long as those sessions take: a caller listing many sessions reads
// them a bounded piece at a time, so that no write waits for the whole.
func (d *DB) SessionDetails(ids []int64) []SessionInfo {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]SessionInfo, 0, len(ids))
	for _, id := range ids {
		if _, _, ok := d.tree.Session(id); !ok {
			continue
		}
		info := d.infoLocked(id)
		if eph, _ := d.tree.GetEphemerals(id, ""); len(eph) > 0 {
			info.Ephemerals = eph
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

// LastTouches returns when this node's session timers last heard of each
// of ids (zero for a session it runs no timer for), under one hold of
// the timers' lock: a caller listing many sessions asks a piece at a time.
func (d *DB) LastTouches(ids []int64) []time.Time {
	d.timersMu.Lock()
	defer d.timersMu.Unlock()
	out := make([]time.Time, len(ids))
	for i, id := range ids {
		out[i], _ = d.timers.Touched(id)
	}
	return out
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
