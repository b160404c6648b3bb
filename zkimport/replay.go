package zkimport

import (
	"errors"
	"fmt"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkformat"
)

// replayer applies ZooKeeper's logged transactions to a Loader as
// DataTree.processTxn does when ZooKeeper loads its own logs.
type replayer struct {
	l        *tree.Loader
	lastZxid int64
	lastTime int64
	// snapDigest is the snapshot's digest until replay reaches its zxid;
	// while it waits, the log's digests are not compared (the tree is
	// still fuzzy), as in ZooKeeper.
	snapDigest *zkformat.ZxidDigest
	digests    int // digests compared
	// mismatch is the last digest compared, when it did not match: a
	// transaction whose logged digest is off, though the next one matches,
	// is ZooKeeper's own slip (3.8 logs a create with the container flag
	// as a container in its digest and applies it as a plain node), which
	// ZooKeeper only counts; a mismatch that lasts to the end is an error.
	mismatch error
	slips    []string
}

// errDigest is a digest ZooKeeper recorded that the replayed tree does not
// have: the replay went differently from ZooKeeper's.
var errDigest = errors.New("digest mismatch")

// apply replays one entry. ErrNoNode and ErrNodeExists from the tree are
// the expected fuzz of a snapshot and are ignored; anything else is an
// error in the log.
func (r *replayer) apply(e *zkformat.Entry) error {
	h := &e.Header
	if err := r.txn(h, h.Type, e.Txn, false); err != nil {
		return err
	}
	r.lastZxid = max(r.lastZxid, h.Zxid)
	r.lastTime = max(r.lastTime, h.Time)
	return r.checkDigest(h.Zxid, e.Digest)
}

// checkDigest compares the tree with a digest ZooKeeper recorded after zxid.
func (r *replayer) checkDigest(zxid int64, d *zkformat.TxnDigest) error {
	if sd := r.snapDigest; sd != nil {
		if zxid < sd.Zxid {
			return nil
		}
		r.snapDigest = nil
		if zxid == sd.Zxid && sd.Version == tree.ZKDigestVersion {
			r.digests++
			if got := r.l.ZKDigest(); got != sd.Digest {
				return fmt.Errorf("%w: the snapshot's digest at zxid %#x is %d, the replayed tree's %d", errDigest, zxid, sd.Digest, got)
			}
		}
		return nil
	}
	if d == nil || d.Version != tree.ZKDigestVersion {
		return nil
	}
	r.digests++
	if got := r.l.ZKDigest(); got != d.Digest {
		if r.mismatch != nil {
			return r.mismatch // two in a row: the replay has gone wrong
		}
		r.mismatch = fmt.Errorf("%w: ZooKeeper logged digest %d after zxid %#x, the replayed tree's is %d", errDigest, d.Digest, zxid, got)
		return nil
	}
	if r.mismatch != nil {
		r.slips = append(r.slips, r.mismatch.Error()+"; the next digest matches again (ZooKeeper's own slip, which it only counts)")
		r.mismatch = nil
	}
	return nil
}

func ignorable(err error) bool { return err == tree.ErrNoNode || err == tree.ErrNodeExists }

// txn replays one transaction or multi op.
func (r *replayer) txn(h *zkformat.TxnHeader, t wire.OpCode, rec any, sub bool) error {
	l := r.l
	var err error
	switch x := rec.(type) {
	case *zkformat.CreateTxn:
		owner := int64(0)
		if x.Ephemeral {
			owner = h.Session
		}
		err = l.CreateNode(x.Path, x.Data, x.ACL, owner, x.ParentCVersion, h.Zxid, h.Time)
		// A plain create that finds its node (fuzz) still moves the
		// parent's cversion and pzxid on, as replay in ZooKeeper does.
		if err == tree.ErrNodeExists && t == wire.OpCreate {
			parent := x.Path[:max(lastSlash(x.Path), 0)]
			if perr := l.SetCversionPzxid(parent, x.ParentCVersion, h.Zxid); perr != nil && !ignorable(perr) {
				return perr
			}
		}
	case *zkformat.CreateTTLTxn:
		err = l.CreateNode(x.Path, x.Data, x.ACL, ttlOwner(x.TTL), x.ParentCVersion, h.Zxid, h.Time)
	case *zkformat.CreateContainerTxn:
		err = l.CreateNode(x.Path, x.Data, x.ACL, containerOwner, x.ParentCVersion, h.Zxid, h.Time)
	case *zkformat.DeleteTxn:
		err = l.DeleteNode(x.Path, h.Zxid)
	case *zkformat.SetDataTxn:
		err = l.SetData(x.Path, x.Data, x.Version, h.Zxid, h.Time)
	case *zkformat.SetACLTxn:
		err = l.SetACL(x.Path, x.ACL, x.Version)
	case *zkformat.CheckVersionTxn, *zkformat.ErrorTxn:
	case *zkformat.CreateSessionTxn:
		if sub {
			return fmt.Errorf("createSession inside a multi")
		}
		err = l.OpenSession(h.Session, x.Timeout, zkformat.SessionPassword(h.Session))
	case *zkformat.CloseSessionTxn:
		if sub {
			return fmt.Errorf("closeSession inside a multi")
		}
		var listed []string
		if x.Listed {
			listed = x.Paths
		}
		l.CloseSession(h.Session, h.Zxid, listed)
	case *zkformat.MultiTxn:
		if sub {
			return fmt.Errorf("a multi inside a multi")
		}
		// A multi that failed is logged with an error among its ops, and
		// then none of its ops apply.
		for _, op := range x.Ops {
			if op.Type == wire.OpError {
				return nil
			}
		}
		for _, op := range x.Ops {
			if err := r.txn(h, op.Type, op.Txn, true); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%s: no replay for record %T", t, rec)
	}
	if err != nil && !ignorable(err) {
		return fmt.Errorf("%s: %w", t, err)
	}
	return nil
}

func lastSlash(p string) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return i
		}
	}
	return -1
}

// Owners of containers and TTL nodes (EphemeralType), as ZooKeeper stores
// them in ephemeralOwner.
const (
	containerOwner = -1 << 63
	ttlMarker      = -0x0100000000000000
)

func ttlOwner(ttl int64) int64 { return ttlMarker | ttl }
