package zkdb

import (
	"slices"

	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// The membership is one replicated fact, owned here like the tree: the
// ensemble's configuration (members, their addresses and roles, the
// version) changes only by a KindReconfig command applied in log order,
// which also writes it into /zookeeper/config, so every replica holds the
// same configuration as of the same point in the log and clients read it
// where ZooKeeper keeps it. Beside it the DB records, in the same order,
// the replication layer's own configuration (which replicas Raft sends
// the log to and which of them vote), so that every node can tell a
// member that counts for quorum from one still catching up.

// Outcome is a reconfig's outcome as the leader decided it: the body of a
// KindReconfig command (its Txn.Req). Replayed from the log it makes the
// same change on every replica.
type Outcome struct {
	// Code is CodeOK to install Config, or the error the reconfig is
	// refused with (it still takes a zxid, as ZooKeeper's error txn does).
	Code wire.Code
	// Base is the configuration version the decision was made against; an
	// outcome that finds another version when it applies is refused with
	// BADVERSION, so a decision can never apply twice or out of turn.
	Base int64
	// Config is the new configuration (its version is set to the
	// command's zxid when it applies).
	Config membership.Config
}

// Encode writes the outcome: code, base version, configuration.
func (o *Outcome) Encode(e *wire.Encoder) {
	e.Int32(int32(o.Code))
	e.Int64(o.Base)
	e.Buffer(membership.AppendConfig(nil, o.Config))
}

// Decode reads what Encode wrote.
func (o *Outcome) Decode(d *wire.Decoder) {
	o.Code = wire.Code(d.Int32())
	o.Base = d.Int64()
	b := d.Buffer()
	if d.Err() != nil {
		return
	}
	c, rest, err := membership.DecodeConfig(b)
	if err != nil || len(rest) != 0 {
		d.Fail(ErrCorrupt)
		return
	}
	o.Config = c
}

// Replica is one server the replication layer sends the log to, as its
// configuration (Raft's) last committed said.
type Replica struct {
	ID    uint64
	Addr  string
	Voter bool
}

// Membership returns the ensemble's configuration as last applied: zero
// for a single node, or for an ensemble whose first leader has not yet
// written it.
func (d *DB) Membership() membership.Config {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.members.Clone()
}

// Replicas returns the replication layer's configuration as last applied,
// by id.
func (d *DB) Replicas() []Replica {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return slices.Clone(d.replicas)
}

// ApplyReplicas records the replication layer's configuration committed
// at log index (entries at or below the index already applied are
// skipped, as Apply skips them).
func (d *DB) ApplyReplicas(index uint64, replicas []Replica) {
	replicas = slices.Clone(replicas)
	slices.SortFunc(replicas, func(a, b Replica) int { return cmpUint(a.ID, b.ID) })
	d.mu.Lock()
	defer d.mu.Unlock()
	if index <= d.applied {
		return
	}
	d.applied = index
	d.replicas = replicas
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// applyReconfig applies a KindReconfig command; mu is held and the txn
// has its zxid and time. The requester's session must still be attached
// where the request came from; a command of the server's own (Conn 0, the
// first configuration) acts for no session.
func (d *DB) applyReconfig(c *Command, e *Effects) {
	txn := &c.Txn
	out, _ := txn.Req.(*Outcome)
	err := tree.CodeError(wire.CodeMarshallingError)
	if out != nil {
		err = tree.CodeError(out.Code)
	}
	if c.Conn != 0 {
		switch o := d.owners[txn.Session]; {
		case o == nil:
			err = tree.ErrSessionExpired
		case o.conn != c.Conn:
			err = ErrSessionMoved
		}
	}
	if err == nil && out.Base != d.members.Version {
		err = tree.ErrBadVersion
	}
	if err != nil {
		d.tree.ConsumeZxid(txn.Zxid)
		e.Result.Err = err
		return
	}
	cfg := out.Config.Clone()
	cfg.Version = txn.Zxid
	d.members = cfg
	installed := cfg.Clone()
	e.Membership = &installed
	data := []byte(cfg.Text())
	stat, events := d.tree.SetConfig(data, txn.Zxid, txn.Time)
	e.Result = tree.Result{Resp: &wire.GetDataResponse{Data: data, Stat: stat}, Events: events}
}

// CheckConfigWrite is a reconfig's permission check: may a requester
// with these identities write /zookeeper/config?
func (d *DB) CheckConfigWrite(auth []wire.ID) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.tree.CheckConfigWrite(auth)
}

// Member returns the member with id in the current configuration.
func (d *DB) Member(id uint64) (membership.Member, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.members.Member(id)
}
