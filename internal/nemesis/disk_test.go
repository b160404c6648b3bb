package nemesis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// fakeDisks is a DiskCluster whose nodes are only up or down, and whose
// logs hold nothing to damage, as a node's just after it was restarted
// on an empty disk.
type fakeDisks struct {
	addrs []string
	down  map[int]bool
	calls []string
}

func (f *fakeDisks) Size() int             { return len(f.addrs) }
func (f *fakeDisks) ClientAddrs() []string { return f.addrs }
func (f *fakeDisks) Leader() int           { return 0 }
func (f *fakeDisks) Kill(i int) error {
	f.calls = append(f.calls, fmt.Sprintf("kill %d", i))
	f.down[i] = true
	return nil
}
func (f *fakeDisks) Restart(i int) error {
	f.calls = append(f.calls, fmt.Sprintf("restart %d", i))
	f.down[i] = false
	return nil
}
func (f *fakeDisks) Pause(int) error                  { return ErrUnsupported }
func (f *fakeDisks) Resume(int) error                 { return ErrUnsupported }
func (f *fakeDisks) Isolate(int) error                { return ErrUnsupported }
func (f *fakeDisks) Heal() error                      { return ErrUnsupported }
func (f *fakeDisks) Skew(int, time.Duration) error    { return ErrUnsupported }
func (f *fakeDisks) CutOneWay(int, int) error         { return ErrUnsupported }
func (f *fakeDisks) Flood(int) (func() string, error) { return nil, ErrUnsupported }
func (f *fakeDisks) Expiries() ([]ServerExpiry, error) {
	return nil, ErrUnsupported
}
func (f *fakeDisks) Digests() ([]string, error) { return nil, ErrUnsupported }
func (f *fakeDisks) FillDisk(int) error         { return ErrUnsupported }
func (f *fakeDisks) FailSyncs(int) error        { return ErrUnsupported }
func (f *fakeDisks) DamageLog(i int, _ Damage) (string, error) {
	f.calls = append(f.calls, fmt.Sprintf("damage %d", i))
	return "", errors.New("diskfault: no log files")
}
func (f *fakeDisks) Recover(i int, _ bool) error { return f.Restart(i) }
func (f *fakeDisks) Halted(int) bool             { return false }

// closedAddr is a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestDamageThatFailsLeavesNoNodeDown: a damage fault that finds nothing
// to damage (a node just restarted on an empty disk holds no log) must
// start the node it killed again before the run stops on the error;
// seed 1795789472584273453 of TestEnsembleNemesisDisk ended with a node
// down and the final digests failing for that alone. It also waits for
// the target to serve before killing it, which the problems show here,
// where no node ever serves.
func TestDamageThatFailsLeavesNoNodeDown(t *testing.T) {
	for _, kind := range []Kind{FlippedByte, TornTail} {
		t.Run(string(kind), func(t *testing.T) {
			f := &fakeDisks{addrs: []string{closedAddr(t), closedAddr(t), closedAddr(t)}, down: map[int]bool{}}
			r := &runner{c: f, cfg: Config{RecoverTimeout: 200 * time.Millisecond, OpTimeout: 200 * time.Millisecond}.withDefaults(),
				addrs: f.addrs, rep: &Report{Faults: map[Kind]int{}}}
			err := r.injectDisk(context.Background(), kind, 1)
			if err == nil || !strings.Contains(err.Error(), "no log files") {
				t.Fatalf("injectDisk = %v, want the damage's error", err)
			}
			if f.down[1] {
				t.Errorf("node 1 left down; calls: %v", f.calls)
			}
			if got := strings.Join(f.calls, ", "); got != "kill 1, damage 1, restart 1" {
				t.Errorf("calls %q, want kill, damage, restart", got)
			}
			if len(r.problems) != 1 || !strings.Contains(r.problems[0], "node 1, restarted after a disk fault") {
				t.Errorf("problems %q, want one: the target did not serve before it was damaged", r.problems)
			}
		})
	}
}
