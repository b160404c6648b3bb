package tree

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/hutchzk/hutch/wire"
)

// Identities do not travel with every write. ZooKeeper checks a write's
// ACLs where it is prepared (PrepRequestProcessor) and logs only the
// transaction; hutch applies each write on every member, and used to put
// the connection's whole identity list into each command, so ten 1 MB
// digest names made every 4-byte create cost megabytes on every member
// (issue 26). Now the member the client is on prepares the write: it
// works out, against its tree, the permissions the connection's
// identities hold under every ACL the write may check (Grants), and only
// that travels. The check itself still happens where the write applies,
// against the ACL as it is then: a grant is keyed by the digest of the
// ACL's content, so a write ordered after a setACL that changed the ACL
// finds no grant for the new one and is refused (ErrACLChanged), and a
// write ordered after a setACL that leaves the content alone keeps its
// grant, which is what the same identities would get. Refused so, the
// write has not happened, and its connection is dropped, as after a lost
// write; the client retries against the new ACL. A write whose ACL holds
// an "auth" entry carries the identities themselves, since the entry
// expands to them where the write applies (fixupACL), as ZooKeeper's
// prep does.

// ErrACLChanged refuses a write whose ACL decisions were prepared against
// ACLs that changed before it applied (see Grants). It is not one of
// ZooKeeper's codes: the server drops the connection instead of
// answering, and the write did not happen.
var ErrACLChanged = errors.New("tree: an ACL the write was prepared against changed before it applied")

// ACLDigest identifies an ACL's content: the first 16 bytes of the
// SHA-256 of its entries in order. A collision would need a second
// preimage of SHA-256.
type ACLDigest [16]byte

// digestACL computes acl's ACLDigest.
func digestACL(acl []wire.ACL) ACLDigest {
	h := sha256.New()
	var b []byte
	for _, a := range acl {
		b = binary.AppendVarint(b[:0], int64(a.Perms))
		b = binary.AppendUvarint(b, uint64(len(a.ID.Scheme)))
		b = append(b, a.ID.Scheme...)
		b = binary.AppendUvarint(b, uint64(len(a.ID.ID)))
		b = append(b, a.ID.ID...)
		h.Write(b)
	}
	var d ACLDigest
	copy(d[:], h.Sum(nil))
	return d
}

// Grant is the permissions a connection's identities hold under the ACL
// whose digest is ACL.
type Grant struct {
	ACL   ACLDigest
	Perms int32
}

// Grants is what a write carries instead of its connection's identities:
// Super for a connection with the super identity, which every ACL
// allows, and otherwise a Grant for each ACL with entries naming
// identities that the write may check, sorted by digest. ACLs that name
// only world:anyone (or nothing) need no grant.
type Grants struct {
	Super   bool
	Entries []Grant
}

// check is checkACL by the grants.
func (g *Grants) check(acl []wire.ACL, perm int32) error {
	if len(acl) == 0 || g.Super {
		return nil
	}
	var world int32
	named := false
	for _, a := range acl {
		if a.ID.Scheme == schemeWorld && a.ID.ID == "anyone" {
			world |= a.Perms
		} else {
			named = true
		}
	}
	if world&perm != 0 {
		return nil
	}
	if !named {
		return ErrNoAuth
	}
	d := digestACL(acl)
	i, ok := slices.BinarySearchFunc(g.Entries, d, func(e Grant, d ACLDigest) int { return compareDigests(e.ACL, d) })
	switch {
	case !ok:
		return ErrACLChanged
	case g.Entries[i].Perms&perm != 0:
		return nil
	}
	return ErrNoAuth
}

func compareDigests(a, b ACLDigest) int {
	for i := range a {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return 0
}

// heldPerms is the permissions auth holds under acl: every entry's that
// matches one of them, as checkACL matches.
func heldPerms(acl []wire.ACL, auth []wire.ID) int32 {
	var p int32
	for _, a := range acl {
		if checkACL([]wire.ACL{a}, a.Perms, auth) == nil {
			p |= a.Perms
		}
	}
	return p
}

// NeedsIdentities reports whether applying op with req needs the
// connection's identities themselves: a create or setACL whose ACL holds
// an "auth" entry, which expands to them.
func NeedsIdentities(op wire.OpCode, req any) bool {
	switch r := req.(type) {
	case *wire.CreateRequest:
		return hasAuthEntry(r.ACL)
	case *wire.CreateTTLRequest:
		return hasAuthEntry(r.ACL)
	case *wire.SetACLRequest:
		return hasAuthEntry(r.ACL)
	case *MultiRequest:
		for _, o := range r.Ops {
			if NeedsIdentities(o.Op, o.Req) {
				return true
			}
		}
	}
	return false
}

func hasAuthEntry(acl []wire.ACL) bool {
	for _, a := range acl {
		if a.ID.Scheme == schemeAuth {
			return true
		}
	}
	return false
}

// PrepareGrants works out, against the tree as it is, the permissions
// auth holds under every ACL that applying op with req may check: the
// ACLs of the nodes it names and of their parents, and the ACLs it sets
// (a later op of a multi may check a node an earlier one created).
func (t *Tree) PrepareGrants(op wire.OpCode, req any, auth []wire.ID) *Grants {
	g := &Grants{}
	for _, id := range auth {
		if id.Scheme == schemeSuper {
			g.Super = true
			return g
		}
	}
	seen := make(map[ACLDigest]bool)
	add := func(acl []wire.ACL) {
		if len(acl) == 0 {
			return
		}
		named := false
		for _, a := range acl {
			named = named || !(a.ID.Scheme == schemeWorld && a.ID.ID == "anyone")
		}
		if !named {
			return
		}
		d := digestACL(acl)
		if !seen[d] {
			seen[d] = true
			g.Entries = append(g.Entries, Grant{ACL: d, Perms: heldPerms(acl, auth)})
		}
	}
	node := func(path string) {
		if n := t.lookup(path); n != nil {
			add(n.acl)
		}
	}
	parent := func(path string) {
		if p, _, ok := splitParent(path); ok {
			node(p)
		}
	}
	set := func(acl []wire.ACL) {
		if fixed, err := fixupACL(auth, acl, t.sasl); err == nil {
			add(fixed)
		}
	}
	var visit func(op wire.OpCode, req any)
	visit = func(op wire.OpCode, req any) {
		switch r := req.(type) {
		case *wire.CreateRequest:
			parent(r.Path)
			set(r.ACL)
		case *wire.CreateTTLRequest:
			parent(r.Path)
			set(r.ACL)
		case *wire.DeleteRequest:
			parent(r.Path)
		case *wire.SetDataRequest:
			node(r.Path)
		case *wire.SetACLRequest:
			node(r.Path)
			set(r.ACL)
		case *wire.CheckVersionRequest:
			node(r.Path)
		case *MultiRequest:
			for _, o := range r.Ops {
				visit(o.Op, o.Req)
			}
		}
	}
	visit(op, req)
	slices.SortFunc(g.Entries, func(a, b Grant) int { return compareDigests(a.ACL, b.ACL) })
	return g
}
