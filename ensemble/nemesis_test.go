package ensemble

import (
	"flag"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/nemesis"
)

var (
	nemesisFaults = flag.Int("nemesis.faults", 8, "faults TestEnsembleNemesis injects (100 or more for a long run)")
	nemesisSeed   = flag.Uint64("nemesis.seed", 0, "fault schedule seed for TestEnsembleNemesis (0: from the clock, logged)")
)

// TestEnsembleNemesis runs the nemesis against three hutch processes:
// SIGKILL and restart, SIGSTOP longer than the session timeout, silent
// partitions (when the binary can sit behind a switch) and leader kills
// during session churn, one at a time, under a fenced lock, pipelined
// writers, long-lived sessions, churn and a linearizable register. It
// fails if any of ZooKeeper's guarantees the nemesis checks is broken.
func TestEnsembleNemesis(t *testing.T) {
	c := startProcCluster(t)
	nemesis.Check(t, c, nemesis.Config{
		Seed:           *nemesisSeed,
		Faults:         *nemesisFaults,
		SessionTimeout: 4 * time.Second,
		PauseFor:       5 * time.Second,
		PartitionFor:   3 * time.Second,
	})
}
