package zkdb

// Members compare their state as of the same log index, as ZooKeeper
// 3.6+ members compare the digest each transaction carries: a replica
// whose tree differs from the others' (a bug, a byte changed in memory or
// in a snapshot that still passed its checksum) is found while it runs,
// not only when an operator looks. The DB keeps the tree's digest after
// each of the last stateDigestRing batches it applied, by log index;
// package raftstore carries a follower's newest to the leader, which
// looks up its own at that index.

// stateDigestRing is how many batches' digests are kept: a follower
// further behind than this is compared once it catches up.
const stateDigestRing = 1024

// IndexDigest is the tree's digest right after the batch at log index
// Index applied.
type IndexDigest struct {
	Index  uint64
	Digest uint64
}

// recordStateDigestLocked records the digest after the batch at index;
// mu is held.
func (d *DB) recordStateDigestLocked(index uint64) {
	e := IndexDigest{Index: index, Digest: d.tree.Digest()}
	if len(d.stateDigests) < stateDigestRing {
		d.stateDigests = append(d.stateDigests, e)
		return
	}
	d.stateDigests[d.stateDigestNext] = e
	d.stateDigestNext = (d.stateDigestNext + 1) % stateDigestRing
}

// StateDigestAt returns the tree's digest right after the batch at log
// index applied, if it is among the last ones kept.
func (d *DB) StateDigestAt(index uint64) (uint64, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, e := range d.stateDigests {
		if e.Index == index {
			return e.Digest, true
		}
	}
	return 0, false
}

// LatestStateDigest returns the digest after the newest batch applied,
// and false before any (or right after a snapshot was restored).
func (d *DB) LatestStateDigest() (IndexDigest, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if len(d.stateDigests) == 0 {
		return IndexDigest{}, false
	}
	last := len(d.stateDigests) - 1
	if len(d.stateDigests) == stateDigestRing {
		last = (d.stateDigestNext + stateDigestRing - 1) % stateDigestRing
	}
	return d.stateDigests[last], true
}
