package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
)

// registerWorkload runs versioned setData and sync+getData on a few
// znodes from several clients, for porcupine to check afterwards.
type registerWorkload struct {
	dir  string
	keys int
	cfg  Config
	h    *History

	mu     sync.Mutex // guards counts
	counts map[string]int
}

func (rw *registerWorkload) key(k int) string { return fmt.Sprintf("%s/k%d", rw.dir, k) }

func (rw *registerWorkload) count(what string) {
	rw.mu.Lock()
	rw.counts[what]++
	rw.mu.Unlock()
}

// Ops returns how many operations have completed, for progress checks.
func (rw *registerWorkload) Ops() int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.counts["read"] + rw.counts["write ok"]
}

// run is one client: one operation at a time, each on a random key.
func (rw *registerWorkload) run(ctx context.Context, client int, s *zkSession, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(client)))
	seen := make([]int32, rw.keys) // last version this client saw per key
	for n := 0; n < 10_000_000 && ctx.Err() == nil; n++ {
		k := rng.IntN(rw.keys)
		p := rw.key(k)
		start := rw.h.Now()
		if rng.IntN(2) == 0 {
			var data []byte
			var st *zk.Stat
			err := Call(ctx, rw.cfg.OpTimeout, func() error {
				if _, err := s.conn.Sync(p); err != nil {
					return err
				}
				var err error
				data, st, err = s.conn.Get(p)
				return err
			})
			if err != nil {
				rw.count("read failed") // a failed read changed nothing
			} else {
				seen[k] = st.Version
				rw.h.Add(client, RegisterInput{Key: k}, start, RegisterOutput{Value: string(data), Version: st.Version})
				rw.count("read")
			}
		} else {
			in := RegisterInput{Key: k, Write: true, Value: fmt.Sprintf("c%d-%d", client, n), Expect: seen[k]}
			var st *zk.Stat
			err := Call(ctx, rw.cfg.OpTimeout, func() error {
				var err error
				st, err = s.conn.Set(p, []byte(in.Value), in.Expect)
				return err
			})
			switch {
			case err == nil:
				seen[k] = st.Version
				rw.h.Add(client, in, start, RegisterOutput{Outcome: OutcomeApplied, Version: st.Version})
				rw.count("write ok")
			case errors.Is(err, zk.ErrBadVersion):
				rw.h.Add(client, in, start, RegisterOutput{Outcome: OutcomeBadVersion})
				rw.count("write bad version")
			case refused(err):
				rw.count("write refused: " + err.Error())
			default:
				rw.h.Add(client, in, start, RegisterOutput{Outcome: OutcomeUnknown})
				rw.count("write unknown")
			}
		}
		// Pace the client a little: the point is many faults, not load.
		if !pause(ctx, 5*time.Millisecond) {
			return
		}
	}
}

// linResult is porcupine's verdict on the register history.
type linResult struct {
	verdict       string // legal, illegal or undecided
	ops, unknown  int
	visualization string
}

// check runs porcupine; an illegal history is drawn, with the faults as
// annotations, into dir.
func (rw *registerWorkload) check(faults []faultRecord, dir string) linResult {
	ops := rw.h.Operations()
	res := linResult{ops: len(ops), unknown: rw.h.Unknown()}
	model := RegisterModel.ToModel()
	verdict, info := porcupine.CheckOperationsVerbose(model, ops, 60*time.Second)
	switch verdict {
	case porcupine.Ok:
		res.verdict = "legal"
		return res
	case porcupine.Illegal:
		res.verdict = "illegal"
	default:
		res.verdict = "undecided within 60s"
		return res
	}
	if dir == "" {
		return res
	}
	var notes []porcupine.Annotation
	for _, f := range faults {
		notes = append(notes, porcupine.Annotation{
			Tag:         "nemesis",
			Start:       rw.h.At(f.start),
			End:         rw.h.At(f.end),
			Description: fmt.Sprintf("%s node %d", f.kind, f.node),
		})
	}
	info.AddAnnotations(notes)
	path := filepath.Join(dir, "linearizability.html")
	if err := porcupine.VisualizePath(model, info, path); err == nil {
		res.visualization = path
	}
	return res
}
