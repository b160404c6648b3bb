package raftstore

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// hclogger lets Raft, which logs through hclog, write to the server's slog
// logger. Levels map one to one (Trace becomes Debug-4); key/value arguments
// pass through unchanged since both libraries use alternating pairs.
type hclogger struct {
	l       *slog.Logger
	name    string
	implied []any
	quiet   *repeats
}

func newHCLogger(l *slog.Logger, name string) hclog.Logger {
	return &hclogger{l: l, name: name, quiet: &repeats{last: make(map[string]*repeat)}}
}

// repeatWindow is how often one Raft warning or error message may be
// logged: with a peer down Raft reports every failed heartbeat and append,
// several times a second, which buries everything else.
const repeatWindow = 10 * time.Second

// repeats tracks when each warning or error message was last logged and how
// many were dropped since.
type repeats struct {
	mu   sync.Mutex
	last map[string]*repeat
}

type repeat struct {
	at      time.Time
	dropped int
}

// allow reports whether msg may be logged now, and how many copies were
// dropped before it.
func (r *repeats) allow(msg string, now time.Time) (ok bool, dropped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rp := r.last[msg]
	if rp == nil {
		if len(r.last) > 1024 {
			clear(r.last) // messages are Raft's fixed strings; this is a backstop
		}
		r.last[msg] = &repeat{at: now}
		return true, 0
	}
	if now.Sub(rp.at) < repeatWindow {
		rp.dropped++
		return false, 0
	}
	dropped = rp.dropped
	rp.at, rp.dropped = now, 0
	return true, dropped
}

const levelTrace = slog.LevelDebug - 4

// msgFirstElection is Raft's warning when a follower's heartbeat timeout
// passes; it names the last leader, "" if none was ever known.
const msgFirstElection = "heartbeat timeout reached, starting election"

// noLeaderYet reports whether Raft's arguments name no last leader.
func noLeaderYet(args []any) bool {
	for i := 0; i+1 < len(args); i += 2 {
		if args[i] == "last-leader-id" {
			return fmt.Sprint(args[i+1]) == ""
		}
	}
	return false
}

func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return levelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (h *hclogger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Warn && msg == msgFirstElection && noLeaderYet(args) {
		// A node that has never known a leader starts an election once
		// its heartbeat timeout passes: how every node starts, a single
		// one from zoo.cfg included, not a warning.
		level = hclog.Info
	}
	if level == hclog.Off || !h.l.Enabled(context.Background(), slogLevel(level)) {
		return
	}
	if level >= hclog.Warn {
		ok, dropped := h.quiet.allow(h.name+msg, time.Now())
		if !ok {
			return
		}
		if dropped > 0 {
			args = append(args[:len(args):len(args)], "repeats_dropped", dropped)
		}
	}
	h.l.Log(context.Background(), slogLevel(level), h.name+": "+msg, formatArgs(args)...)
}

// formatArgs renders the values hclog formats itself: hclog.Fmt's
// format and arguments (Raft logs its initial configuration so), and
// numbers it is told to show in hex, octal or binary. slog would print a
// Format as its raw parts, the format string included.
func formatArgs(args []any) []any {
	var out []any
	for i, a := range args {
		var v any
		switch a := a.(type) {
		case hclog.Format:
			if len(a) > 0 {
				if f, ok := a[0].(string); ok {
					v = fmt.Sprintf(f, a[1:]...)
					break
				}
			}
			v = fmt.Sprint(a...)
		case hclog.Hex:
			v = fmt.Sprintf("0x%x", int(a))
		case hclog.Octal:
			v = fmt.Sprintf("0%o", int(a))
		case hclog.Binary:
			v = fmt.Sprintf("0b%b", int(a))
		default:
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = v
	}
	if out == nil {
		return args
	}
	return out
}

func (h *hclogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hclogger) enabled(l slog.Level) bool { return h.l.Enabled(context.Background(), l) }

func (h *hclogger) IsTrace() bool { return h.enabled(levelTrace) }
func (h *hclogger) IsDebug() bool { return h.enabled(slog.LevelDebug) }
func (h *hclogger) IsInfo() bool  { return h.enabled(slog.LevelInfo) }
func (h *hclogger) IsWarn() bool  { return h.enabled(slog.LevelWarn) }
func (h *hclogger) IsError() bool { return h.enabled(slog.LevelError) }

func (h *hclogger) ImpliedArgs() []any { return h.implied }

func (h *hclogger) With(args ...any) hclog.Logger {
	return &hclogger{l: h.l.With(args...), name: h.name, implied: append(h.implied[:len(h.implied):len(h.implied)], args...), quiet: h.quiet}
}

func (h *hclogger) Name() string { return h.name }

func (h *hclogger) Named(name string) hclog.Logger {
	n := name
	if h.name != "" {
		n = h.name + "." + name
	}
	return &hclogger{l: h.l, name: n, implied: h.implied, quiet: h.quiet}
}

func (h *hclogger) ResetNamed(name string) hclog.Logger {
	return &hclogger{l: h.l, name: name, implied: h.implied, quiet: h.quiet}
}

// SetLevel is ignored: the slog handler decides what is enabled.
func (h *hclogger) SetLevel(hclog.Level) {}

func (h *hclogger) GetLevel() hclog.Level {
	switch {
	case h.IsTrace():
		return hclog.Trace
	case h.IsDebug():
		return hclog.Debug
	case h.IsInfo():
		return hclog.Info
	case h.IsWarn():
		return hclog.Warn
	}
	return hclog.Error
}

func (h *hclogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return slog.NewLogLogger(h.l.Handler(), slog.LevelInfo)
}

func (h *hclogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return h.StandardLogger(opts).Writer()
}
