package treejson

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hutchzk/hutch/wire"
)

// Client is what Dump and Load need of a ZooKeeper client; hutch cli's and
// hutchtest's adapt theirs. Errors for a missing node must satisfy
// IsNoNode.
type Client interface {
	Get(path string) ([]byte, wire.Stat, error)
	GetACL(path string) ([]wire.ACL, error)
	Children(path string) ([]string, error)
	Create(path string, data []byte, acl []wire.ACL, flags int32, ttl time.Duration) error
	IsNoNode(err error) bool
}

// builtIn reports ZooKeeper's own nodes, which every server has and no
// dump carries.
func builtIn(p string) bool { return p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/") }

func child(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

// Dump reads the subtree at root through c: every node, parents first and
// children by name, with its Stat when withStat. A node that goes away
// while the dump runs is left out; ZooKeeper's own nodes (/zookeeper) are
// never dumped. A client cannot tell a container or TTL node from a
// persistent one, so through a plain client they come out persistent.
func Dump(c Client, root string, withStat bool) (Tree, error) {
	t := Tree{Root: root}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if builtIn(p) {
			continue
		}
		data, st, err := c.Get(p)
		if c.IsNoNode(err) {
			continue
		}
		if err != nil {
			return t, fmt.Errorf("get %s: %w", p, err)
		}
		acl, err := c.GetACL(p)
		if c.IsNoNode(err) {
			continue
		}
		if err != nil {
			return t, fmt.Errorf("getAcl %s: %w", p, err)
		}
		kids, err := c.Children(p)
		if err != nil && !c.IsNoNode(err) {
			return t, fmt.Errorf("ls %s: %w", p, err)
		}
		if p != "/" {
			n := Node{Path: p, Data: data, ACL: FormatACLs(acl), Ephemeral: st.EphemeralOwner != 0}
			if withStat {
				n.Stat = &st
			}
			t.Nodes = append(t.Nodes, n)
		}
		slices.Sort(kids)
		for _, k := range kids {
			queue = append(queue, child(p, k))
		}
	}
	return t, nil
}

// Rebase returns the path a node of t gets when t is loaded under at:
// the node's path with t's root replaced by at ("" keeps it).
func (t Tree) Rebase(p, at string) string {
	root := strings.TrimSuffix(t.Root, "/")
	if at == "" || root == strings.TrimSuffix(at, "/") {
		return p
	}
	rest := strings.TrimPrefix(p, root)
	if at == "/" {
		if rest == "" {
			return "/"
		}
		return rest
	}
	return strings.TrimSuffix(at, "/") + rest
}

// Load creates every node of t through c, in order, under at (see
// Rebase). It stops at the first node it cannot create: one that exists
// already, a missing parent, an ACL that does not parse or that c's
// identities may not use.
func Load(c Client, t Tree, at string) (created int, err error) {
	root := strings.TrimSuffix(t.Root, "/")
	for _, n := range t.Nodes {
		if root != "" && n.Path != root && !strings.HasPrefix(n.Path, root+"/") {
			return created, fmt.Errorf("%s is not under the tree's root %s", n.Path, t.Root)
		}
		p := t.Rebase(n.Path, at)
		acl, err := ParseACLs(n.ACL)
		if err != nil {
			return created, fmt.Errorf("%s: %w", n.Path, err)
		}
		if err := c.Create(p, n.Data, acl, n.CreateFlags(), n.TTL); err != nil {
			return created, fmt.Errorf("create %s: %w", p, err)
		}
		created++
	}
	return created, nil
}
