package server

import (
	"slices"
	"sync"

	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// manyChildren is where Children starts keeping a node's sorted names.
const manyChildren = 1000

// childCache keeps the sorted child names of a few large nodes, each
// valid while the node's czxid and pzxid (which every child created or
// deleted moves) stay the same.
type childCache struct {
	mu      sync.Mutex // guards entries
	entries []childList
}

type childList struct {
	path         string
	czxid, pzxid int64
	names        []string // sorted; never changed once kept
}

// childCacheSize is how many large nodes' names are kept.
const childCacheSize = 4

// page answers from the cache if it holds path's names as they are now.
func (c *childCache) page(db *zkdb.DB, path, after string, limit int) ([]string, bool) {
	c.mu.Lock()
	var hit *childList
	for i := range c.entries {
		if c.entries[i].path == path {
			hit = &c.entries[i]
		}
	}
	var list childList
	if hit != nil {
		list = *hit
	}
	c.mu.Unlock()
	if hit == nil {
		return nil, false
	}
	fresh := false
	db.Read(func(v *zkdb.View) {
		// Children needs READ on the node: an ACL changed since is NoAuth.
		if st, err := v.Tree.ExistsACL(path, nil); err == nil {
			fresh = st.Czxid == list.czxid && st.Pzxid == list.pzxid
		}
	})
	if !fresh {
		return nil, false
	}
	return pageAfter(list.names, after, limit), true
}

// keep remembers path's sorted names, dropping the oldest entry if full.
func (c *childCache) keep(path string, st wire.Stat, names []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = slices.DeleteFunc(c.entries, func(l childList) bool { return l.path == path })
	if len(c.entries) == childCacheSize {
		c.entries = c.entries[1:]
	}
	c.entries = append(c.entries, childList{path: path, czxid: st.Czxid, pzxid: st.Pzxid, names: names})
}

// pageAfter is the page of sorted names after after.
func pageAfter(names []string, after string, limit int) []string {
	from, found := slices.BinarySearch(names, after)
	if found {
		from++
	}
	to := min(from+max(limit, 0), len(names))
	return slices.Clone(names[from:to])
}
