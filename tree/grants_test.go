package tree

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/hutchzk/hutch/wire"
)

// TestGrantsDecideAsIdentities: a write prepared with grants against a
// tree gets exactly the result it gets with the identities themselves,
// whatever ACLs setACL changed between its preparation and its apply, or
// else ErrACLChanged (and then a retry prepared afresh gets the
// identities' result): grants never allow what the identities would not,
// and never refuse what they would allow against an unchanged ACL.
// Two trees take the same seeded history, one deciding by identities
// (as before grants) and one by grants.
func TestGrantsDecideAsIdentities(t *testing.T) {
	alice := wire.ID{Scheme: "digest", ID: DigestID("alice:pw")}
	bob := wire.ID{Scheme: "digest", ID: DigestID("bob:pw")}
	local := wire.ID{Scheme: "ip", ID: "127.0.0.1"}
	acls := [][]wire.ACL{
		open,
		{{Perms: wire.PermAll, ID: alice}},
		{{Perms: wire.PermRead | wire.PermWrite, ID: alice}, {Perms: wire.PermAll, ID: bob}},
		{{Perms: wire.PermCreate | wire.PermDelete, ID: wire.ID{Scheme: "ip", ID: "127.0.0.0/8"}}},
		{{Perms: wire.PermRead, ID: wire.ID{Scheme: "world", ID: "anyone"}}, {Perms: wire.PermWrite | wire.PermAdmin, ID: bob}},
		{{Perms: wire.PermAll, ID: wire.ID{Scheme: "auth", ID: ""}}},
	}
	idsets := [][]wire.ID{{local}, {local, alice}, {local, bob}, {local, alice, bob}, {local, {Scheme: "super"}}}
	paths := []string{"/p", "/p/a", "/p/b", "/p/a/c"}
	rng := rand.New(rand.NewPCG(7, 26))
	byID, byGrant := New(), New()
	zxid := int64(0)
	apply := func(tr *Tree, txn Txn) Result {
		txn.Zxid, txn.Time = zxid, zxid
		return tr.Apply(&txn)
	}
	super := []wire.ID{{Scheme: "super"}}
	zxid++
	for _, tr := range []*Tree{byID, byGrant} {
		apply(tr, Txn{Auth: super, Op: wire.OpCreate, Req: &wire.CreateRequest{Path: "/p", ACL: open}})
	}
	randomOp := func() (wire.OpCode, any) {
		p := paths[rng.IntN(len(paths))]
		acl := acls[rng.IntN(len(acls))]
		switch rng.IntN(6) {
		case 0:
			return wire.OpCreate, &wire.CreateRequest{Path: p, Data: []byte("d"), ACL: acl}
		case 1:
			return wire.OpSetData, &wire.SetDataRequest{Path: p, Data: []byte(fmt.Sprint(zxid)), Version: -1}
		case 2:
			return wire.OpDelete, &wire.DeleteRequest{Path: p, Version: -1}
		case 3:
			return wire.OpCheck, &wire.CheckVersionRequest{Path: p, Version: -1}
		case 4:
			return wire.OpSetACL, &wire.SetACLRequest{Path: p, ACL: acl, Version: -1}
		}
		q := paths[rng.IntN(len(paths))]
		return wire.OpMulti, &MultiRequest{Ops: []MultiOp{
			{Op: wire.OpCreate, Req: &wire.CreateRequest{Path: p, ACL: acl}},
			{Op: wire.OpSetData, Req: &wire.SetDataRequest{Path: q, Version: -1}},
			{Op: wire.OpCreate, Req: &wire.CreateRequest{Path: p + "/m", ACL: open}},
		}}
	}
	changed, refusedByGrants, allowed := 0, 0, 0
	for step := range 5000 {
		auth := idsets[rng.IntN(len(idsets))]
		op, req := randomOp()
		var grants *Grants
		if !NeedsIdentities(op, req) {
			grants = byGrant.PrepareGrants(op, req, auth)
		}
		// Meanwhile, a setACL ordered before the write.
		if rng.IntN(3) == 0 {
			zxid++
			set := &wire.SetACLRequest{Path: paths[rng.IntN(len(paths))], ACL: acls[rng.IntN(len(acls)-1)], Version: -1}
			a, b := apply(byID, Txn{Auth: super, Op: wire.OpSetACL, Req: set}), apply(byGrant, Txn{Auth: super, Op: wire.OpSetACL, Req: set})
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("step %d: the trees parted on a setACL", step)
			}
		}
		zxid++
		want := apply(byID, Txn{Auth: auth, Op: op, Req: req})
		got := apply(byGrant, Txn{Auth: authIf(grants == nil, auth), Grants: grants, Op: op, Req: req})
		if errors.Is(got.Err, ErrACLChanged) {
			// Refused with the tree untouched: decided by identities at
			// the same place, it comes out as on the other tree, which
			// keeps the two alike.
			changed++
			if again := apply(byGrant, Txn{Auth: auth, Op: op, Req: req}); !reflect.DeepEqual(want, again) {
				t.Fatalf("step %d: a write refused as prepared against a changed ACL had changed the tree", step)
			}
			continue
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("step %d: %d %+v with %v:\nidentities: %+v\ngrants:     %+v", step, op, req, auth, want, got)
		}
		if errors.Is(want.Err, ErrNoAuth) || errors.Is(want.MultiErr(), ErrNoAuth) {
			refusedByGrants++
		} else {
			allowed++
		}
	}
	if byID.Digest() != byGrant.Digest() {
		t.Fatal("the two trees differ at the end")
	}
	t.Logf("5000 writes: %d decided alike (%d refused NOAUTH), %d refused as prepared against a changed ACL", refusedByGrants+allowed, refusedByGrants, changed)
	if changed == 0 || refusedByGrants == 0 {
		t.Fatal("the history never exercised a changed ACL or a refusal")
	}
}

func authIf(cond bool, auth []wire.ID) []wire.ID {
	if cond {
		return auth
	}
	return nil
}
