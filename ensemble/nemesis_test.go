package ensemble

import (
	"flag"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/diskfault"
	"github.com/hutchzk/hutch/internal/nemesis"
)

var (
	nemesisFaults = flag.Int("nemesis.faults", 10, "faults TestEnsembleNemesis injects (100 or more for a long run)")
	nemesisSeed   = flag.Uint64("nemesis.seed", 0, "fault schedule seed for TestEnsembleNemesis (0: from the clock, logged)")
	nemesisKinds  = flag.String("nemesis.kinds", "", "comma-separated fault kinds TestEnsembleNemesis injects (default: all)")
)

// TestEnsembleNemesis runs the nemesis against three hutch processes:
// SIGKILL and restart, SIGSTOP longer than the session timeout, silent
// partitions (when the binary can sit behind a switch) and leader kills
// during session churn, one at a time, under a fenced lock, pipelined
// writers, long-lived sessions, churn and a linearizable register. It
// fails if any of ZooKeeper's guarantees the nemesis checks is broken.
func TestEnsembleNemesis(t *testing.T) {
	kinds, err := nemesis.ParseKinds(*nemesisKinds)
	if err != nil {
		t.Fatal(err)
	}
	c := startProcCluster(t, diskfault.CanMount(t))
	nemesis.Check(t, c, nemesis.Config{
		Seed:           *nemesisSeed,
		Faults:         *nemesisFaults,
		Kinds:          kinds,
		SessionTimeout: 4 * time.Second,
		PauseFor:       5 * time.Second,
		PartitionFor:   3 * time.Second,
	})
	// A flood of strangers costs the node a bounded amount of memory.
	for _, rss := range c.floodRSS {
		if grew := rss[1] - rss[0]; grew > maxFloodGrowthKiB {
			t.Errorf("a flooded node's resident memory grew by %d KiB (from %d KiB), bound %d KiB", grew, rss[0], maxFloodGrowthKiB)
		}
	}
}

var nemesisDiskFaults = flag.Int("nemesis.diskfaults", len(nemesis.DiskKinds), "faults TestEnsembleNemesisDisk injects, disk faults only")

// TestEnsembleNemesisDisk runs the nemesis's disk faults against three
// hutch processes, each on a disk of its own (ext4 on a loop device):
// a follower's, the leader's and every member's filesystem full, a
// follower's fsyncs failing, a byte of a stopped follower's log changed
// and its tail torn, under the usual workloads and checks, reads without
// sync among them.
func TestEnsembleNemesisDisk(t *testing.T) {
	if !diskfault.CanMount(t) {
		t.Skip("the disk faults need root to mount disks")
	}
	c := startProcCluster(t, true)
	nemesis.Check(t, c, nemesis.Config{
		Seed:           *nemesisSeed,
		Faults:         max(*nemesisDiskFaults, 1),
		Kinds:          nemesis.DiskKinds,
		SessionTimeout: 4 * time.Second,
	})
}

// maxFloodGrowthKiB bounds how much a peer flood may grow a node's
// resident memory: the handshake slots hold at most a few thousand
// connections of a few KiB each.
const maxFloodGrowthKiB = 64 << 10
