package raftstore

import (
	"context"
	"io"
	"log"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// hclogger lets Raft, which logs through hclog, write to the server's slog
// logger. Levels map one to one (Trace becomes Debug-4); key/value arguments
// pass through unchanged since both libraries use alternating pairs.
type hclogger struct {
	l       *slog.Logger
	name    string
	implied []any
}

func newHCLogger(l *slog.Logger, name string) hclog.Logger {
	return &hclogger{l: l, name: name}
}

const levelTrace = slog.LevelDebug - 4

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
	if level == hclog.Off || !h.l.Enabled(context.Background(), slogLevel(level)) {
		return
	}
	h.l.Log(context.Background(), slogLevel(level), h.name+": "+msg, args...)
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
	return &hclogger{l: h.l.With(args...), name: h.name, implied: append(h.implied[:len(h.implied):len(h.implied)], args...)}
}

func (h *hclogger) Name() string { return h.name }

func (h *hclogger) Named(name string) hclog.Logger {
	n := name
	if h.name != "" {
		n = h.name + "." + name
	}
	return &hclogger{l: h.l, name: n, implied: h.implied}
}

func (h *hclogger) ResetNamed(name string) hclog.Logger {
	return &hclogger{l: h.l, name: name, implied: h.implied}
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
