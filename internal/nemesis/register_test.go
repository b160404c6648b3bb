package nemesis

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func regWrite(call, ret int64, value string, expect int32, out RegisterOutput) porcupine.Operation {
	return porcupine.Operation{Input: RegisterInput{Write: true, Value: value, Expect: expect}, Call: call, Return: ret, Output: out}
}

func regRead(call, ret int64, value string, version int32) porcupine.Operation {
	return porcupine.Operation{Input: RegisterInput{}, Call: call, Return: ret, Output: RegisterOutput{Value: value, Version: version}}
}

// TestRegisterModel: the model accepts linearizable histories and rejects
// the violations the fault tests are after (so they can fail).
func TestRegisterModel(t *testing.T) {
	ok := func(v int32) RegisterOutput { return RegisterOutput{Outcome: OutcomeApplied, Version: v} }
	w, r := regWrite, regRead
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
		{"bad version when it matched", []porcupine.Operation{w(0, 1, "a", 0, RegisterOutput{Outcome: OutcomeBadVersion})}, porcupine.Illegal},
		{"lost write seen later", []porcupine.Operation{w(0, 100, "a", 0, RegisterOutput{Outcome: OutcomeUnknown}), r(2, 3, "a", 1)}, porcupine.Ok},
		{"lost write never seen", []porcupine.Operation{w(0, 100, "a", 0, RegisterOutput{Outcome: OutcomeUnknown}), r(2, 3, "init", 0)}, porcupine.Ok},
		{"read of a value never written", []porcupine.Operation{r(0, 1, "zzz", 1)}, porcupine.Illegal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperationsTimeout(RegisterModel.ToModel(), tc.ops, 10*time.Second); got != tc.want {
				t.Fatalf("check = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestSessionHistory: a lost write stays open until the end in a plain
// history, and only until the same client's next answer in a session
// history, so a write that lands after its client moved on is caught.
func TestSessionHistory(t *testing.T) {
	lost := RegisterInput{Key: 0, Write: true, Value: "late", Expect: 0}
	tests := []struct {
		name    string
		history func() *History
		want    porcupine.CheckResult
	}{
		{"plain history lets the lost write land any time", NewHistory, porcupine.Ok},
		{"session history: the write landed after its client's next answer", NewSessionHistory, porcupine.Illegal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.history()
			// Client 0 loses a write and goes on with a read: in FIFO
			// order the write, if it happened, did so before that read
			// was answered...
			call := h.Now()
			h.Add(0, lost, call, RegisterOutput{Outcome: OutcomeUnknown})
			call = h.Now()
			h.Add(0, RegisterInput{Key: 0}, call, RegisterOutput{Value: "init", Version: 0})
			// ...so once another client has seen it missing after that,
			// it must never show up.
			call = h.Now()
			h.Add(1, RegisterInput{Key: 0}, call, RegisterOutput{Value: "init", Version: 0})
			call = h.Now()
			h.Add(1, RegisterInput{Key: 0}, call, RegisterOutput{Value: "late", Version: 1})
			ops := h.Operations()
			if got := porcupine.CheckOperationsTimeout(RegisterModel.ToModel(), ops, 10*time.Second); got != tc.want {
				t.Fatalf("check = %s, want %s", got, tc.want)
			}
			if h.Unknown() != 1 {
				t.Fatalf("unknown = %d, want 1", h.Unknown())
			}
		})
	}
}
