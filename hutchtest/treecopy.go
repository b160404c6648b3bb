package hutchtest

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/treejson"
	"github.com/hutchzk/hutch/wire"
)

// Dump reads the subtree at path through c, a client of any
// ZooKeeper-compatible server (hutch, or a real ZooKeeper), with each
// node's Stat when withStat: a fixture taken from a live server, or the
// first half of a partial copy between two servers (LoadInto is the
// other). Through a client a container or TTL node reads as persistent;
// Server.Snapshot, which reads hutch's tree directly, keeps them. It fails
// the test on an error.
func Dump(tb testing.TB, c *zk.Conn, path string, withStat bool) Snapshot {
	tb.Helper()
	t, err := treejson.Dump(goZK{c}, path, withStat)
	if err != nil {
		tb.Fatalf("hutchtest: dump %s: %v", path, err)
	}
	return t
}

// LoadInto creates every node of snap through c, in order, under at (""
// keeps the paths; see treejson.Tree.Rebase), with c's identities: an
// ACL naming an auth scheme needs c to have added it. It fails the test
// at the first node it cannot create.
func LoadInto(tb testing.TB, c *zk.Conn, snap Snapshot, at string) {
	tb.Helper()
	if _, err := treejson.Load(goZK{c}, snap, at); err != nil {
		tb.Fatalf("hutchtest: load: %v", err)
	}
}

// goZK adapts go-zookeeper's client to treejson.Client.
type goZK struct{ c *zk.Conn }

func (g goZK) Get(p string) ([]byte, wire.Stat, error) {
	data, st, err := g.c.Get(p)
	if err != nil {
		return nil, wire.Stat{}, err
	}
	return data, wire.Stat{Czxid: st.Czxid, Mzxid: st.Mzxid, Ctime: st.Ctime, Mtime: st.Mtime, Version: st.Version,
		Cversion: st.Cversion, Aversion: st.Aversion, EphemeralOwner: st.EphemeralOwner, DataLength: st.DataLength,
		NumChildren: st.NumChildren, Pzxid: st.Pzxid}, nil
}

func (g goZK) GetACL(p string) ([]wire.ACL, error) {
	acl, _, err := g.c.GetACL(p)
	out := make([]wire.ACL, 0, len(acl))
	for _, a := range acl {
		out = append(out, wire.ACL{Perms: a.Perms, ID: wire.ID{Scheme: a.Scheme, ID: a.ID}})
	}
	return out, err
}

func (g goZK) Children(p string) ([]string, error) {
	kids, _, err := g.c.Children(p)
	return kids, err
}

func (g goZK) Create(p string, data []byte, acl []wire.ACL, flags int32, ttl time.Duration) error {
	zacl := make([]zk.ACL, 0, len(acl))
	for _, a := range acl {
		zacl = append(zacl, zk.ACL{Perms: a.Perms, Scheme: a.ID.Scheme, ID: a.ID.ID})
	}
	var err error
	switch flags {
	case wire.ModeContainer:
		_, err = g.c.CreateContainer(p, data, zk.FlagContainer, zacl)
	case wire.ModePersistentWithTTL:
		_, err = g.c.CreateTTL(p, data, zk.FlagTTL, zacl, ttl)
	default:
		_, err = g.c.Create(p, data, flags, zacl)
	}
	return err
}

func (goZK) IsNoNode(err error) bool { return errors.Is(err, zk.ErrNoNode) }
