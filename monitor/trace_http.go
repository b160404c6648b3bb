package monitor

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/hutchzk/hutch/internal/httpserve"
	"github.com/hutchzk/hutch/trace"
)

// The event trace over HTTP: GET /trace streams what the server applies
// and delivers as JSON lines, one trace.Event per line, for the trace
// panel and for scripts. Each viewer is rate-limited on its own; what it
// loses (to its rate, or to falling behind) is reported in a line
// {"kind":"dropped","dropped":N,"time":...} before its next event, or
// within a tick if none comes, so a reader always knows its stream has
// gaps.
//
// The server's apply path hands each event to one subscription, the
// hub's, only while someone watches, and wakes nobody: the hub reads
// what accumulated once a tick, filters and rate-limits it for each
// viewer, and wakes a viewer only when it has lines to write. However
// fast the server writes, a viewer costs a few wake-ups a second.

// Limits of a viewer's stream.
const (
	defaultTraceRate = 100  // events a second, unless ?rate= asks otherwise
	maxTraceRate     = 2000 // the most ?rate= may ask
	hubBuffer        = 8192 // events the server may publish between two ticks
	// hubTick is how often the hub reads what the server published.
	hubTick = 50 * time.Millisecond
)

// traceHub fans one subscription to the server's trace out to every
// viewer.
type traceHub struct {
	// mu guards sub, viewers and each viewer's pending and dropped.
	mu      sync.Mutex
	sub     *trace.Subscription
	viewers map[*traceViewer]struct{}
	// lost counts every event a viewer's filter kept that it did not
	// get (hutch_trace_dropped_total).
	lost uint64
}

// counts reads the hub's metrics: viewers streaming, events lost.
func (h *traceHub) counts() (viewers int, lost uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.viewers), h.lost
}

// traceViewer is one viewer's stream.
type traceViewer struct {
	filter trace.Filter
	limit  *rate.Limiter
	// pending are the events let through for its writer, dropped those
	// its filter kept but its rate (or the hub's buffer) lost; guarded
	// by the hub's mu.
	pending []trace.Event
	dropped uint64
	// most bounds pending: a writer stuck on a slow reader loses what
	// comes meanwhile rather than piling it up.
	most int
	// ready wakes its writer: there are pending events or drops.
	ready chan struct{}
}

// join adds a viewer keeping what f keeps, at most every events a
// second, subscribing to b if it is the first. With a start, the viewer
// first gets the history's events after start's Seq (the newest last of
// them, when last > 0), returned here, and then every event after those:
// none twice, none missed.
func (h *traceHub) join(b *trace.Broker, f trace.Filter, every int, start *historyStart) (*traceViewer, []trace.Event) {
	v := &traceViewer{filter: f, limit: rate.NewLimiter(rate.Limit(every), every), ready: make(chan struct{}, 1), most: 2 * every}
	h.mu.Lock()
	if h.viewers == nil {
		h.viewers = map[*traceViewer]struct{}{}
	}
	h.viewers[v] = struct{}{}
	if h.sub == nil {
		h.sub = b.Subscribe(trace.Filter{}, hubBuffer)
		go h.run(h.sub)
	}
	h.mu.Unlock()
	hist := b.History()
	if start == nil || hist == nil {
		return v, nil
	}
	// The hub's subscription is in place, so every event after the copy
	// reaches the viewer; those the hub handed it before the copy are in
	// the copy too, and go.
	past, last := hist.Since(start.seq(hist), &f, start.last)
	h.mu.Lock()
	v.pending = slices.DeleteFunc(v.pending, func(e trace.Event) bool { return e.Seq <= last })
	h.mu.Unlock()
	return v, past
}

// historyStart is where a stream asks the history to start: after a Seq,
// at a zxid or a time, or the whole window; with last > 0 only the
// newest last events of it.
type historyStart struct {
	all  bool
	zxid int64
	time time.Time
	last int
}

// seq is the Seq after which the stream starts.
func (s *historyStart) seq(h *trace.History) uint64 {
	switch {
	case s.all:
		return 0
	case s.zxid != 0:
		return h.SeqAt(func(e *trace.Event) bool { return e.Kind == trace.TxnApplied && e.Zxid >= s.zxid })
	}
	return h.SeqAt(func(e *trace.Event) bool { return !e.Time.Before(s.time) })
}

// maxHistoryLines bounds the history one stream asks for.
const maxHistoryLines = 100_000

// traceStart reads where a stream starts: since=all (the whole window),
// since=<RFC 3339 time>, since=<duration> (that long ago), zxid=<0x… or
// decimal>, and last=<n> (only the newest n of those); nil for live only.
func traceStart(r *http.Request, now time.Time) (*historyStart, error) {
	q := r.URL.Query()
	s := &historyStart{}
	switch since := q.Get("since"); {
	case q.Get("zxid") != "":
		z := parseSession(q.Get("zxid")) // the same 0x… or decimal
		if z <= 0 {
			return nil, fmt.Errorf("zxid %q: a positive number, 0x… or decimal", q.Get("zxid"))
		}
		s.zxid = z
	case since == "all":
		s.all = true
	case since != "":
		if t, err := time.Parse(time.RFC3339Nano, since); err == nil {
			s.time = t
		} else if d, err := time.ParseDuration(strings.TrimPrefix(since, "-")); err == nil {
			s.time = now.Add(-d)
		} else {
			return nil, fmt.Errorf("since %q: all, an RFC 3339 time or a duration ago (5m)", since)
		}
	case q.Get("last") != "":
		s.all = true
	default:
		return nil, nil
	}
	if l := q.Get("last"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("last %q: a positive number", l)
		}
		s.last = min(n, maxHistoryLines)
	} else {
		s.last = maxHistoryLines
	}
	return s, nil
}

// leave removes a viewer, ending the subscription with the last one.
func (h *traceHub) leave(v *traceViewer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.viewers, v)
	if len(h.viewers) == 0 && h.sub != nil {
		h.sub.Close()
		h.sub = nil
	}
}

// take hands a viewer's writer what the hub let through for it.
func (h *traceHub) take(v *traceViewer, into []trace.Event) ([]trace.Event, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	into = append(into[:0], v.pending...)
	clear(v.pending)
	v.pending = v.pending[:0]
	dropped := v.dropped
	v.dropped = 0
	return into, dropped
}

// run reads sub every tick until it closes, handing each viewer what it
// keeps within its rate.
func (h *traceHub) run(sub *trace.Subscription) {
	tick := time.NewTicker(hubTick)
	defer tick.Stop()
	var lost uint64 // the subscription's drops already counted
	var batch []trace.Event
	for range tick.C {
		batch = batch[:0]
		open := true
	drain:
		for {
			select {
			case e, ok := <-sub.Events():
				if !ok {
					open = false
					break drain
				}
				batch = append(batch, e)
			default:
				break drain
			}
		}
		more := sub.Dropped() - lost
		lost += more
		h.deliver(sub, batch, more)
		if !open {
			return
		}
	}
}

// deliver hands one tick's events to the viewers; more were lost by the
// hub's own buffer.
func (h *traceHub) deliver(sub *trace.Subscription, batch []trace.Event, more uint64) {
	if len(batch) == 0 && more == 0 {
		return
	}
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sub != sub {
		return // ended
	}
	for v := range h.viewers {
		before, lostBefore := len(v.pending), v.dropped
		v.dropped += more
		// The limiter is asked once a tick, not once an event (a busy
		// server publishes thousands a tick): as many events as
		// AllowN(now, 1) one at a time would let through.
		allowed, taken := int(v.limit.TokensAt(now)), 0
		for i := range batch {
			e := &batch[i]
			if !v.filter.Match(e) {
				continue
			}
			if len(v.pending) < v.most && taken < allowed {
				v.pending = append(v.pending, *e)
				taken++
			} else {
				v.dropped++
			}
		}
		if taken > 0 {
			v.limit.AllowN(now, taken)
		}
		h.lost += v.dropped - lostBefore
		if len(v.pending) > before || v.dropped > lostBefore {
			select {
			case v.ready <- struct{}{}:
			default:
			}
		}
	}
}

// traceFilter reads a stream's filter from its query: path (a prefix),
// session (0x... or decimal) and kinds (txn,watch,attach,close).
func traceFilter(r *http.Request) (trace.Filter, error) {
	q := r.URL.Query()
	f := trace.Filter{PathPrefix: q.Get("path"), Session: parseSession(q.Get("session"))}
	if kinds := q.Get("kinds"); kinds != "" {
		for _, name := range strings.Split(kinds, ",") {
			var k trace.Kind
			if err := k.UnmarshalText([]byte(strings.TrimSpace(name))); err != nil {
				return f, err
			}
			f.Kinds = append(f.Kinds, k)
		}
	}
	return f, nil
}

// traceRate reads ?rate=, events a second, within bounds.
func traceRate(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("rate"))
	if err != nil || n <= 0 {
		return defaultTraceRate
	}
	return min(n, maxTraceRate)
}

// historyMark is the line that ends the history a stream asked for:
// what follows happened after it was sent.
type historyMark struct {
	Kind   string    `json:"kind"` // "history"
	Events int       `json:"events"`
	Time   time.Time `json:"time"`
}

// dropReport is the line that tells a reader events were left out.
type dropReport struct {
	Kind    string    `json:"kind"` // "dropped"
	Dropped uint64    `json:"dropped"`
	Time    time.Time `json:"time"`
}

// serveTrace streams the trace as JSON lines until the viewer goes.
func (m *Monitor) serveTrace(w http.ResponseWriter, r *http.Request) {
	b := m.src.Trace()
	if b == nil {
		http.Error(w, "this server publishes no trace", http.StatusNotFound)
		return
	}
	filter, err := traceFilter(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	start, err := traceStart(r, time.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush() // the reader learns the stream is open before any event
	}
	v, past := m.hub.join(b, filter, traceRate(r), start)
	defer m.hub.leave(v)
	enc := json.NewEncoder(w)
	// The history goes out at once: it is bounded, and the reader asked
	// for it; the rate limits what comes after.
	for i := range past {
		if enc.Encode(&past[i]) != nil {
			return
		}
	}
	if start != nil {
		if enc.Encode(historyMark{Kind: "history", Events: len(past), Time: time.Now()}) != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	var events []trace.Event
	for {
		select {
		case <-r.Context().Done():
			return
		case <-v.ready:
		}
		var dropped uint64
		events, dropped = m.hub.take(v, events)
		// The port's write deadline bounds each batch, not the stream.
		httpserve.ExtendWrite(w, httpserve.DefaultWriteTimeout)
		if dropped > 0 && enc.Encode(dropReport{Kind: "dropped", Dropped: dropped, Time: time.Now()}) != nil {
			return
		}
		for i := range events {
			if enc.Encode(&events[i]) != nil {
				return
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}
