package nemesis

import (
	"context"
	"testing"
	"time"
)

// Check runs the nemesis against c from a test: progress and the report go
// to the test's log, a porcupine visualization of an illegal history to
// its temporary directory (unless cfg names one), and tb fails if the run
// could not start or broke any invariant.
func Check(tb testing.TB, c Cluster, cfg Config) *Report {
	tb.Helper()
	if cfg.Logf == nil {
		cfg.Logf = tb.Logf
	}
	if cfg.ArtifactDir == "" {
		cfg.ArtifactDir = tb.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.withDefaults().MaxDuration+5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, c, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Logf("\n%s", rep)
	if err := rep.Err(); err != nil {
		tb.Fatal(err)
	}
	return rep
}
