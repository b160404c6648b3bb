package server

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/hutchzk/hutch/quota"
)

// quotaLogInterval is how long ZooKeeper's RateLogger counts a repeated
// message before it writes it again.
const quotaLogInterval = 100 * time.Millisecond

// quotaLogger logs the quota limits that writes pass, as ZooKeeper's
// ZooKeeperServer.checkQuota does through its RateLogger: a message is
// written when it first comes; the same message again within
// quotaLogInterval is only counted, and the count is written, as "[N
// times] message", when the message comes again after the interval or
// another message comes. Only the node that took the write from its
// client logs it (ZooKeeper's leader, which prepares every write, does).
// It is used by the sink, under the DB's lock, which guards it.
type quotaLogger struct {
	log   *slog.Logger
	now   func() time.Time
	msg   string
	count int
	since time.Time
}

func (q *quotaLogger) passed(e quota.Exceeded) {
	msg, now := e.String(), q.now()
	if msg == q.msg {
		q.count++
		if now.Sub(q.since) >= quotaLogInterval {
			q.flush()
			q.msg, q.since = msg, now
		}
		return
	}
	q.flush()
	q.msg, q.since = msg, now
	q.log.Warn(msg, "path", e.Path, "hard", e.Hard)
}

// flush writes the count of a message repeated since it was written.
func (q *quotaLogger) flush() {
	if q.msg != "" && q.count > 0 {
		prefix := ""
		if q.count > 1 {
			prefix = "[" + strconv.Itoa(q.count) + " times] "
		}
		q.log.Warn(prefix + q.msg)
	}
	q.msg, q.count = "", 0
}
