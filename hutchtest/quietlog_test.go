package hutchtest

import (
	"log/slog"
	"strings"
	"testing"
)

// TestFaultsLogQuietly: the warnings members log about faults the test
// caused (a killed leader, a partition) are not shown at the default
// level (Warn), and at Info they are shown marked fault=injected: what a
// test's log shows at Warn is what it did not ask for.
func TestFaultsLogQuietly(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelWarn, slog.LevelInfo} {
		t.Run(level.String(), func(t *testing.T) {
			lt := &logTB{TB: t}
			e := StartEnsemble(lt, 3, LogLevel(level))
			lead := e.Leader()
			e.Kill(lead)
			e.Leader()
			e.Restart(lead)
			cut := e.WaitLeader()
			e.Partition([]int{cut})
			e.Leader()
			e.Heal()
			e.WaitLeader()
			var warned, injected []string
			for _, line := range strings.Split(lt.all(), "\n") {
				switch {
				case strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR"):
					warned = append(warned, line)
				case strings.Contains(line, "fault=injected"):
					injected = append(injected, line)
				}
			}
			if len(warned) > 0 {
				t.Errorf("%d warnings about the faults the test caused:\n%s", len(warned), strings.Join(warned, "\n"))
			}
			if level == slog.LevelInfo && len(injected) == 0 {
				t.Errorf("at Info no line marked fault=injected:\n%s", lt.all())
			}
		})
	}
}
