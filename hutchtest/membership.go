package hutchtest

import (
	"strconv"

	"github.com/hutchzk/hutch/membership"
)

// The ensemble's membership changes while it runs, by the path a
// client's reconfig takes (the leader decides, the change is logged,
// Raft's configuration follows): members join as participants or
// observers, change role, and leave. A member a reconfig removes stops
// serving its clients, and says so in srvr; it keeps running (Kill stops
// it) and serves again if added back. Each call returns once the new
// configuration has applied on the member it went through; a joining
// participant counts for quorum once it has caught up. The calls must not
// run while another control of the ensemble does.

// AddMember starts one more member (number Size()+1, with the ensemble's
// options) and makes it a participant; it returns its number.
func (e *Ensemble) AddMember() int {
	e.tb.Helper()
	return e.grow(false)
}

// AddObserver starts one more member and makes it an observer: it serves
// clients, forwards their writes and keeps their sessions alive, and
// never votes nor counts for quorum. It returns its number.
func (e *Ensemble) AddObserver() int {
	e.tb.Helper()
	return e.grow(true)
}

func (e *Ensemble) grow(observer bool) int {
	e.tb.Helper()
	n := e.Size() + 1
	number, err := e.c.AddMember(memberConfig(e.tb, e.opts, "hutch-"+strconv.Itoa(n), n))
	if err != nil {
		e.fatal(err)
	}
	m, err := e.c.Member(number)
	if err != nil {
		e.fatal(err)
	}
	e.members = append(e.members, &Server{tb: e.tb, opts: e.opts, m: m, ens: e})
	e.join(number, observer)
	return number
}

// Promote makes observer n a participant.
func (e *Ensemble) Promote(n int) {
	e.tb.Helper()
	e.join(n, false)
}

// Demote makes participant n an observer.
func (e *Ensemble) Demote(n int) {
	e.tb.Helper()
	e.join(n, true)
}

func (e *Ensemble) join(n int, observer bool) {
	e.tb.Helper()
	ctx, cancel := e.leaderWait()
	defer cancel()
	if _, err := e.c.Join(ctx, n, observer); err != nil {
		e.fatal(err)
	}
}

// RemoveMember takes member n out of the ensemble. The ensemble keeps at
// least two participants, as ZooKeeper does: removing one of the last two
// fails the test.
func (e *Ensemble) RemoveMember(n int) {
	e.tb.Helper()
	if _, err := e.c.Member(n); err != nil {
		e.fatal(err)
	}
	ctx, cancel := e.leaderWait()
	defer cancel()
	if _, err := e.c.Reconfigure(ctx, nil, []uint64{uint64(n)}); err != nil {
		e.fatal(err)
	}
}

// Membership is the ensemble's configuration as the leader has applied
// it: members (id, addresses, role) and version, the text of
// /zookeeper/config.
func (e *Ensemble) Membership() membership.Config {
	e.tb.Helper()
	return e.Member(e.Leader()).srv().Replication().Members
}
