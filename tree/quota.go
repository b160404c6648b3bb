package tree

import (
	"slices"
	"strings"

	"github.com/hutchzk/hutch/quota"
)

// Quotas, as ZooKeeper 3.7+ keeps them. A quota on path P is the node
// /zookeeper/quota/P/zookeeper_limits, whose data is a StatsTrack string
// of limits ("count=2,bytes=-1=;byteHardLimit=-1;countHardLimit=-1"); its
// sibling zookeeper_stats holds what the subtree under P uses
// ("count=3,bytes=12"). The tree keeps the usage up to date as nodes come
// and go, in the apply path, as DataTree does: a create under P adds one
// node and its data's length, a delete takes them away, a setData adds
// the change in length. Only the deepest quota above a path counts it.
// Creating a zookeeper_stats node counts the subtree afresh.
//
// With EnforceQuota, a create or setData that would take a subtree past a
// hard limit fails with ErrQuotaExceeded, and passing a soft limit is
// reported in Result.Quota (ZooKeeperServer.checkQuota, which ZooKeeper
// runs only with zookeeper.enforceQuota on).
//
// Which paths have quotas is an index kept with the nodes (link and
// unlink), so it is a function of the tree alone: rebuilt by Restore,
// undone by a failed multi, the same on every replica. ZooKeeper's
// PathTrie differs from it only where its own state drifts from its tree
// until a restart: deleting a quota there also forgets the quotas nested
// below it, and a zookeeper_limits node elsewhere under /zookeeper can
// drop an unrelated entry.
const (
	quotaLimitNode = quota.LimitNode
	quotaStatNode  = quota.StatNode
)

// EnforceQuota turns on zookeeper.enforceQuota: hard limits refuse the
// writes that would pass them, and soft limits passed are reported. Every
// replica must agree on it, as on any other part of the configuration
// that decides what a transaction does.
func (t *Tree) EnforceQuota() { t.enforceQuota = true }

// quotaKey returns the index key of the quota a node named name under
// parent stands for, if it is a zookeeper_limits node under
// /zookeeper/quota: the rest of parent's path, components blank to Java's
// trim left out (PathTrie's split). ZooKeeper tests the parent with
// startsWith("/zookeeper/quota"), so /zookeeper/quotaX/zookeeper_limits
// puts a quota on /X, as here.
func quotaKey(parent, name string) (string, bool) {
	if name != quotaLimitNode || len(parent) <= len(quotaPath) || !strings.HasPrefix(parent, quotaPath) {
		return "", false
	}
	key := trieKey(parent[len(quotaPath):])
	return key, key != "/"
}

// trieKey is the path PathTrie stands p for: "/" and the components of p
// that are not blank, joined by "/".
func trieKey(p string) string {
	if !hasBlankComponent(p) {
		if !strings.HasPrefix(p, "/") {
			return "/" + p
		}
		return p
	}
	var parts []string
	for _, c := range strings.Split(p, "/") {
		if javaTrim(c) != "" {
			parts = append(parts, c)
		}
	}
	return "/" + strings.Join(parts, "/")
}

// hasBlankComponent reports whether p, split on "/", has a component
// that Java's trim empties (an empty one included), other than a leading
// empty one.
func hasBlankComponent(p string) bool {
	if p == "" || p == "/" {
		return true
	}
	start := 0
	if p[0] == '/' {
		start = 1
	}
	for {
		end := strings.IndexByte(p[start:], '/')
		comp := p[start:]
		if end >= 0 {
			comp = p[start : start+end]
		}
		if javaTrim(comp) == "" {
			return true
		}
		if end < 0 {
			return false
		}
		start += end + 1
	}
}

// indexQuota counts a zookeeper_limits node in or out of the quota index
// (delta +1 or -1); a key may stand for several nodes, so it counts them.
func (t *Tree) indexQuota(path, name string, delta int) {
	if name != quotaLimitNode {
		return
	}
	key, ok := quotaKey(path[:len(path)-len(name)-1], name)
	if !ok {
		return
	}
	if n := t.quotas[key] + delta; n > 0 {
		t.quotas[key] = n
	} else {
		delete(t.quotas, key)
	}
}

// quotaPrefix is DataTree.getMaxPrefixWithQuota: the deepest quota at or
// above path, or "" if none (a quota on "/" never counts).
func (t *Tree) quotaPrefix(path string) string {
	if len(t.quotas) == 0 {
		return ""
	}
	p := path
	if hasBlankComponent(p) {
		p = trieKey(p)
	}
	for len(p) > 1 {
		if t.quotas[p] > 0 {
			return p
		}
		p = p[:strings.LastIndexByte(p, '/')]
	}
	return ""
}

// quotaCreated is what DataTree.createNode does for quotas after linking
// the node at path: a new zookeeper_stats node under /zookeeper/quota is
// set to a fresh count of the subtree it stands for, then the quota above
// path counts the node.
func (t *Tree) quotaCreated(c *ctx, path, parentPath, name string, data []byte) {
	if name == quotaStatNode && strings.HasPrefix(parentPath, quotaPath) {
		t.recountQuota(parentPath[len(quotaPath):])
	}
	if prefix := t.quotaPrefix(path); prefix != "" {
		t.addQuotaUsage(c, prefix, int64(len(data)), 1)
	}
}

// recountQuota is DataTree.updateQuotaForPath: the stats node of real
// path p gets the count and bytes of p's subtree ("" is the root's
// alias, as in ZooKeeper).
func (t *Tree) recountQuota(p string) {
	statsPath := quotaPath + p + "/" + quotaStatNode
	sn := t.nodes[statsPath]
	if sn == nil {
		return
	}
	var count, bytes int64
	if n := t.lookup(p); n != nil {
		var walk func(p string, n *node)
		walk = func(p string, n *node) {
			count++
			bytes += int64(len(n.data))
			for child := range n.children {
				cp := p + "/" + child
				walk(cp, t.nodes[cp])
			}
		}
		walk(p, n)
	}
	st := quota.Stats{}
	st.Set(quota.Count, count)
	st.Set(quota.Bytes, bytes)
	t.setStatsData(statsPath, sn, st.Append(nil))
}

// addQuotaUsage is DataTree.updateQuotaStat: the stats node of the quota
// on prefix takes the change. A stats node that is missing, or whose data
// does not read as a StatsTrack, is left alone (ZooKeeper logs the first
// and throws on the second).
func (t *Tree) addQuotaUsage(c *ctx, prefix string, bytesDiff, countDiff int64) {
	statsPath := quotaPath + prefix + "/" + quotaStatNode
	sn := t.nodes[statsPath]
	if sn == nil {
		return
	}
	st, err := quota.Parse(sn.data)
	if err != nil {
		return
	}
	if c.inMulti {
		if c.quotaBase == nil {
			c.quotaBase = map[string]quota.Stats{}
		}
		if _, seen := c.quotaBase[prefix]; !seen {
			c.quotaBase[prefix] = st.Clone()
		}
	}
	st.Set(quota.Count, st.Get(quota.Count)+countDiff)
	st.Set(quota.Bytes, st.Get(quota.Bytes)+bytesDiff)
	t.setStatsData(statsPath, sn, st.Append(nil))
}

// setStatsData replaces a stats node's data as ZooKeeper does, in place:
// no version, mzxid or watch changes.
func (t *Tree) setStatsData(path string, n *node, data []byte) {
	t.save(n)
	t.dataSize += int64(len(data) - len(n.data))
	n.data = data
	t.rehash(path, n, true)
}

// checkQuota is ZooKeeperServer.checkQuota for a write adding countDiff
// nodes and bytesDiff bytes at path: nothing unless quotas are enforced;
// then the deepest quota above path is read, each limit passed is
// reported, and a hard one refuses the write. Limits or stats that do not
// read as a StatsTrack make ZooKeeper's PrepRequestProcessor answer
// MarshallingError. Inside a multi the usage is the one before the multi,
// as ZooKeeper checks every op of a multi against the committed tree.
func (t *Tree) checkQuota(c *ctx, path string, bytesDiff, countDiff int64) error {
	if !t.enforceQuota {
		return nil
	}
	prefix := t.quotaPrefix(path)
	if prefix == "" {
		return nil
	}
	ln := t.nodes[quotaPath+prefix+"/"+quotaLimitNode]
	if ln == nil {
		return nil
	}
	limits, err := quota.Parse(ln.data)
	if err != nil {
		return ErrMarshallingError
	}
	checkCount := countDiff != 0 && (limits.Get(quota.Count) > -1 || limits.Get(quota.CountHardLimit) > -1)
	checkBytes := bytesDiff != 0 && (limits.Get(quota.Bytes) > -1 || limits.Get(quota.ByteHardLimit) > -1)
	if !checkCount && !checkBytes {
		return nil
	}
	current, ok := c.quotaBase[prefix]
	if !ok {
		sn := t.nodes[quotaPath+prefix+"/"+quotaStatNode]
		if sn == nil {
			return nil
		}
		if current, err = quota.Parse(sn.data); err != nil {
			return ErrMarshallingError
		}
	}
	if checkCount {
		used := current.Get(quota.Count) + countDiff
		if err := c.passLimit(prefix, false, used, limits.Get(quota.Count), limits.Get(quota.CountHardLimit)); err != nil {
			return err
		}
	}
	if checkBytes {
		used := current.Get(quota.Bytes) + bytesDiff
		if err := c.passLimit(prefix, true, used, limits.Get(quota.Bytes), limits.Get(quota.ByteHardLimit)); err != nil {
			return err
		}
	}
	return nil
}

// passLimit checks one limit of the quota on prefix: the hard one if it
// is set (not -1), else the soft one. Passing it is reported; passing a
// hard one refuses the write.
func (c *ctx) passLimit(prefix string, bytes bool, used, soft, hard int64) error {
	limit, isHard := soft, hard > -1
	if isHard {
		limit = hard
	}
	if used <= limit {
		return nil
	}
	c.quota = append(c.quota, quota.Exceeded{Path: prefix, Bytes: bytes, Current: used, Limit: limit, Hard: isHard})
	if isHard {
		return ErrQuotaExceeded
	}
	return nil
}

// RecountQuotas sets every quota's stats node to a fresh count of its
// subtree, as ZooKeeper does for each zookeeper_limits node without
// children under /zookeeper/quota when it loads a snapshot
// (DataTree.setupQuota). A tree loaded from outside hutch's log, such as
// an imported ZooKeeper snapshot whose stats are fuzzy, needs it once;
// the recounted tree is then what every replica gets. hutch's own
// snapshots are exact and restored as they are, so members never recount
// on their own and never diverge.
func (t *Tree) RecountQuotas() {
	var limits []string
	for p, n := range t.nodes {
		if len(n.children) == 0 && strings.HasPrefix(p, quotaPath+"/") && strings.HasSuffix(p, "/"+quotaLimitNode) {
			limits = append(limits, p)
		}
	}
	slices.Sort(limits)
	for _, p := range limits {
		t.recountQuota(p[len(quotaPath):strings.Index(p, "/"+quotaLimitNode)])
	}
}
