package nemesis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// orderCheck is what one pipelined writer's creates and the final tree
// say together.
type orderCheck struct {
	acked, unknown, refused int
	lost                    int      // acknowledged creates missing from the tree
	violations              int      // breaches of the session's FIFO order
	details                 []string // the first few of either, for the report
}

func (o *orderCheck) note(lost bool, format string, args ...any) {
	if lost {
		o.lost++
	} else {
		o.violations++
	}
	if len(o.details) < 10 {
		o.details = append(o.details, fmt.Sprintf(format, args...))
	}
}

// created is one child found under a writer's directory.
type created struct {
	inc, k int
	seq    string
	name   string
}

// parseCreated reads a child named w-<inc>-<k>-<10-digit sequence>.
func parseCreated(name string) (created, bool) {
	parts := strings.Split(name, "-")
	if len(parts) != 4 || parts[0] != "w" || len(parts[3]) != 10 {
		return created{}, false
	}
	inc, err1 := strconv.Atoi(parts[1])
	k, err2 := strconv.Atoi(parts[2])
	if _, err3 := strconv.ParseUint(parts[3], 10, 64); err1 != nil || err2 != nil || err3 != nil {
		return created{}, false
	}
	return created{inc: inc, k: k, seq: parts[3], name: name}, true
}

// checkOrder checks a writer's creates against the children found in each
// of its directories (by generation; a missing directory has none). What
// ZooKeeper promises for one session, and so what is checked:
//   - every acknowledged create exists, and none refused with an error does;
//   - the sequence numbers, which the server hands out in commit order,
//     follow the order in which the client sent the creates;
//   - within one connection a create never commits after a later one of
//     the same connection was lost without an answer: the server takes a
//     connection's requests in order, so it cannot skip one and apply the
//     next. A create answered with an error is not applied, so it may be
//     missing anywhere.
//
// Creates whose answer was lost may be present or missing otherwise.
func checkOrder(writer int, writes []*pwrite, children map[int][]string) orderCheck {
	var o orderCheck
	byGen := map[int][]*pwrite{}
	for _, pw := range writes {
		byGen[pw.gen] = append(byGen[pw.gen], pw)
	}
	gens := make([]int, 0, len(byGen))
	for g := range byGen {
		gens = append(gens, g)
	}
	for g := range children {
		if _, ok := byGen[g]; !ok {
			gens = append(gens, g)
		}
	}
	slices.Sort(gens)
	for _, gen := range gens {
		checkGen(&o, writer, gen, byGen[gen], children[gen])
	}
	return o
}

func checkGen(o *orderCheck, writer, gen int, writes []*pwrite, names []string) {
	where := fmt.Sprintf("pipeline %d dir %d", writer, gen)
	type key struct{ inc, k int }
	exists := map[key]created{}
	var found []created
	for _, name := range names {
		c, ok := parseCreated(name)
		if !ok {
			o.note(false, "%s: unexpected child %q", where, name)
			continue
		}
		if prev, dup := exists[key{c.inc, c.k}]; dup {
			o.note(false, "%s: write %d:%d created twice (%s and %s)", where, c.inc, c.k, prev.name, c.name)
			continue
		}
		exists[key{c.inc, c.k}] = c
		found = append(found, c)
	}
	sent := map[key]*pwrite{}
	for _, pw := range writes {
		sent[key{pw.inc, pw.k}] = pw
		_, there := exists[key{pw.inc, pw.k}]
		switch pw.state {
		case writeAcked:
			o.acked++
			if !there {
				o.note(true, "%s: acknowledged write %d:%d is missing", where, pw.inc, pw.k)
			}
		case writeRefused:
			o.refused++
			if there {
				o.note(false, "%s: write %d:%d was refused with %v, yet exists", where, pw.inc, pw.k, pw.code)
			}
		default:
			o.unknown++
		}
	}
	maxK := map[int]int{} // per incarnation, the highest k present that was sent
	for _, c := range found {
		if sent[key{c.inc, c.k}] == nil {
			o.note(false, "%s: %s was never sent", where, c.name)
			continue
		}
		if m, ok := maxK[c.inc]; !ok || c.k > m {
			maxK[c.inc] = c.k
		}
	}
	slices.SortFunc(found, func(a, b created) int { return strings.Compare(a.seq, b.seq) })
	for i := 1; i < len(found); i++ {
		a, b := found[i-1], found[i]
		if b.inc < a.inc || (b.inc == a.inc && b.k <= a.k) {
			o.note(false, "%s: write %d:%d committed (seq %s) after write %d:%d (seq %s), which was sent later",
				where, b.inc, b.k, b.seq, a.inc, a.k, a.seq)
		}
	}
	incs := make([]int, 0, len(maxK))
	for inc := range maxK {
		incs = append(incs, inc)
	}
	slices.Sort(incs)
	for _, inc := range incs {
		for k := 0; k < maxK[inc]; k++ {
			if _, there := exists[key{inc, k}]; there {
				continue
			}
			pw := sent[key{inc, k}]
			if pw != nil && (pw.state == writeAcked || pw.code != 0) {
				continue // acknowledged and missing (counted above), or answered with an error
			}
			o.note(false, "%s: write %d:%d was lost without an answer, yet the later write %d:%d of the same connection committed",
				where, inc, k, inc, maxK[inc])
		}
	}
}
