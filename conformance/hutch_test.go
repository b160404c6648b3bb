package conformance

import (
	"log/slog"
	"testing"

	"github.com/hutchzk/hutch/server"
)

// startHutch runs an in-process hutch with ZooKeeper's defaults on a free
// loopback port; its debug logs are shown if the test fails.
func startHutch(tb testing.TB) string {
	tb.Helper()
	return startHutchConfig(tb, server.Config{}, slog.LevelDebug)
}

// startHutchConfig runs an in-process hutch with cfg on a free loopback
// port; its logs at level and above are shown if the test fails.
func startHutchConfig(tb testing.TB, cfg server.Config, level slog.Level) string {
	tb.Helper()
	logs := newLogBuffer()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))
	srv := server.New(cfg)
	if err := srv.Start(); err != nil {
		tb.Fatalf("start hutch: %v", err)
	}
	dumpOnFailure(tb, "hutch log", logs) // registered first so it runs after Close
	tb.Cleanup(func() {
		if err := srv.Close(); err != nil {
			tb.Errorf("close hutch: %v", err)
		}
	})
	return srv.Addr().String()
}
