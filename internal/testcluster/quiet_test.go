package testcluster

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestQuietLog: while a fault the test caused is in effect, and for the
// settling time after it heals, warnings are logged at Info, marked
// fault=injected, so a handler at Warn drops them and one at Info shows
// them; otherwise they stay warnings.
func TestQuietLog(t *testing.T) {
	q := &quietLog{settle: 50 * time.Millisecond}
	var warnOut, infoOut bytes.Buffer
	atWarn := slog.New(q.wrap(slog.NewTextHandler(&warnOut, &slog.HandlerOptions{Level: slog.LevelWarn}))).With("member", 2)
	atInfo := slog.New(q.wrap(slog.NewTextHandler(&infoOut, &slog.HandlerOptions{Level: slog.LevelInfo})))

	atWarn.Warn("before")
	q.fault()
	atWarn.Warn("during")
	atInfo.Error("during")
	q.healed(false)
	atWarn.Warn("settling")
	time.Sleep(60 * time.Millisecond)
	atWarn.Warn("after")

	if got := warnOut.String(); !strings.Contains(got, "msg=before member=2") || !strings.Contains(got, "msg=after") ||
		strings.Contains(got, "during") || strings.Contains(got, "settling") {
		t.Errorf("at Warn:\n%s", got)
	}
	if got := infoOut.String(); !strings.Contains(got, "level=INFO msg=during fault=injected") {
		t.Errorf("at Info:\n%s", got)
	}
}
