package conformance

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// diffOp is one step of a differential run: a request issued by one of the
// run's sessions, or a session action (auth, reconnect). Paths are relative
// to the run's root: "" is the root itself, "#k" is the k-th most recently
// created sequential node of the run (resolved on each target), "@q..." is
// below the run's quota node (diffQuotaRoot), anything else is joined to
// the root. Fields an op does not use stay zero, so the
// JSON and Go forms list only what matters.
type diffOp struct {
	Op      string   `json:"op"`
	S       int      `json:"s,omitempty"`    // session slot
	Path    string   `json:"path,omitempty"` // see above
	Data    string   `json:"data,omitempty"`
	Null    bool     `json:"null,omitempty"` // data is jute null rather than Data
	Version int32    `json:"version,omitempty"`
	Mode    int32    `json:"mode,omitempty"` // create flags or addWatch mode or removeWatches type
	Watch   bool     `json:"watch,omitempty"`
	ACL     int      `json:"acl,omitempty"` // index into diffACLs
	TTL     int64    `json:"ttl,omitempty"`
	User    string   `json:"user,omitempty"` // auth: "user:password"
	Ops     []diffOp `json:"ops,omitempty"`  // multi
}

// Op names. Requests carry ZooKeeper's opcode names; auth and reconnect are
// session actions.
const (
	opCreate          = "create"
	opCreate2         = "create2"
	opCreateContainer = "createContainer"
	opCreateTTL       = "createTTL"
	opDelete          = "delete"
	opSetData         = "setData"
	opCheck           = "check" // only inside multi
	opExists          = "exists"
	opGetData         = "getData"
	opGetChildren     = "getChildren"
	opGetChildren2    = "getChildren2"
	opGetACL          = "getACL"
	opSetACL          = "setACL"
	opSync            = "sync"
	opMulti           = "multi"
	opAddWatch        = "addWatch"
	opRemoveWatches   = "removeWatches"
	opAuth            = "auth"
	opReconnect       = "reconnect" // close the slot's session, open a new one
)

// diffSessions is the number of session slots of a run.
const diffSessions = 4

// diffPaths is the path space. Deeper paths come later so that the
// generator can favour shallow ones.
var diffPaths = []string{"/d", "/e", "/d/a", "/d/b", "/e/f", "/d/a/x", "/d/b/y", "/d/a/x/z"}

// diffUsers are the digest identities sessions authenticate as; the last is
// alice with a wrong password, which is a different identity, not an error.
var diffUsers = []string{"alice:secret", "bob:hunter2", "alice:wrong"}

// String renders an op compactly for transcripts and failure messages.
func (o diffOp) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "s%d %s", o.S, o.Op)
	if o.Op == opMulti {
		b.WriteString(" [")
		for i, sub := range o.Ops {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(strings.TrimPrefix(sub.String(), "s0 "))
		}
		b.WriteString("]")
		return b.String()
	}
	if o.Path != "" || (o.Op != opAuth && o.Op != opReconnect) {
		fmt.Fprintf(&b, " %q", o.Path)
	}
	switch o.Op {
	case opCreate, opCreate2, opCreateContainer, opCreateTTL:
		fmt.Fprintf(&b, " mode=%d acl=%d %s", o.Mode, o.ACL, o.dataString())
		if o.Op == opCreateTTL {
			fmt.Fprintf(&b, " ttl=%d", o.TTL)
		}
	case opSetData:
		fmt.Fprintf(&b, " %s v=%d", o.dataString(), o.Version)
	case opDelete, opCheck:
		fmt.Fprintf(&b, " v=%d", o.Version)
	case opSetACL:
		fmt.Fprintf(&b, " acl=%d v=%d", o.ACL, o.Version)
	case opExists, opGetData, opGetChildren, opGetChildren2:
		if o.Watch {
			b.WriteString(" watch")
		}
	case opAddWatch, opRemoveWatches:
		fmt.Fprintf(&b, " mode=%d", o.Mode)
	case opAuth:
		fmt.Fprintf(&b, " %s", o.User)
	}
	return b.String()
}

func (o diffOp) dataString() string {
	if o.Null {
		return "null"
	}
	return strconv.Quote(o.Data)
}

// diffGen generates op sequences from a seed; the same seed always yields
// the same sequence.
type diffGen struct {
	r *rand.Rand
}

func newDiffGen(seed uint64) *diffGen {
	return &diffGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// generateDiffOps returns n ops for seed.
func generateDiffOps(seed uint64, n int) []diffOp {
	g := newDiffGen(seed)
	ops := make([]diffOp, n)
	for i := range ops {
		ops[i] = g.op()
	}
	return ops
}

// pick returns an index chosen with the given weights.
func (g *diffGen) pick(weights ...int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	x := g.r.IntN(total)
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}

// path returns a path of the space, shallow ones more often, now and then
// the root or a sequential node created earlier.
func (g *diffGen) path(allowRoot bool) string {
	switch g.pick(85, 5, 10) {
	case 1:
		if allowRoot {
			return ""
		}
	case 2:
		return "#" + strconv.Itoa(g.r.IntN(3))
	}
	// Weight 1/(depth) roughly: index i gets weight 8-i.
	w := make([]int, len(diffPaths))
	for i := range w {
		w[i] = len(diffPaths) + 2 - i
	}
	return diffPaths[g.pick(w...)]
}

func (g *diffGen) data() (string, bool) {
	switch g.pick(10, 10, 60, 20) {
	case 0:
		return "", true
	case 1:
		return "", false
	case 2:
		return strconv.Itoa(g.r.IntN(100)), false
	}
	b := make([]byte, 1+g.r.IntN(6))
	for i := range b {
		b[i] = byte('a' + g.r.IntN(26))
	}
	return string(b), false
}

// version is -1 (any) half the time, otherwise a small number that often
// matches the node's current version.
func (g *diffGen) version() int32 {
	if g.r.IntN(2) == 0 {
		return -1
	}
	return int32(g.r.IntN(4))
}

func (g *diffGen) acl() int {
	if g.r.IntN(10) < 7 {
		return 0
	}
	return 1 + g.r.IntN(len(diffACLs)-1)
}

// create returns a create-family op; inMulti leaves out TTL nodes with
// invalid TTLs so that multis fail for more interesting reasons.
func (g *diffGen) create(inMulti bool) diffOp {
	o := diffOp{Path: g.path(false), ACL: g.acl()}
	o.Data, o.Null = g.data()
	if o.Path == "" || strings.HasPrefix(o.Path, "#") {
		o.Path = diffPaths[g.r.IntN(len(diffPaths))]
	}
	switch g.pick(30, 30, 15, 15) {
	case 0:
		o.Op = opCreate
		o.Mode = int32(g.r.IntN(4))
	case 1:
		o.Op = opCreate2
		o.Mode = int32(g.r.IntN(4))
	case 2:
		o.Op = opCreateContainer
		o.Mode = 4
	case 3:
		o.Op = opCreateTTL
		o.Mode = 5 + int32(g.r.IntN(2))
		o.TTL = 3_600_000 // long enough never to expire during a run
		if !inMulti && g.r.IntN(8) == 0 {
			// Not above the maximum (2^40-1): ZooKeeper 3.8.0 accepts
			// such a TTL, then its SyncThread dies applying it.
			o.TTL = []int64{0, -5}[g.r.IntN(2)]
		}
		if !inMulti && g.r.IntN(10) == 0 {
			// createTTL with a mode that takes no TTL. ZooKeeper then skips
			// checking the TTL and its SyncThread dies on an invalid one.
			o.Mode = int32(g.r.IntN(5))
			o.TTL = 3_600_000
		}
	}
	return o
}

// op returns the next op of a sequence.
func (g *diffGen) op() diffOp {
	s := g.r.IntN(diffSessions)
	var o diffOp
	switch g.pick(24, 9, 12, 7, 7, 7, 3, 4, 2, 8, 3, 2, 2, 2) {
	case 0:
		o = g.create(false)
	case 1:
		o = diffOp{Op: opDelete, Path: g.path(false), Version: g.version()}
	case 2:
		o = diffOp{Op: opSetData, Path: g.path(true), Version: g.version()}
		o.Data, o.Null = g.data()
	case 3:
		o = diffOp{Op: opExists, Path: g.path(true), Watch: g.r.IntN(2) == 0}
	case 4:
		o = diffOp{Op: opGetData, Path: g.path(true), Watch: g.r.IntN(2) == 0}
	case 5:
		o = diffOp{Op: []string{opGetChildren, opGetChildren2}[g.r.IntN(2)], Path: g.path(true), Watch: g.r.IntN(2) == 0}
	case 6:
		o = diffOp{Op: opGetACL, Path: g.path(true)}
	case 7:
		o = diffOp{Op: opSetACL, Path: g.path(true), ACL: g.acl(), Version: g.version()}
	case 8:
		o = diffOp{Op: opSync, Path: g.path(true)}
	case 9:
		o = diffOp{Op: opMulti}
		for range 1 + g.r.IntN(4) {
			var sub diffOp
			switch g.pick(4, 3, 2, 2) {
			case 0:
				sub = g.create(true)
				if sub.Op == opCreateTTL || g.r.IntN(3) == 0 {
					sub.Op = opCreate
					sub.Mode = int32(g.r.IntN(4))
					sub.TTL = 0
				}
			case 1:
				sub = diffOp{Op: opSetData, Path: g.path(true), Version: g.version()}
				sub.Data, sub.Null = g.data()
			case 2:
				sub = diffOp{Op: opDelete, Path: g.path(false), Version: g.version()}
			case 3:
				sub = diffOp{Op: opCheck, Path: g.path(true), Version: g.version()}
			}
			o.Ops = append(o.Ops, sub)
		}
	case 10:
		o = diffOp{Op: opAddWatch, Path: g.path(true), Mode: int32(g.r.IntN(2))}
	case 11:
		o = diffOp{Op: opRemoveWatches, Path: g.path(true), Mode: 1 + int32(g.r.IntN(3))}
	case 12:
		o = diffOp{Op: opAuth, User: diffUsers[g.r.IntN(len(diffUsers))]}
	case 13:
		o = diffOp{Op: opReconnect}
	}
	o.S = s
	return o
}
