package ensemble

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/raftstore"
)

var (
	linFaults  = flag.Int("lin.faults", 20, "leader kills in TestEnsembleLinearizable")
	linClients = flag.Int("lin.clients", 6, "concurrent clients in TestEnsembleLinearizable")
)

// A register's state in the model: a znode's data and its version.
type register struct {
	value   string
	version int32
}

// linInput is one operation on register key: a versioned setData of value
// expecting version, or a sync followed by getData.
type linInput struct {
	key    int
	write  bool
	value  string
	expect int32
}

type outcome int

const (
	applied    outcome = iota // read answered, or setData acknowledged
	badVersion                // setData refused: the version did not match
	unknown                   // setData's answer was lost with the connection
)

type linOutput struct {
	outcome outcome
	value   string // read: the data seen
	version int32  // read: the version seen; write: the new version
}

// registerModel is a znode under versioned setData and sync+getData. A
// write whose answer was lost may have happened or not.
var registerModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(linInput).key
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	},
	Init: func() []any { return []any{register{value: "init"}} },
	Step: func(state, input, output any) []any {
		st, in, out := state.(register), input.(linInput), output.(linOutput)
		next := register{value: in.value, version: st.version + 1}
		switch {
		case !in.write:
			if out.value == st.value && out.version == st.version {
				return []any{st}
			}
		case out.outcome == applied:
			if st.version == in.expect && out.version == next.version {
				return []any{next}
			}
		case out.outcome == badVersion:
			if st.version != in.expect {
				return []any{st}
			}
		case st.version == in.expect: // unknown: either
			return []any{st, next}
		default:
			return []any{st}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		if !in.write {
			return fmt.Sprintf("k%d read → %q v%d", in.key, out.value, out.version)
		}
		return fmt.Sprintf("k%d set %q if v%d → %v v%d", in.key, in.value, in.expect, out.outcome, out.version)
	},
}

// history records operations from many goroutines with times relative to
// its start.
type history struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	open  []int // indexes of writes with unknown outcome
}

func (h *history) now() int64 { return int64(time.Since(h.start)) }

func (h *history) add(client int, in linInput, call int64, out linOutput) {
	h.mu.Lock()
	defer h.mu.Unlock()
	op := porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: h.now()}
	if out.outcome == unknown {
		h.open = append(h.open, len(h.ops))
	}
	h.ops = append(h.ops, op)
}

// operations returns the history with every write of unknown outcome
// left pending until after the last answer: it may take effect at any
// time after it was sent.
func (h *history) operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	end := h.now() + 1
	ops := slices.Clone(h.ops)
	for _, i := range h.open {
		ops[i].Return = end
	}
	return ops
}

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

	h := &history{start: time.Now()}
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
				call := h.now()
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
					h.add(client, linInput{key: k}, call, linOutput{value: string(data), version: st.Version})
					count("read")
					continue
				}
				in := linInput{key: k, write: true, value: fmt.Sprintf("c%d-%d", client, n), expect: seen[k]}
				var st *zk.Stat
				err := within(opTimeout, func() error {
					var err error
					st, err = c.Set(p, []byte(in.value), in.expect)
					return err
				})
				switch {
				case err == nil:
					seen[k] = st.Version
					h.add(client, in, call, linOutput{outcome: applied, version: st.Version})
					count("write ok")
				case errors.Is(err, zk.ErrBadVersion):
					h.add(client, in, call, linOutput{outcome: badVersion})
					count("write bad version")
				default:
					h.add(client, in, call, linOutput{outcome: unknown})
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

	ops := h.operations()
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
	res, info := porcupine.CheckOperationsVerbose(registerModel.ToModel(), ops, 60*time.Second)
	t.Logf("porcupine: %s in %v", res, time.Since(checkStart).Round(time.Millisecond))
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		path := t.TempDir() + "/linearizability.html"
		if err := porcupine.VisualizePath(registerModel.ToModel(), info, path); err == nil {
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

// TestRegisterModel: the model accepts linearizable histories and rejects
// the violations the ensemble test is after (so that test can fail).
func TestRegisterModel(t *testing.T) {
	w := func(call, ret int64, value string, expect int32, out linOutput) porcupine.Operation {
		return porcupine.Operation{Input: linInput{write: true, value: value, expect: expect}, Call: call, Return: ret, Output: out}
	}
	r := func(call, ret int64, value string, version int32) porcupine.Operation {
		return porcupine.Operation{Input: linInput{}, Call: call, Return: ret, Output: linOutput{value: value, version: version}}
	}
	ok := func(v int32) linOutput { return linOutput{outcome: applied, version: v} }
	tests := []struct {
		name string
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"write then read", []porcupine.Operation{w(0, 1, "a", 0, ok(1)), r(2, 3, "a", 1)}, porcupine.Ok},
		{"stale read after acknowledged write", []porcupine.Operation{w(0, 1, "a", 0, ok(1)), r(2, 3, "init", 0)}, porcupine.Illegal},
		{"concurrent read may see either", []porcupine.Operation{w(0, 5, "a", 0, ok(1)), r(1, 2, "init", 0), r(3, 4, "a", 1)}, porcupine.Ok},
		{"read goes back in time", []porcupine.Operation{w(0, 5, "a", 0, ok(1)), r(1, 2, "a", 1), r(3, 4, "init", 0)}, porcupine.Illegal},
		{"two writes win the same version", []porcupine.Operation{w(0, 1, "a", 0, ok(1)), w(2, 3, "b", 0, ok(1))}, porcupine.Illegal},
		{"bad version when it matched", []porcupine.Operation{w(0, 1, "a", 0, linOutput{outcome: badVersion})}, porcupine.Illegal},
		{"lost write seen later", []porcupine.Operation{w(0, 100, "a", 0, linOutput{outcome: unknown}), r(2, 3, "a", 1)}, porcupine.Ok},
		{"lost write never seen", []porcupine.Operation{w(0, 100, "a", 0, linOutput{outcome: unknown}), r(2, 3, "init", 0)}, porcupine.Ok},
		{"read of a value never written", []porcupine.Operation{r(0, 1, "zzz", 1)}, porcupine.Illegal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperationsTimeout(registerModel.ToModel(), tc.ops, 10*time.Second); got != tc.want {
				t.Fatalf("check = %s, want %s", got, tc.want)
			}
		})
	}
}
