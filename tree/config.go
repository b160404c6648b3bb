package tree

import "github.com/hutchzk/hutch/wire"

// SetConfig writes an ensemble's configuration into /zookeeper/config as
// ZooKeeper's reconfig transaction does (DataTree.setData with version
// -1, no ACL check): the data, mzxid and mtime change, the version reads
// -1 ever after, and NodeDataChanged fires. zxid counts as applied, like
// any transaction's. It returns the node's Stat and the event.
func (t *Tree) SetConfig(data []byte, zxid, time int64) (wire.Stat, []Event) {
	if zxid > t.lastZxid {
		t.lastZxid = zxid
	}
	n := t.nodes[configPath]
	t.save(n)
	t.dataSize += int64(len(data) - len(n.data))
	before := n.data
	n.data = cloneData(data)
	n.st.version = -1
	n.st.mtime = time
	n.st.mzxid = zxid
	t.rehash(configPath, n, true)
	return n.stat(), []Event{{Type: wire.EventNodeDataChanged, Path: configPath, ACL: n.acl, Data: before}}
}

// CheckConfigWrite is a reconfig's permission check: WRITE on
// /zookeeper/config (world-readable only, so in practice the super user).
func (t *Tree) CheckConfigWrite(auth []wire.ID) error {
	return checkACL(t.nodes[configPath].acl, wire.PermWrite, auth)
}

// CodeError returns the error the tree uses for ZooKeeper code c (nil
// for CodeOK), for outcomes decided elsewhere and replayed from the log.
func CodeError(c wire.Code) error {
	if c == wire.CodeOK {
		return nil
	}
	for _, err := range codeErrors {
		if e := err.(*Error); e.Code == c {
			return err
		}
	}
	return newError(c, "error "+c.String())
}

// codeErrors are the sentinels CodeError looks among.
var codeErrors = []error{ErrSystemError, ErrRuntimeInconsistency, ErrMarshallingError, ErrUnimplemented,
	ErrBadArguments, ErrNoNode, ErrNoAuth, ErrBadVersion, ErrNoChildrenForEphemerals, ErrNodeExists,
	ErrNotEmpty, ErrSessionExpired, ErrInvalidACL, ErrReconfigDisabled, ErrReconfigInProgress, ErrNewConfigNoQuorum, ErrQuotaExceeded}
