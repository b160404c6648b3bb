package ensemble

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/nemesis"
	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/raftstore"
)

var (
	linFaults  = flag.Int("lin.faults", 20, "leader kills in TestEnsembleLinearizable")
	linClients = flag.Int("lin.clients", 6, "concurrent clients in TestEnsembleLinearizable")
)

// leaderNow returns the live node whose srvr reports Mode: leader.
func (e *ensemble) leaderNow() *node {
	for _, nd := range e.nodes {
		if realzk.Mode(nd.clientAddr, 500*time.Millisecond) == "leader" {
			return nd
		}
	}
	return nil
}

// waitLeader polls every node's srvr until one other than except leads.
func (e *ensemble) waitLeader(except *node, limit time.Duration) (*node, time.Duration) {
	e.tb.Helper()
	start := time.Now()
	for time.Since(start) < limit {
		if l := e.leaderNow(); l != nil && l != except {
			return l, time.Since(start)
		}
		time.Sleep(5 * time.Millisecond) // polling other processes
	}
	e.tb.Fatalf("no leader within %v", limit)
	return nil, 0
}

// TestEnsembleLinearizable: clients on all three nodes run versioned
// setData and sync+getData on three znodes while the leader is killed
// with SIGKILL and restarted again and again; porcupine then checks that
// the history has a linearization. It also times each election.
func TestEnsembleLinearizable(t *testing.T) {
	const keys = 3
	e := startEnsemble(t, 3)
	admin := e.dial(e.addrs()...)
	for k := range keys {
		if _, err := admin.Create(fmt.Sprintf("/k%d", k), []byte("init"), 0, openACL); err != nil {
			t.Fatal(err)
		}
	}

	h := nemesis.NewHistory()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var countMu sync.Mutex
	counts := map[string]int{}
	count := func(what string) {
		countMu.Lock()
		counts[what]++
		countMu.Unlock()
	}
	for client := range *linClients {
		c := e.dial(e.addrs()...)
		rng := rand.New(rand.NewPCG(uint64(client), 42))
		wg.Go(func() {
			seen := make([]int32, keys) // last version this client saw per key
			for n := 0; n < 1_000_000; n++ {
				select {
				case <-stop:
					return
				default:
				}
				k := rng.IntN(keys)
				p := fmt.Sprintf("/k%d", k)
				call := h.Now()
				if rng.IntN(2) == 0 {
					var data []byte
					var st *zk.Stat
					err := within(opTimeout, func() error {
						if _, err := c.Sync(p); err != nil {
							return err
						}
						var err error
						data, st, err = c.Get(p)
						return err
					})
					if err != nil {
						count("read failed")
						continue // a read that failed changed nothing
					}
					seen[k] = st.Version
					h.Add(client, nemesis.RegisterInput{Key: k}, call, nemesis.RegisterOutput{Value: string(data), Version: st.Version})
					count("read")
					continue
				}
				in := nemesis.RegisterInput{Key: k, Write: true, Value: fmt.Sprintf("c%d-%d", client, n), Expect: seen[k]}
				var st *zk.Stat
				err := within(opTimeout, func() error {
					var err error
					st, err = c.Set(p, []byte(in.Value), in.Expect)
					return err
				})
				switch {
				case err == nil:
					seen[k] = st.Version
					h.Add(client, in, call, nemesis.RegisterOutput{Outcome: nemesis.OutcomeApplied, Version: st.Version})
					count("write ok")
				case errors.Is(err, zk.ErrBadVersion):
					h.Add(client, in, call, nemesis.RegisterOutput{Outcome: nemesis.OutcomeBadVersion})
					count("write bad version")
				default:
					h.Add(client, in, call, nemesis.RegisterOutput{Outcome: nemesis.OutcomeUnknown})
					count("write unknown: " + err.Error())
				}
			}
		})
	}

	// Kill the leader, time the election, restart the victim; repeat.
	electionTimeout := raftstore.DefaultElectionTimeout
	faultDeadline := time.Now().Add(75 * time.Second)
	rng := rand.New(rand.NewPCG(7, 7))
	var elections []time.Duration
	for len(elections) < *linFaults && time.Now().Before(faultDeadline) {
		leader, _ := e.waitLeader(nil, 20*time.Second)
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond) // let the clients run under this leader
		e.kill(leader)
		_, took := e.waitLeader(leader, 20*time.Second)
		elections = append(elections, took)
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		e.startNodes(leader)
	}
	// Let the clients run once more with all three up, then stop them.
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()

	ops := h.Operations()
	t.Logf("%d operations: %v", len(ops), counts)
	slices.Sort(elections)
	within2 := 0
	for _, d := range elections {
		if d <= 2*electionTimeout {
			within2++
		}
	}
	t.Logf("%d leader kills; new leader after (sorted) %v; %d of %d within 2× the election timeout (%v)",
		len(elections), roundAll(elections), within2, len(elections), 2*electionTimeout)
	if len(elections) < *linFaults {
		t.Fatalf("only %d leader kills in the time allowed, want %d", len(elections), *linFaults)
	}
	if counts["write ok"] < 100 || counts["read"] < 100 {
		t.Fatalf("too little work to check: %v", counts)
	}

	// Raft's randomised timers make 2× a bound that almost always holds,
	// not a guarantee; a loaded machine may push one election past it.
	if within2*10 < len(elections)*9 || elections[len(elections)-1] > 4*electionTimeout {
		t.Errorf("elections too slow: %d of %d within %v, slowest %v",
			within2, len(elections), 2*electionTimeout, elections[len(elections)-1])
	}

	checkStart := time.Now()
	res, info := porcupine.CheckOperationsVerbose(nemesis.RegisterModel.ToModel(), ops, 60*time.Second)
	t.Logf("porcupine: %s in %v", res, time.Since(checkStart).Round(time.Millisecond))
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		path := filepath.Join(os.TempDir(), fmt.Sprintf("linearizability-%d.html", time.Now().UnixNano()))
		if err := porcupine.VisualizePath(nemesis.RegisterModel.ToModel(), info, path); err == nil {
			t.Logf("visualization: %s", path)
		}
		t.Fatal("history is not linearizable")
	default:
		t.Fatal("porcupine could not decide within 60s")
	}
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
