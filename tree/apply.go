package tree

import (
	"fmt"
	"slices"

	"github.com/hutchzk/hutch/quota"
	"github.com/hutchzk/hutch/wire"
)

// Txn is one deterministic write: the request plus the zxid and time the
// leader assigned. Validation happens when it is applied, against the tree as
// it is then, so every replica computes the same Result.
type Txn struct {
	Zxid    int64
	Time    int64 // ms since the epoch, assigned by the leader
	Session int64 // issuing session; ephemeralOwner of ephemerals it creates
	// Auth holds the issuing connection's identities (a "super" id
	// bypasses ACL checks) when Grants is nil: writes from before grants,
	// the server's own, and those whose ACL has an "auth" entry.
	Auth []wire.ID
	// Grants, when set, decides the write's ACL checks instead of Auth
	// (grants.go).
	Grants *Grants
	Op     wire.OpCode
	// Req by Op: OpCreate, OpCreate2, OpCreateContainer *wire.CreateRequest;
	// OpCreateTTL *wire.CreateTTLRequest; OpDelete *wire.DeleteRequest;
	// OpSetData *wire.SetDataRequest; OpSetACL *wire.SetACLRequest;
	// OpCheck *wire.CheckVersionRequest; OpMulti *MultiRequest;
	// OpCreateSession *CreateSession; OpCloseSession nil (closes Session);
	// OpDeleteContainer *wire.PathRequest.
	Req any
}

// CreateSession registers a session (OpCreateSession).
type CreateSession struct {
	ID      int64
	Timeout int32
	Passwd  []byte
}

// Event is a node change for the watch manager.
type Event struct {
	Type wire.EventType
	Path string
	// ACL decides who may hear of the event: the node's own ACL, or the
	// parent's for NodeChildrenChanged. ZooKeeper drops a notification for a
	// watcher without READ on it.
	ACL []wire.ACL
	// Data is the node's data: as created (NodeCreated), as it was
	// (NodeDeleted, and NodeDataChanged: the data before the change). It
	// is the tree's own slice, never changed in place: read it, do not
	// write it. The live view's trace keeps it to replay the tree.
	Data []byte
	// Owner is the session that owns the node, for an ephemeral one
	// (NodeCreated, NodeDeleted); 0 otherwise.
	Owner int64
}

// sessionOwner is a node's owning session, 0 unless it is ephemeral.
func (n *node) sessionOwner() int64 {
	if kindOf(n.st.owner) == kindEphemeral {
		return n.st.owner
	}
	return 0
}

// Readable reports whether a connection with these identities may receive
// the event.
func (e *Event) Readable(auth []wire.ID) bool {
	return checkACL(e.ACL, wire.PermRead, auth) == nil
}

// Result is the outcome of Apply.
type Result struct {
	// Err is nil or one of this package's sentinels. For OpMulti it is nil
	// whenever Multi is filled in, even if an op failed: ZooKeeper answers a
	// failed multi with reply-header code OK and the errors inside the
	// MultiResponse (use MultiErr to find the failure). It is set for a multi
	// only when the whole request is refused (ErrMarshallingError).
	Err error
	// Resp: OpCreate/OpCreate2/OpCreateContainer/OpCreateTTL
	// *wire.Create2Response (plain create sends only the path);
	// OpSetData and OpSetACL *wire.StatResponse; otherwise nil.
	Resp any
	// Multi holds one OpResult per op of an OpMulti, laid out as ZooKeeper's
	// MultiResponse.
	Multi []OpResult
	// Events are the watch events in the order ZooKeeper fires them; a failed
	// txn or failed multi has none.
	Events []Event
	// Quota lists the quota limits the txn passed, failed or not (only
	// with EnforceQuota): ZooKeeper logs each as a warning.
	Quota []quota.Exceeded
}

// MultiErr returns the error of the op that made a multi fail, or nil.
func (r *Result) MultiErr() error {
	for _, o := range r.Multi {
		if o.Err != nil {
			return o.Err
		}
	}
	return nil
}

// OpResult is one entry of a MultiResponse. On success Op is the op's type and
// Resp is as in Result.Resp. When the multi failed every entry has Op
// wire.OpError: ops before the failing one have Err nil (ErrorResult code 0),
// the failing op its error, and later ops ErrRuntimeInconsistency.
type OpResult struct {
	Op   wire.OpCode
	Err  error
	Resp any
}

// ctx is what an op needs from its Txn.
type ctx struct {
	zxid, time, session int64
	auth                []wire.ID
	grants              *Grants // when set, decides the ACL checks (grants.go)
	events              []Event
	quota               []quota.Exceeded
	// quotaBase, inside a multi (inMulti), holds each quota's usage as it
	// was before the multi changed it: every op is checked against that.
	inMulti   bool
	quotaBase map[string]quota.Stats
}

// checkACL checks perm under acl for the transaction: by its grants, or
// by its identities.
func (c *ctx) checkACL(acl []wire.ACL, perm int32) error {
	if c.grants != nil {
		return c.grants.check(acl, perm)
	}
	return checkACL(acl, perm, c.auth)
}

// Apply applies one transaction. It records txn.Zxid as LastZxid (keeping the
// maximum, like DataTree.lastProcessedZxid) even when the txn fails, because
// ZooKeeper's error txns consume their zxid too. Data slices from the request
// are copied; the tree keeps no reference to the request.
func (t *Tree) Apply(txn *Txn) Result {
	if txn.Zxid > t.lastZxid {
		t.lastZxid = txn.Zxid
	}
	c := &ctx{zxid: txn.Zxid, time: txn.Time, session: txn.Session, auth: txn.Auth, grants: txn.Grants}
	var res Result
	switch txn.Op {
	case wire.OpMulti:
		req, ok := txn.Req.(*MultiRequest)
		if !ok || req == nil {
			return Result{Err: ErrMarshallingError}
		}
		return t.applyMulti(c, req)
	case wire.OpCreateSession:
		req, ok := txn.Req.(*CreateSession)
		if !ok || req == nil {
			return Result{Err: ErrMarshallingError}
		}
		res.Err = t.createSession(req)
	case wire.OpCloseSession:
		t.closeSession(c)
	case wire.OpReconfig:
		// Reconfiguration is disabled; ZooKeeper still logs the refusal as an
		// error txn, so it consumes a zxid here too.
		res.Err = ErrReconfigDisabled
	case wire.OpDeleteContainer:
		req, ok := txn.Req.(*wire.PathRequest)
		if !ok || req == nil {
			return Result{Err: ErrMarshallingError}
		}
		res.Err = t.deleteContainer(c, req.Path)
	default:
		res.Resp, res.Err = t.applyOp(c, txn.Op, txn.Req)
	}
	if res.Err != nil {
		return Result{Err: res.Err, Quota: c.quota}
	}
	res.Events = c.events
	res.Quota = c.quota
	return res
}

// applyOp runs one of the ops that may also appear inside a multi.
func (t *Tree) applyOp(c *ctx, op wire.OpCode, req any) (any, error) {
	switch op {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer:
		r, ok := req.(*wire.CreateRequest)
		if !ok || r == nil {
			return nil, ErrMarshallingError
		}
		return t.create(c, op, r.Path, r.Data, r.ACL, r.Flags, -1)
	case wire.OpCreateTTL:
		r, ok := req.(*wire.CreateTTLRequest)
		if !ok || r == nil {
			return nil, ErrMarshallingError
		}
		return t.create(c, op, r.Path, r.Data, r.ACL, r.Flags, r.TTL)
	case wire.OpDelete:
		r, ok := req.(*wire.DeleteRequest)
		if !ok || r == nil {
			return nil, ErrMarshallingError
		}
		return nil, t.delete(c, r.Path, r.Version)
	case wire.OpSetData:
		r, ok := req.(*wire.SetDataRequest)
		if !ok || r == nil {
			return nil, ErrMarshallingError
		}
		return t.setData(c, r.Path, r.Data, r.Version)
	case wire.OpSetACL:
		r, ok := req.(*wire.SetACLRequest)
		if !ok || r == nil {
			return nil, ErrMarshallingError
		}
		return t.setACL(c, r.Path, r.ACL, r.Version)
	case wire.OpCheck:
		r, ok := req.(*wire.CheckVersionRequest)
		if !ok || r == nil {
			return nil, ErrMarshallingError
		}
		return nil, t.check(c, r.Path, r.Version)
	}
	return nil, ErrUnimplemented
}

// createMode is CreateMode.fromFlag.
type createMode struct{ ephemeral, sequential, container, ttl bool }

func modeOf(flags int32) (createMode, bool) {
	switch flags {
	case wire.ModePersistent:
		return createMode{}, true
	case wire.ModeEphemeral:
		return createMode{ephemeral: true}, true
	case wire.ModePersistentSequential:
		return createMode{sequential: true}, true
	case wire.ModeEphemeralSequential:
		return createMode{ephemeral: true, sequential: true}, true
	case wire.ModeContainer:
		return createMode{container: true}, true
	case wire.ModePersistentWithTTL:
		return createMode{ttl: true}, true
	case wire.ModePersistentSequentialWithTTL:
		return createMode{sequential: true, ttl: true}, true
	}
	return createMode{}, false
}

// create follows PrepRequestProcessor.pRequest2TxnCreate, whose check order
// decides which error a request with several problems gets:
// flags, TTL, session (ephemerals) → path shape → ACL validity → parent exists
// → CREATE permission → (sequential suffix) → full path validity → node exists
// → parent not ephemeral.
func (t *Tree) create(c *ctx, op wire.OpCode, path string, data []byte, acl []wire.ACL, flags int32, ttl int64) (*wire.Create2Response, error) {
	mode, ok := modeOf(flags)
	if !ok {
		return nil, ErrBadArguments
	}
	if mode.ttl {
		if ttl <= 0 || ttl > MaxTTL {
			return nil, ErrBadArguments
		}
	} else if ttl >= 0 || op == wire.OpCreateTTL {
		// createTTL with a non-TTL mode and negative ttl passes ZooKeeper's
		// prep and then throws while applying; refuse it up front instead.
		return nil, ErrBadArguments
	}
	if mode.ephemeral {
		if _, ok := t.sessions[c.session]; !ok {
			return nil, ErrSessionExpired
		}
	}
	parentPath, _, ok := splitParent(path)
	if !ok {
		return nil, ErrBadArguments
	}
	acl, err := fixupACL(c.auth, acl, t.sasl)
	if err != nil {
		return nil, err
	}
	parent := t.lookup(parentPath)
	if parent == nil {
		return nil, ErrNoNode
	}
	if err := c.checkACL(parent.acl, wire.PermCreate); err != nil {
		return nil, err
	}
	if mode.sequential {
		path += fmt.Sprintf("%010d", parent.st.cversion)
	}
	if !validPath(path) {
		return nil, ErrBadArguments
	}
	if t.lookup(path) != nil {
		return nil, ErrNodeExists
	}
	if kindOf(parent.st.owner) == kindEphemeral {
		return nil, ErrNoChildrenForEphemerals
	}
	if err := t.checkQuota(c, path, int64(len(data)), 1); err != nil {
		return nil, err
	}

	// The owner comes from the txn type, as in DataTree.processTxn: a plain
	// create with the container flag makes a persistent node, and
	// createContainer makes a container whatever the flags.
	var owner int64
	switch {
	case op == wire.OpCreateContainer:
		owner = containerOwner
	case op == wire.OpCreateTTL:
		owner = ttlOwner(ttl)
	case mode.ephemeral:
		owner = c.session
	}
	// The new path's parent is recomputed from the final path: for a
	// sequential "/a/" it is still "/a", and for "/" it is the root alias.
	parentPath, name, _ := splitParent(path)
	t.save(parent)
	parent.st.cversion++
	parent.st.pzxid = c.zxid
	t.rehash(parentPath, parent, false)
	n := &node{
		data: cloneData(data),
		acl:  acl,
		st: pstat{czxid: c.zxid, mzxid: c.zxid, pzxid: c.zxid,
			ctime: c.time, mtime: c.time, owner: owner},
	}
	t.addNode(path, parent, name, n)
	t.quotaCreated(c, path, parentPath, name, n.data)
	c.events = append(c.events,
		Event{Type: wire.EventNodeCreated, Path: path, ACL: n.acl, Data: n.data, Owner: n.sessionOwner()},
		Event{Type: wire.EventNodeChildrenChanged, Path: eventPath(parentPath), ACL: parent.acl})
	return &wire.Create2Response{Path: path, Stat: n.stat()}, nil
}

// cloneData copies request data, keeping nil distinct from empty because
// jute encodes them differently (-1 vs 0 length).
func cloneData(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// delete follows PrepRequestProcessor: path shape (and not a built-in node)
// → parent exists → DELETE on the parent → node exists → version → no
// children. Note there is no full path validation.
func (t *Tree) delete(c *ctx, path string, version int32) error {
	parentPath, name, ok := splitParent(path)
	if !ok || isSpecialPath(path) {
		return ErrBadArguments
	}
	parent := t.lookup(parentPath)
	if parent == nil {
		return ErrNoNode
	}
	if err := c.checkACL(parent.acl, wire.PermDelete); err != nil {
		return err
	}
	n := t.lookup(path)
	if n == nil {
		return ErrNoNode
	}
	if version != -1 && version != n.st.version {
		return ErrBadVersion
	}
	if len(n.children) > 0 {
		return ErrNotEmpty
	}
	t.deleteNode(c, path, parentPath, parent, name, n)
	return nil
}

// deleteNode is DataTree.deleteNode: only the parent's pzxid changes (its
// stored cversion counts creates), then NodeDeleted and NodeChildrenChanged.
func (t *Tree) deleteNode(c *ctx, path, parentPath string, parent *node, name string, n *node) {
	t.save(parent)
	parent.st.pzxid = c.zxid
	t.rehash(parentPath, parent, false)
	t.removeNode(path, parent, name, n)
	if prefix := t.quotaPrefix(path); prefix != "" {
		t.addQuotaUsage(c, prefix, -int64(len(n.data)), -1)
	}
	c.events = append(c.events,
		Event{Type: wire.EventNodeDeleted, Path: path, ACL: n.acl, Data: n.data, Owner: n.sessionOwner()},
		Event{Type: wire.EventNodeChildrenChanged, Path: eventPath(parentPath), ACL: parent.acl})
}

// setData: path valid → node exists → WRITE → quota → version.
func (t *Tree) setData(c *ctx, path string, data []byte, version int32) (*wire.StatResponse, error) {
	if !validPath(path) {
		return nil, ErrBadArguments
	}
	n := t.lookup(path)
	if n == nil {
		return nil, ErrNoNode
	}
	if err := c.checkACL(n.acl, wire.PermWrite); err != nil {
		return nil, err
	}
	bytesDiff := int64(len(data) - len(n.data))
	if err := t.checkQuota(c, path, bytesDiff, 0); err != nil {
		return nil, err
	}
	if version != -1 && version != n.st.version {
		return nil, ErrBadVersion
	}
	t.save(n)
	t.dataSize += bytesDiff
	before := n.data
	n.data = cloneData(data)
	n.st.version++
	n.st.mtime = c.time
	n.st.mzxid = c.zxid
	t.rehash(path, n, true)
	if prefix := t.quotaPrefix(path); prefix != "" {
		t.addQuotaUsage(c, prefix, bytesDiff, 0)
	}
	c.events = append(c.events, Event{Type: wire.EventNodeDataChanged, Path: path, ACL: n.acl, Data: before})
	return &wire.StatResponse{Stat: n.stat()}, nil
}

// setACL: path valid → ACL valid → node exists → ADMIN → aversion. Fires no
// event and leaves mzxid alone.
func (t *Tree) setACL(c *ctx, path string, acl []wire.ACL, version int32) (*wire.StatResponse, error) {
	if !validPath(path) {
		return nil, ErrBadArguments
	}
	acl, err := fixupACL(c.auth, acl, t.sasl)
	if err != nil {
		return nil, err
	}
	n := t.lookup(path)
	if n == nil {
		return nil, ErrNoNode
	}
	if err := c.checkACL(n.acl, wire.PermAdmin); err != nil {
		return nil, err
	}
	if version != -1 && version != n.st.aversion {
		return nil, ErrBadVersion
	}
	t.save(n)
	n.acl = acl
	n.st.aversion++
	t.rehash(path, n, true)
	return &wire.StatResponse{Stat: n.stat()}, nil
}

// check: path valid → node exists → READ (yes, check needs READ) → version.
func (t *Tree) check(c *ctx, path string, version int32) error {
	if !validPath(path) {
		return ErrBadArguments
	}
	n := t.lookup(path)
	if n == nil {
		return ErrNoNode
	}
	if err := c.checkACL(n.acl, wire.PermRead); err != nil {
		return err
	}
	if version != -1 && version != n.st.version {
		return ErrBadVersion
	}
	return nil
}

// deleteContainer is the server's cleanup of containers and TTL nodes:
// path shape → node exists → no children → still a container that has had
// a child (stored cversion > 0), or a TTL node expired by the transaction's
// own time (BadVersion otherwise). No ACL check, as in ZooKeeper. ZooKeeper
// checks only that the node is empty and not an ephemeral: it re-checks
// neither the TTL nor the cversion, and deletes a plain persistent node
// that replaced the candidate. hutch checks again everything the scan
// (ExpiryCandidates) looked at, so that a delete decided by one clock,
// proposed twice, or overtaken by a delete and re-create of the container
// (a new node, never used) cannot remove a node that is not due by the
// log's own state and time.
func (t *Tree) deleteContainer(c *ctx, path string) error {
	parentPath, name, ok := splitParent(path)
	if !ok || isSpecialPath(path) {
		return ErrBadArguments
	}
	n := t.lookup(path)
	if n == nil {
		return ErrNoNode
	}
	if len(n.children) > 0 {
		return ErrNotEmpty
	}
	switch kindOf(n.st.owner) {
	case kindContainer:
		if n.st.cversion == 0 {
			return ErrBadVersion
		}
	case kindTTL:
		if !ttlExpired(n, c.time) {
			return ErrBadVersion
		}
	default:
		return ErrBadVersion
	}
	parent := t.lookup(parentPath)
	if parent == nil {
		return ErrNoNode
	}
	t.deleteNode(c, path, parentPath, parent, name, n)
	return nil
}

// createSession registers a session. Ids that ZooKeeper could never issue are
// refused: 0 would make ephemerals persistent, and ids equal to the container
// marker or with an all-ones top byte (server id 255, which ZooKeeper forbids
// when extended types are enabled) would read back as containers or TTL nodes.
// An id already in use is refused too (ErrSessionExists), leaving that
// session, its password, timeout and ephemerals as they were: a server
// restarted with its clock behind its previous run can mint an id again, and
// taking the live session over would hand its ephemerals to a stranger.
func (t *Tree) createSession(req *CreateSession) error {
	if kindOf(req.ID) != kindEphemeral || req.ID&extendedMask == extendedMask {
		return ErrBadArguments
	}
	if _, ok := t.sessions[req.ID]; ok {
		return ErrSessionExists
	}
	t.sessions[req.ID] = session{timeout: req.Timeout, passwd: cloneData(req.Passwd)}
	return nil
}

// closeSession deletes every ephemeral of the session in one txn (in path
// order, for determinism; ZooKeeper iterates a HashSet) and forgets it.
func (t *Tree) closeSession(c *ctx) {
	owned := t.ephemerals[c.session]
	paths := make([]string, 0, len(owned))
	for p := range owned {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		parentPath, name, _ := splitParent(p)
		t.deleteNode(c, p, parentPath, t.lookup(parentPath), name, t.nodes[p])
	}
	delete(t.sessions, c.session)
}
