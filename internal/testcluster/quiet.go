package testcluster

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// quietLog keeps a test's log to what it did not ask for. While a fault
// the test caused is in effect (a member killed or paused, a partition, a
// cut, a shaped link), and for a settling time after the last one heals,
// the warnings and errors the members log about it (peers unreachable,
// heartbeats failing, elections) are logged at Info instead, marked
// fault=injected: at the default Warn level they are not shown, at Info
// they still are.
type quietLog struct {
	settle time.Duration

	mu     sync.Mutex // guards the fields below
	active bool       // a fault is in effect
	until  time.Time  // the settling time after the last heal
}

func (q *quietLog) fault() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.active = true
}

// healed records a heal; still says a fault remains in effect.
func (q *quietLog) healed(still bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !still && q.active {
		q.active = false
		q.until = time.Now().Add(q.settle)
	}
}

func (q *quietLog) quiet() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active || time.Now().Before(q.until)
}

func (q *quietLog) wrap(h slog.Handler) slog.Handler { return &quietHandler{q: q, h: h} }

// quietHandler demotes records while its quietLog is quiet.
type quietHandler struct {
	q *quietLog
	h slog.Handler
}

func (h *quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.h.Enabled(ctx, l) || (l >= slog.LevelWarn && h.h.Enabled(ctx, slog.LevelInfo))
}

func (h *quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && h.q.quiet() {
		r = r.Clone()
		r.Level = slog.LevelInfo
		r.AddAttrs(slog.String("fault", "injected"))
	}
	if !h.h.Enabled(ctx, r.Level) {
		return nil
	}
	return h.h.Handle(ctx, r)
}

func (h *quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &quietHandler{q: h.q, h: h.h.WithAttrs(as)}
}

func (h *quietHandler) WithGroup(name string) slog.Handler {
	return &quietHandler{q: h.q, h: h.h.WithGroup(name)}
}
