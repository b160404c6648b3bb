package nemesis

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// RegisterInput is one operation on register Key: a versioned setData of
// Value expecting version Expect, or (Write false) a sync followed by
// getData.
type RegisterInput struct {
	Key    int
	Write  bool
	Value  string
	Expect int32
}

// Outcome is how a register operation ended.
type Outcome int

const (
	// OutcomeApplied is a read answered or a setData acknowledged.
	OutcomeApplied Outcome = iota
	// OutcomeBadVersion is a setData refused because the version did not
	// match.
	OutcomeBadVersion
	// OutcomeUnknown is a setData whose answer was lost with the
	// connection: it may have happened or not.
	OutcomeUnknown
)

func (o Outcome) String() string {
	switch o {
	case OutcomeApplied:
		return "ok"
	case OutcomeBadVersion:
		return "bad version"
	case OutcomeUnknown:
		return "unknown"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// RegisterOutput is what a register operation returned.
type RegisterOutput struct {
	Outcome Outcome
	Value   string // read: the data seen
	Version int32  // read: the version seen; write: the new version
}

// registerState is a znode's data and version in the model.
type registerState struct {
	value   string
	version int32
}

// RegisterModel is a znode under versioned setData and sync+getData, each
// key starting at data "init" and version 0. A write whose answer was lost
// may have happened or not.
var RegisterModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(RegisterInput).Key
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	},
	Init: func() []any { return []any{registerState{value: "init"}} },
	Step: func(state, input, output any) []any {
		st, in, out := state.(registerState), input.(RegisterInput), output.(RegisterOutput)
		next := registerState{value: in.Value, version: st.version + 1}
		switch {
		case !in.Write:
			if out.Value == st.value && out.Version == st.version {
				return []any{st}
			}
		case out.Outcome == OutcomeApplied:
			if st.version == in.Expect && out.Version == next.version {
				return []any{next}
			}
		case out.Outcome == OutcomeBadVersion:
			if st.version != in.Expect {
				return []any{st}
			}
		case st.version == in.Expect: // unknown: either
			return []any{st, next}
		default:
			return []any{st}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(RegisterInput), output.(RegisterOutput)
		if !in.Write {
			return fmt.Sprintf("k%d read → %q v%d", in.Key, out.Value, out.Version)
		}
		return fmt.Sprintf("k%d set %q if v%d → %v v%d", in.Key, in.Value, in.Expect, out.Outcome, out.Version)
	},
}

// History records register operations from many goroutines, timed from
// its creation. Each client must run one operation at a time.
type History struct {
	start        time.Time
	sessionOrder bool

	mu   sync.Mutex // guards ops and open
	ops  []porcupine.Operation
	open map[int][]int // per client, indexes of writes of unknown outcome
}

// NewHistory returns a history in which a write of unknown outcome stays
// pending until after the last answer: it may take effect at any time
// after it was sent.
func NewHistory() *History {
	return &History{start: time.Now(), open: make(map[int][]int)}
}

// NewSessionHistory returns a history that also holds the server to
// ZooKeeper's FIFO client order: a client's write of unknown outcome, if
// it took effect at all, did so before that client's next operation was
// answered, so it is pending only until then. Each client must use one
// session (or, after an expiry, its successor through the same client
// object, whose request queue keeps the order).
func NewSessionHistory() *History {
	h := NewHistory()
	h.sessionOrder = true
	return h
}

// Now returns the time since the history began, its timestamp unit.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// At converts a wall time into the history's timestamps.
func (h *History) At(t time.Time) int64 { return int64(t.Sub(h.start)) }

// Add records an operation by client, called at call and answered now.
func (h *History) Add(client int, in RegisterInput, call int64, out RegisterOutput) {
	h.mu.Lock()
	defer h.mu.Unlock()
	op := porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: h.Now()}
	if out.Outcome == OutcomeUnknown {
		h.open[client] = append(h.open[client], len(h.ops))
	} else if h.sessionOrder {
		for _, i := range h.open[client] {
			h.ops[i].Return = op.Return
		}
		delete(h.open, client)
	}
	h.ops = append(h.ops, op)
}

// Operations returns the history for porcupine, with every write of
// unknown outcome still open ending after the last answer.
func (h *History) Operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	end := h.Now() + 1
	ops := slices.Clone(h.ops)
	for _, idx := range h.open {
		for _, i := range idx {
			ops[i].Return = end
		}
	}
	return ops
}

// Unknown returns how many writes of unknown outcome were recorded.
func (h *History) Unknown() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, op := range h.ops {
		if op.Output.(RegisterOutput).Outcome == OutcomeUnknown {
			n++
		}
	}
	return n
}
