package session

import (
	"math"
	"time"
)

// IDGenerator hands out session ids laid out as ZooKeeper's
// SessionTrackerImpl.initializeNextSessionId lays them out: the server id in
// the top byte, the low 40 bits of the start time in milliseconds in the next
// five bytes, and a counter in the low two bytes that simply keeps counting.
// The time part keeps a restarted server from reissuing the ids of sessions
// that clients still hold; the server byte keeps servers of one ensemble apart.
// The time part fails when a server restarts with its clock behind its
// previous run's: the caller finds the id taken and moves on (SkipPast).
//
// It is not safe for concurrent use.
type IDGenerator struct {
	next int64
}

// NewIDGenerator starts the sequence for serverID at now. Only the low 8 bits
// of serverID are used (ZooKeeper shifts it left by 56 and drops the rest);
// ZooKeeper refuses 255 when TTL nodes are enabled because ids with a top byte
// of 0xff would read as TTL ephemeral owners.
func NewIDGenerator(serverID int64, now time.Time) *IDGenerator {
	ms := uint64(now.UnixMilli())
	// Logical right shift, as ZooKeeper's >>>, so the top byte is exactly the
	// server id whatever the clock says.
	id := (ms<<24)>>8 | uint64(serverID)<<56
	return &IDGenerator{next: int64(id)}
}

// Next returns the next session id. It never returns 0, which on the wire
// means "no session", nor math.MinInt64, which ZooKeeper reserves as the
// ephemeral owner of container nodes.
func (g *IDGenerator) Next() int64 {
	for {
		id := g.next
		g.next++
		if id != 0 && id != math.MinInt64 {
			return id
		}
	}
}

// SkipPast makes the sequence continue after id, when id belongs to the same
// server (top byte) and is not behind the sequence already: a caller that
// found an id taken skips every id up to the largest one in use instead of
// colliding with them one by one. An id whose successor would spill into
// the next server's byte is ignored.
func (g *IDGenerator) SkipPast(id int64) {
	const low = 1<<56 - 1
	if id>>56 != g.next>>56 || id < g.next || id&low == low {
		return
	}
	g.next = id + 1
}
