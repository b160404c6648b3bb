package conformance

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hutchzk/hutch/wire"
)

// digestID is the ACL id ZooKeeper's digest scheme derives from
// "user:password": user:base64(sha1(user:password)).
func digestID(userPass string) string {
	user, _, _ := strings.Cut(userPass, ":")
	sum := sha1.Sum([]byte(userPass))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// diffACLs is the palette of ACLs ops choose from by index. 0 is
// OPEN_ACL_UNSAFE; the others mix world read with digest ALL, restrict to
// one identity, use the auth scheme (the creator's identities, InvalidACL
// without any) or are empty (InvalidACL).
var diffACLs = [][]wire.ACL{
	{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}},
	{{Perms: wire.PermRead, ID: wire.ID{Scheme: "world", ID: "anyone"}}, {Perms: wire.PermAll, ID: wire.ID{Scheme: "digest", ID: digestID("alice:secret")}}},
	{{Perms: wire.PermAll, ID: wire.ID{Scheme: "digest", ID: digestID("alice:secret")}}},
	{{Perms: wire.PermRead | wire.PermWrite | wire.PermCreate, ID: wire.ID{Scheme: "digest", ID: digestID("bob:hunter2")}}, {Perms: wire.PermRead, ID: wire.ID{Scheme: "world", ID: "anyone"}}},
	{{Perms: wire.PermAll, ID: wire.ID{Scheme: "auth", ID: ""}}},
	{},
	{{Perms: wire.PermRead | wire.PermCreate | wire.PermDelete, ID: wire.ID{Scheme: "world", ID: "anyone"}}},
	{{Perms: wire.PermAll, ID: wire.ID{Scheme: "digest", ID: digestID("bob:hunter2")}}, {Perms: wire.PermAdmin, ID: wire.ID{Scheme: "digest", ID: digestID("alice:secret")}}},
}

// diffNorm maps what differs between servers by accident — zxids, session
// ids, times — to what must agree. Zxids and sessions become ordinals in
// order of first appearance; a ctime or mtime is shown as "=" when it is
// the one time already seen with its zxid (a txn has one time), and raw
// otherwise, so a server that stamps one txn with two times differs.
type diffNorm struct {
	zxids    map[int64]int
	sessions map[int64]int
	times    map[int64]int64 // zxid -> time of that txn
	root     string
}

func newDiffNorm(root string) *diffNorm {
	return &diffNorm{zxids: map[int64]int{}, sessions: map[int64]int{}, times: map[int64]int64{}, root: root}
}

func (n *diffNorm) zxid(z int64) string {
	if z == 0 {
		return "0"
	}
	o, ok := n.zxids[z]
	if !ok {
		o = len(n.zxids)
		n.zxids[z] = o
	}
	return "z" + strconv.Itoa(o)
}

func (n *diffNorm) session(id int64) string {
	if o, ok := n.sessions[id]; ok {
		return "S" + strconv.Itoa(o)
	}
	if id == 0 {
		return "0"
	}
	// Containers and TTL nodes keep markers in ephemeralOwner.
	return fmt.Sprintf("%#x", uint64(id))
}

func (n *diffNorm) newSession(id int64) string {
	if _, ok := n.sessions[id]; !ok {
		n.sessions[id] = len(n.sessions)
	}
	return n.session(id)
}

func (n *diffNorm) time(z, t int64) string {
	if z == 0 {
		return strconv.FormatInt(t, 10)
	}
	seen, ok := n.times[z]
	if !ok {
		n.times[z] = t
		return "="
	}
	if seen == t {
		return "="
	}
	return "T" + strconv.FormatInt(t, 10)
}

func (n *diffNorm) stat(s *wire.Stat) string {
	return fmt.Sprintf("{cz=%s mz=%s pz=%s ct%s mt%s v=%d cv=%d av=%d eo=%s dl=%d nc=%d}",
		n.zxid(s.Czxid), n.zxid(s.Mzxid), n.zxid(s.Pzxid), n.time(s.Czxid, s.Ctime), n.time(s.Mzxid, s.Mtime),
		s.Version, s.Cversion, s.Aversion, n.session(s.EphemeralOwner), s.DataLength, s.NumChildren)
}

// path strips the run's root from a server path, and the run's quota
// node (diffQuotaRoot) from a path below it.
func (n *diffNorm) path(p string) string {
	if p == n.root {
		return "/"
	}
	if rest, ok := strings.CutPrefix(p, n.root+"/"); ok {
		return "/" + rest
	}
	if rest, ok := strings.CutPrefix(p, diffQuotaNode+n.root); ok && (rest == "" || rest[0] == '/') {
		return diffQuotaRoot + rest
	}
	return "!" + p
}

func (n *diffNorm) acl(acls []wire.ACL) string {
	parts := make([]string, len(acls))
	for i, a := range acls {
		parts[i] = fmt.Sprintf("%s:%s:%d", a.ID.Scheme, a.ID.ID, a.Perms)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func (n *diffNorm) events(evs []wire.WatcherEvent) string {
	parts := make([]string, len(evs))
	for i, ev := range evs {
		parts[i] = fmt.Sprintf("%d/%d:%s", ev.Type, ev.State, n.path(ev.Path))
	}
	return strings.Join(parts, ",")
}

func diffData(b []byte) string {
	if b == nil {
		return "null"
	}
	return strconv.Quote(string(b))
}

// diffRun executes one op sequence against one server under root and
// records a transcript: one line per op with its normalized reply and the
// notifications every session received up to a barrier after it.
type diffRun struct {
	addr    string
	root    string
	norm    *diffNorm
	slots   [diffSessions]*diffClient
	seq     []string // sequential nodes created, relative, oldest first
	lines   []string
	setupOK bool
}

// runDiffOps runs ops against the server at addr under the fresh root and
// returns the transcript. An error means the run could not even start; a
// failure during the run is part of the transcript.
func runDiffOps(addr, root string, ops []diffOp) ([]string, error) {
	r := &diffRun{addr: addr, root: root, norm: newDiffNorm(root)}
	defer r.closeAll()
	admin, err := dialDiff(addr, 0, nil)
	if err != nil {
		return nil, fmt.Errorf("admin session: %w", err)
	}
	h, _, err := admin.call(wire.OpCreate, &wire.CreateRequest{Path: root, Data: []byte{}, ACL: diffACLs[0]})
	admin.closeSession()
	if err != nil || h.Err != wire.CodeOK {
		return nil, fmt.Errorf("create root %s: %v %v", root, h.Err, err)
	}
	for i := range r.slots {
		if err := r.open(i); err != nil {
			return nil, err
		}
	}
	for i, op := range ops {
		res := r.exec(op)
		r.barrier()
		r.lines = append(r.lines, fmt.Sprintf("#%d %s => %s%s", i, op, res, r.collectEvents(op.Op == opReconnect)))
	}
	return r.lines, nil
}

func (r *diffRun) open(slot int) error {
	c, err := dialDiff(r.addr, 0, nil)
	if err != nil {
		return fmt.Errorf("session %d: %w", slot, err)
	}
	r.slots[slot] = c
	r.norm.newSession(c.session)
	return nil
}

// closeAll ends every session so that none expires later, during another
// run against the same server, and consumes a zxid there. A session whose
// connection died is re-attached first.
func (r *diffRun) closeAll() {
	for i, c := range r.slots {
		if c == nil {
			continue
		}
		if c.dead != nil {
			c.abandon()
			if c.session == 0 {
				continue
			}
			var err error
			c, err = dialDiff(r.addr, c.session, c.passwd)
			if err != nil {
				continue
			}
		}
		c.closeSession()
		r.slots[i] = nil
	}
}

// barrier pings every live session and reads up to each ping's reply. The
// server sends a write's notifications before that write's reply, and we
// hold the write's reply, so every notification the op caused is now read.
func (r *diffRun) barrier() {
	for _, c := range r.slots {
		if c != nil && c.dead == nil {
			_ = c.send(wire.XidPing, wire.OpPing, nil)
		}
	}
	for _, c := range r.slots {
		if c != nil && c.dead == nil {
			_, _, _ = c.await(wire.XidPing)
		}
	}
}

func (r *diffRun) collectEvents(sortEvents bool) string {
	var b strings.Builder
	for i, c := range r.slots {
		if c == nil {
			continue
		}
		evs := c.takeEvents()
		if sortEvents {
			// Closing a session deletes its ephemerals in the order of a
			// Java HashSet of their paths: arbitrary, and different under
			// another root. Only the set is compared.
			slices.SortFunc(evs, func(a, b wire.WatcherEvent) int {
				return strings.Compare(fmt.Sprint(a.Path, a.Type), fmt.Sprint(b.Path, b.Type))
			})
		}
		if len(evs) > 0 {
			fmt.Fprintf(&b, " | s%d ev %s", i, r.norm.events(evs))
		}
		if c.dead != nil && !strings.Contains(c.dead.Error(), "session closed") {
			fmt.Fprintf(&b, " | s%d DEAD", i)
		}
	}
	return b.String()
}

// resolve turns an op path into a server path.
func (r *diffRun) resolve(p string) string {
	if rest, ok := strings.CutPrefix(p, diffQuotaRoot); ok {
		return diffQuotaNode + r.root + rest
	}
	if k, ok := strings.CutPrefix(p, "#"); ok {
		i, _ := strconv.Atoi(k)
		if i < len(r.seq) {
			return r.root + r.seq[len(r.seq)-1-i]
		}
		return r.root + "/nosuch"
	}
	return r.root + p
}

func (op diffOp) data() []byte {
	if op.Null {
		return nil
	}
	return []byte(op.Data)
}

// request builds the opcode and body of a request op (also used in multi).
func (r *diffRun) request(op diffOp) (wire.OpCode, wire.Message) {
	p := r.resolve(op.Path)
	switch op.Op {
	case opCreate, opCreate2, opCreateContainer:
		code := map[string]wire.OpCode{opCreate: wire.OpCreate, opCreate2: wire.OpCreate2, opCreateContainer: wire.OpCreateContainer}[op.Op]
		return code, &wire.CreateRequest{Path: p, Data: op.data(), ACL: diffACLs[op.ACL], Flags: op.Mode}
	case opCreateTTL:
		return wire.OpCreateTTL, &wire.CreateTTLRequest{Path: p, Data: op.data(), ACL: diffACLs[op.ACL], Flags: op.Mode, TTL: op.TTL}
	case opDelete:
		return wire.OpDelete, &wire.DeleteRequest{Path: p, Version: op.Version}
	case opSetData:
		return wire.OpSetData, &wire.SetDataRequest{Path: p, Data: op.data(), Version: op.Version}
	case opCheck:
		return wire.OpCheck, &wire.CheckVersionRequest{Path: p, Version: op.Version}
	case opExists:
		return wire.OpExists, &wire.PathWatchRequest{Path: p, Watch: op.Watch}
	case opGetData:
		return wire.OpGetData, &wire.PathWatchRequest{Path: p, Watch: op.Watch}
	case opGetChildren:
		return wire.OpGetChildren, &wire.PathWatchRequest{Path: p, Watch: op.Watch}
	case opGetChildren2:
		return wire.OpGetChildren2, &wire.PathWatchRequest{Path: p, Watch: op.Watch}
	case opGetACL:
		return wire.OpGetACL, &wire.PathRequest{Path: p}
	case opSetACL:
		return wire.OpSetACL, &wire.SetACLRequest{Path: p, ACL: diffACLs[op.ACL], Version: op.Version}
	case opSync:
		return wire.OpSync, &wire.PathRequest{Path: p}
	case opAddWatch:
		return wire.OpAddWatch, &wire.AddWatchRequest{Path: p, Mode: op.Mode}
	case opRemoveWatches:
		return wire.OpRemoveWatches, &wire.RemoveWatchesRequest{Path: p, Type: op.Mode}
	case opMulti:
		return wire.OpMulti, &diffMulti{run: r, ops: op.Ops}
	}
	panic("diff: unknown op " + op.Op)
}

// diffMulti encodes a multi request: a header and body per op, then done.
type diffMulti struct {
	run *diffRun
	ops []diffOp
}

func (m *diffMulti) Encode(e *wire.Encoder) {
	for _, sub := range m.ops {
		code, body := m.run.request(sub)
		(&wire.MultiHeader{Type: code, Err: -1}).Encode(e)
		body.Encode(e)
	}
	(&wire.MultiHeader{Type: wire.OpError, Done: true, Err: -1}).Encode(e)
}

func (m *diffMulti) Decode(*wire.Decoder) { panic("diffMulti is encode-only") }

// exec runs one op and renders its outcome.
func (r *diffRun) exec(op diffOp) string {
	c := r.slots[op.S]
	if c.dead != nil && op.Op != opReconnect {
		return "DEAD"
	}
	switch op.Op {
	case opAuth:
		if err := c.send(wire.XidAuth, wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte(op.User)}); err != nil {
			return "IOERR"
		}
		h, _, err := c.await(wire.XidAuth)
		if err != nil {
			return "IOERR"
		}
		return h.Err.String()
	case opReconnect:
		res := "closed"
		if c.dead == nil {
			h, err := c.closeSession()
			if err != nil {
				res = "close IOERR"
			} else {
				res = fmt.Sprintf("close %s z=%s", h.Err, r.norm.zxid(h.Zxid))
			}
		} else {
			c.abandon()
		}
		// The old client's last notifications belong to this op.
		old := c.takeEvents()
		if err := r.open(op.S); err != nil {
			r.slots[op.S] = &diffClient{dead: err, nc: c.nc, events: old}
			return res + "; reopen failed"
		}
		r.slots[op.S].events = old
		return fmt.Sprintf("%s; new %s timeout=%d", res, r.norm.session(r.slots[op.S].session), r.slots[op.S].timeout)
	}
	code, body := r.request(op)
	h, d, err := c.call(code, body)
	if err != nil {
		return "IOERR"
	}
	res := fmt.Sprintf("%s z=%s", h.Err, r.norm.zxid(h.Zxid))
	if h.Err != wire.CodeOK && op.Op != opMulti {
		return res + r.trailing(d)
	}
	return res + " " + r.body(op, code, d) + r.trailing(d)
}

func (r *diffRun) trailing(d *wire.Decoder) string {
	if d.Err() != nil {
		return " DECODE-ERROR " + d.Err().Error()
	}
	if n := d.Remaining(); n > 0 {
		return fmt.Sprintf(" +%d trailing bytes", n)
	}
	return ""
}

// body decodes and renders a successful reply's body.
func (r *diffRun) body(op diffOp, code wire.OpCode, d *wire.Decoder) string {
	n := r.norm
	switch code {
	case wire.OpCreate:
		var resp wire.CreateResponse
		resp.Decode(d)
		r.noteCreated(op, resp.Path)
		return n.path(resp.Path)
	case wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL:
		var resp wire.Create2Response
		resp.Decode(d)
		r.noteCreated(op, resp.Path)
		return n.path(resp.Path) + " " + n.stat(&resp.Stat)
	case wire.OpSetData, wire.OpExists, wire.OpSetACL:
		var resp wire.StatResponse
		resp.Decode(d)
		return n.stat(&resp.Stat)
	case wire.OpGetData:
		var resp wire.GetDataResponse
		resp.Decode(d)
		return diffData(resp.Data) + " " + n.stat(&resp.Stat)
	case wire.OpGetChildren:
		var resp wire.GetChildrenResponse
		resp.Decode(d)
		slices.Sort(resp.Children)
		return fmt.Sprint(resp.Children)
	case wire.OpGetChildren2:
		var resp wire.GetChildren2Response
		resp.Decode(d)
		slices.Sort(resp.Children)
		return fmt.Sprint(resp.Children) + " " + n.stat(&resp.Stat)
	case wire.OpGetACL:
		var resp wire.GetACLResponse
		resp.Decode(d)
		return n.acl(resp.ACL) + " " + n.stat(&resp.Stat)
	case wire.OpSync:
		var resp wire.PathResponse
		resp.Decode(d)
		return n.path(resp.Path)
	case wire.OpMulti:
		return r.multiBody(op, d)
	}
	return ""
}

// multiBody renders a multi reply's per-op results.
func (r *diffRun) multiBody(op diffOp, d *wire.Decoder) string {
	var parts []string
	for i := 0; d.Err() == nil; i++ {
		var mh wire.MultiHeader
		mh.Decode(d)
		if mh.Done {
			parts = append(parts, fmt.Sprintf("done(%d,%d)", mh.Type, mh.Err))
			break
		}
		sub := diffOp{}
		if i < len(op.Ops) {
			sub = op.Ops[i]
		}
		var res string
		switch mh.Type {
		case wire.OpError:
			var er wire.ErrorResult
			er.Decode(d)
			res = fmt.Sprintf("err %s/%s", mh.Err, er.Err)
		case wire.OpDelete, wire.OpCheck:
			res = fmt.Sprintf("%s %s", mh.Type, mh.Err)
		default:
			res = fmt.Sprintf("%s %s %s", mh.Type, mh.Err, r.body(sub, mh.Type, d))
		}
		parts = append(parts, res)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// noteCreated remembers sequential nodes so that later ops can name them.
func (r *diffRun) noteCreated(op diffOp, path string) {
	if op.Mode == 2 || op.Mode == 3 || op.Mode == 6 {
		if rel, ok := strings.CutPrefix(path, r.root); ok {
			r.seq = append(r.seq, rel)
		}
	}
}
