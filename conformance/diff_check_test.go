package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// diffEnv compares two servers: ref, the reference, and cand, the
// candidate. Every run gets fresh roots /diff<N> on both, so one server
// process serves many runs; what a run shows is normalized relative to its
// own root, sessions and first-seen zxids, so earlier runs cannot leak in.
type diffEnv struct {
	ref, cand     string // addresses
	refN, candN   string // names for messages
	next          int
	probes        int
	maxProbes     int
	shrinkTimeout time.Duration
}

// diffMismatch is the first op whose transcripts differ.
type diffMismatch struct {
	Index     int
	Op        diffOp
	Ref, Cand string
}

func (m *diffMismatch) String() string {
	return fmt.Sprintf("op #%d %s\n  ref:  %s\n  cand: %s", m.Index, m.Op, m.Ref, m.Cand)
}

func (e *diffEnv) root() string {
	e.next++
	return "/diff" + strconv.Itoa(e.next)
}

// compare runs ops on both servers and returns the first difference, or
// nil, with both transcripts.
func (e *diffEnv) compare(ops []diffOp) (*diffMismatch, []string, []string, error) {
	e.probes++
	refLines, err := runDiffOps(e.ref, e.root(), ops)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", e.refN, err)
	}
	candLines, err := runDiffOps(e.cand, e.root(), ops)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", e.candN, err)
	}
	n := min(len(refLines), len(candLines))
	for i := range n {
		if refLines[i] != candLines[i] {
			return &diffMismatch{Index: i, Op: ops[i], Ref: refLines[i], Cand: candLines[i]}, refLines, candLines, nil
		}
	}
	if len(refLines) != len(candLines) {
		return &diffMismatch{Index: n, Op: ops[min(n, len(ops)-1)], Ref: fmt.Sprint(len(refLines), " lines"), Cand: fmt.Sprint(len(candLines), " lines")}, refLines, candLines, nil
	}
	return nil, refLines, candLines, nil
}

// shrink reduces ops, which end in the difference m, to a short sequence
// that still shows a difference at an op of the same kind: first by
// delta debugging (drop chunks while the difference persists, halving the
// chunk size when none can go), then by dropping sub-ops of multis. Each
// probe is one fresh run on each server. It stops early after maxProbes
// probes or shrinkTimeout and returns the smallest sequence found.
func (e *diffEnv) shrink(tb testing.TB, ops []diffOp, m *diffMismatch) ([]diffOp, *diffMismatch) {
	tb.Helper()
	deadline := time.Now().Add(e.shrinkTimeout)
	start := e.probes
	budgetLeft := func() bool { return e.probes-start < e.maxProbes && time.Now().Before(deadline) }
	ops = ops[:m.Index+1]
	// still reports whether cand shows the same kind of difference; on
	// success it returns cand truncated after the difference.
	var still shrinkProbe = func(cand []diffOp) ([]diffOp, *diffMismatch, bool) {
		if len(cand) == 0 {
			return nil, nil, false
		}
		got, _, _, err := e.compare(cand)
		if err != nil {
			tb.Logf("shrink probe: %v", err)
			return nil, nil, false
		}
		if got == nil || got.Op.Op != m.Op.Op {
			return nil, nil, false
		}
		return cand[:got.Index+1], got, true
	}
	for progress := true; progress && budgetLeft(); {
		var shorter int
		ops, m, shorter = ddmin(ops, m, still, budgetLeft)
		var fewer bool
		ops, m, fewer = dropMultiOps(ops, m, still, budgetLeft)
		progress = shorter > 0 || fewer
	}
	return ops, m
}

// shrinkProbe runs a candidate sequence; on success it returns the
// candidate truncated after its difference.
type shrinkProbe func(cand []diffOp) ([]diffOp, *diffMismatch, bool)

// ddmin drops chunks of ops while the difference persists, halving the
// chunk size when no chunk can go, down to single ops. It returns how many
// ops it removed.
func ddmin(ops []diffOp, m *diffMismatch, still shrinkProbe, budgetLeft func() bool) ([]diffOp, *diffMismatch, int) {
	was := len(ops)
	n := 2
	for len(ops) >= 2 && budgetLeft() {
		chunk := (len(ops) + n - 1) / n
		reduced := false
		for lo := 0; lo < len(ops) && budgetLeft(); lo += chunk {
			hi := min(lo+chunk, len(ops))
			cand := append(append([]diffOp{}, ops[:lo]...), ops[hi:]...)
			if got, gm, ok := still(cand); ok {
				ops, m, reduced = got, gm, true
				n = max(n-1, 2)
				break
			}
		}
		if !reduced {
			if n >= len(ops) {
				break
			}
			n = min(2*n, len(ops))
		}
	}
	return ops, m, was - len(ops)
}

// dropMultiOps drops single sub-ops of multis while the difference
// persists.
func dropMultiOps(ops []diffOp, m *diffMismatch, still shrinkProbe, budgetLeft func() bool) ([]diffOp, *diffMismatch, bool) {
	dropped := false
	for i := 0; i < len(ops) && budgetLeft(); i++ {
		for j := 0; len(ops[i].Ops) > 1 && j < len(ops[i].Ops) && budgetLeft(); j++ {
			cand := append([]diffOp{}, ops...)
			cand[i].Ops = append(append([]diffOp{}, ops[i].Ops[:j]...), ops[i].Ops[j+1:]...)
			if got, gm, ok := still(cand); ok && len(got) == len(ops) {
				ops, m, dropped = got, gm, true
				j--
			}
		}
	}
	return ops, m, dropped
}

// diffOpsGo renders ops as a Go composite literal for a regression test.
func diffOpsGo(ops []diffOp, indent string) string {
	var b strings.Builder
	b.WriteString("[]diffOp{\n")
	for _, op := range ops {
		b.WriteString(indent + "\t" + diffOpGo(op, indent+"\t") + ",\n")
	}
	b.WriteString(indent + "}")
	return b.String()
}

func diffOpGo(op diffOp, indent string) string {
	fields := []string{"Op: " + strconv.Quote(op.Op)}
	if op.S != 0 {
		fields = append(fields, fmt.Sprintf("S: %d", op.S))
	}
	if op.Path != "" {
		fields = append(fields, "Path: "+strconv.Quote(op.Path))
	}
	if op.Data != "" {
		fields = append(fields, "Data: "+strconv.Quote(op.Data))
	}
	if op.Null {
		fields = append(fields, "Null: true")
	}
	if op.Version != 0 {
		fields = append(fields, fmt.Sprintf("Version: %d", op.Version))
	}
	if op.Mode != 0 {
		fields = append(fields, fmt.Sprintf("Mode: %d", op.Mode))
	}
	if op.Watch {
		fields = append(fields, "Watch: true")
	}
	if op.ACL != 0 {
		fields = append(fields, fmt.Sprintf("ACL: %d", op.ACL))
	}
	if op.TTL != 0 {
		fields = append(fields, fmt.Sprintf("TTL: %d", op.TTL))
	}
	if op.User != "" {
		fields = append(fields, "User: "+strconv.Quote(op.User))
	}
	if len(op.Ops) > 0 {
		fields = append(fields, "Ops: "+diffOpsGo(op.Ops, indent))
	}
	return "{" + strings.Join(fields, ", ") + "}"
}

// diffRegressionGo renders a complete regression test for ops.
func diffRegressionGo(name string, ops []diffOp) string {
	return fmt.Sprintf("func TestDiffRegression_%s(t *testing.T) {\n\tcheckDiffRegression(t, %s)\n}\n", name, diffOpsGo(ops, "\t"))
}

// diffCase is the JSON form of a saved sequence in testdata/diff.
type diffCase struct {
	Name string   `json:"name"`
	Note string   `json:"note,omitempty"`
	Seed uint64   `json:"seed,omitempty"`
	Ops  []diffOp `json:"ops"`
}

const diffTestdata = "testdata/diff"

func saveDiffCase(c diffCase) (string, error) {
	if err := os.MkdirAll(diffTestdata, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", err
	}
	file := filepath.Join(diffTestdata, c.Name+".json")
	return file, os.WriteFile(file, append(b, '\n'), 0o644)
}

func loadDiffCases(tb testing.TB) []diffCase {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(diffTestdata, "*.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var cases []diffCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var c diffCase
		if err := json.Unmarshal(b, &c); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		if c.Name == "" {
			c.Name = strings.TrimSuffix(filepath.Base(f), ".json")
		}
		cases = append(cases, c)
	}
	return cases
}

// transcriptString joins a transcript for failure messages.
func transcriptString(lines []string) string {
	return "    " + strings.Join(lines, "\n    ")
}
