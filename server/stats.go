package server

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hutchzk/hutch/monitor"
	"github.com/hutchzk/hutch/wire"
)

// latencyStats keeps the count, sum, minimum and maximum of request
// latencies in milliseconds, as ZooKeeper's AvgMinMaxCounter does for srvr
// and mntr. Every field is atomic: connections record into one instance
// without a lock, and a reader may see a sample half recorded, which
// ZooKeeper accepts too.
type latencyStats struct {
	count, sum atomic.Int64
	min, max   atomic.Int64 // min holds math.MaxInt64 while empty
}

func newLatencyStats() *latencyStats {
	l := &latencyStats{}
	l.min.Store(math.MaxInt64)
	return l
}

func (l *latencyStats) add(ms int64) {
	l.count.Add(1)
	l.sum.Add(ms)
	for cur := l.min.Load(); ms < cur && !l.min.CompareAndSwap(cur, ms); cur = l.min.Load() {
	}
	for cur := l.max.Load(); ms > cur && !l.max.CompareAndSwap(cur, ms); cur = l.max.Load() {
	}
}

func (l *latencyStats) reset() {
	l.count.Store(0)
	l.sum.Store(0)
	l.min.Store(math.MaxInt64)
	l.max.Store(0)
}

// read returns min, average (rounded to four places, as ZooKeeper's
// getAvg) and max; all zero before the first sample.
func (l *latencyStats) read() (lo int64, avg float64, hi int64) {
	n, sum := l.count.Load(), l.sum.Load()
	lo, hi = l.min.Load(), l.max.Load()
	if lo == math.MaxInt64 {
		lo = 0
	}
	if n > 0 {
		avg = math.Round(float64(sum)/float64(n)*1e4) / 1e4
	}
	return lo, avg, hi
}

// Stats are the server's running counters. Requests and replies update
// them with atomics only; four-letter words, admin commands and metrics
// read them without taking a lock any request holds.
type Stats struct {
	packetsReceived atomic.Int64
	packetsSent     atomic.Int64
	bytesReceived   atomic.Int64
	bytesSent       atomic.Int64
	txns            atomic.Int64
	notifications   atomic.Int64
	connections     atomic.Int64
	outstanding     atomic.Int64 // requests read but not yet answered
	authFailed      atomic.Int64
	// Sizes of the writes this node proposed: last, smallest and largest
	// (srvr's "Proposal sizes" on a leader).
	proposalLast, proposalMin, proposalMax atomic.Int64
	latency                                *latencyStats
	durations                              *monitor.Durations // for /metrics
	started                                time.Time
}

func (st *Stats) init() {
	st.latency = newLatencyStats()
	st.durations = monitor.NewDurations()
	st.started = time.Now()
	st.proposalLast.Store(-1)
	st.proposalMin.Store(-1)
	st.proposalMax.Store(-1)
}

// proposed records the size of a write this node proposed.
func (st *Stats) proposed(size int) {
	n := int64(size)
	st.proposalLast.Store(n)
	for cur := st.proposalMin.Load(); (cur < 0 || n < cur) && !st.proposalMin.CompareAndSwap(cur, n); cur = st.proposalMin.Load() {
	}
	for cur := st.proposalMax.Load(); n > cur && !st.proposalMax.CompareAndSwap(cur, n); cur = st.proposalMax.Load() {
	}
}

// proposalSizes returns last/min/max proposal sizes, -1 before the first
// (ZooKeeper's BufferStats).
func (st *Stats) proposalSizes() (last, lo, hi int64) {
	return st.proposalLast.Load(), st.proposalMin.Load(), st.proposalMax.Load()
}

// reset clears what srst clears: the packet counts, latencies and
// proposal sizes.
func (st *Stats) reset() {
	st.packetsReceived.Store(0)
	st.packetsSent.Store(0)
	st.proposalLast.Store(-1)
	st.proposalMin.Store(-1)
	st.proposalMax.Store(-1)
	st.latency.reset()
}

// request is what a reply needs to know of the request it answers, for
// the per-connection and server statistics.
type request struct {
	op    wire.OpCode
	xid   int32
	start time.Time
}

// connStats are one connection's counters, as ZooKeeper's ServerCnxn
// keeps them for cons. The reader goroutine and the applier (which
// answers writes) both record into them, hence the mutex; it guards every
// field but the atomics.
type connStats struct {
	received    atomic.Int64
	sent        atomic.Int64
	outstanding atomic.Int64
	established time.Time

	mu                    sync.Mutex
	lastOp                string
	lastCxid              int64
	lastZxid              int64
	lastResponse          time.Time
	lastLatency           int64
	minLat, maxLat, count int64
	totalLat              int64
}

func newConnStats(now time.Time) *connStats {
	return &connStats{established: now, lastOp: "NA", lastCxid: -1, lastZxid: -1, minLat: math.MaxInt64}
}

// replied records one answered request.
func (cs *connStats) replied(r request, zxid int64, now time.Time) int64 {
	ms := now.Sub(r.start).Milliseconds()
	cs.mu.Lock()
	if r.xid >= 0 {
		cs.lastCxid = int64(r.xid)
	}
	cs.lastZxid = zxid
	cs.lastOp = lastOpName(r.op)
	cs.lastResponse = now
	cs.lastLatency = ms
	cs.minLat = min(cs.minLat, ms)
	cs.maxLat = max(cs.maxLat, ms)
	cs.count++
	cs.totalLat += ms
	cs.mu.Unlock()
	return ms
}

// reset clears what crst clears.
func (cs *connStats) reset() {
	cs.received.Store(0)
	cs.sent.Store(0)
	cs.mu.Lock()
	cs.lastOp, cs.lastCxid, cs.lastZxid = "NA", -1, -1
	cs.lastResponse = time.Time{}
	cs.lastLatency, cs.minLat, cs.maxLat, cs.count, cs.totalLat = 0, math.MaxInt64, 0, 0, 0
	cs.mu.Unlock()
}

// lastOpName is the four-letter name cons shows for the last operation,
// as ZooKeeper's FinalRequestProcessor names them.
func lastOpName(op wire.OpCode) string {
	switch op {
	case wire.OpPing:
		return "PING"
	case wire.OpCreateSession:
		return "SESS"
	case wire.OpMulti:
		return "MULT"
	case wire.OpMultiRead:
		return "MLTR"
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateTTL, wire.OpCreateContainer:
		return "CREA"
	case wire.OpDelete, wire.OpDeleteContainer:
		return "DELE"
	case wire.OpSetData:
		return "SETD"
	case wire.OpReconfig:
		return "RECO"
	case wire.OpSetACL:
		return "SETA"
	case wire.OpCloseSession:
		return "CLOS"
	case wire.OpSync:
		return "SYNC"
	case wire.OpCheck:
		return "CHEC"
	case wire.OpExists:
		return "EXIS"
	case wire.OpGetData:
		return "GETD"
	case wire.OpSetWatches:
		return "SETW"
	case wire.OpSetWatches2:
		return "STW2"
	case wire.OpAddWatch:
		return "ADDW"
	case wire.OpGetACL:
		return "GETA"
	case wire.OpGetChildren, wire.OpGetChildren2:
		return "GETC"
	case wire.OpGetAllChildrenNumber:
		return "GETACN"
	case wire.OpCheckWatches:
		return "CHKW"
	case wire.OpRemoveWatches:
		return "REMW"
	case wire.OpWhoAmI:
		return "HOMI"
	case wire.OpGetEphemerals:
		return "GETE"
	}
	return "NA"
}

// requestKind is how the latency histograms count a request of op.
func requestKind(op wire.OpCode) monitor.RequestKind {
	switch {
	case isRead(op):
		return monitor.ReadRequest
	case op == wire.OpPing:
		return monitor.PingRequest
	}
	return monitor.WriteRequest
}
