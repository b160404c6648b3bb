package conformance

import "testing"

// Sequences the differential checker found and shrank, on which hutch
// differed from ZooKeeper 3.8.0 (Debian's build). Each fails until hutch
// is fixed.

// ZooKeeper answers a create2 inside a multi with a create result (opcode
// 1, path only, no Stat); hutch answers with a create2 result and a Stat.
func TestDiffRegression_MultiCreate2Result(t *testing.T) {
	checkDiffRegression(t, []diffOp{
		{Op: "multi", Ops: []diffOp{
			{Op: "create2", Path: "/d", Data: "i"},
		}},
	})
}

// ZooKeeper delivers a watch event only to sessions with READ on the
// node's ACL (ServerCnxn.process checks it per event); hutch delivers it
// regardless. Here s2's exists watch on /d would see NodeCreated, but /d is
// created readable by digest alice only.
func TestDiffRegression_WatchEventNeedsRead(t *testing.T) {
	checkDiffRegression(t, []diffOp{
		{Op: "exists", S: 2, Path: "/d", Watch: true},
		{Op: "create", S: 3, Path: "/d", Data: "37", ACL: 2},
	})
}

// The same READ check applies to persistent recursive watches.
func TestDiffRegression_RecursiveWatchEventNeedsRead(t *testing.T) {
	checkDiffRegression(t, []diffOp{
		{Op: "addWatch", Path: "/d", Mode: 1},
		{Op: "create2", S: 3, Path: "/d", Data: "56", Mode: 1, ACL: 2},
	})
}

// And to child watches, against the parent's ACL: once setACL leaves
// READ on /e to alice only, s1's child watch on /e must not fire. (Found
// as: closing s1 deletes its ephemeral child of /e, and hutch sent s1
// NodeChildrenChanged before the close reply.)
func TestDiffRegression_ChildWatchEventNeedsRead(t *testing.T) {
	checkDiffRegression(t, []diffOp{
		{Op: "auth", S: 2, User: "alice:secret"},
		{Op: "create", Path: "/e", Data: "85"},
		{Op: "getChildren", S: 1, Path: "/e", Watch: true},
		{Op: "setACL", S: 2, Path: "/e", Version: -1, ACL: 2},
		{Op: "create", S: 2, Path: "/e/f", Data: "x"},
	})
}

// A container created inside a multi answers with a create2 result (path
// and Stat), as every create result that carries a Stat does.
func TestDiffRegression_MultiCreateContainerResult(t *testing.T) {
	checkDiffRegression(t, []diffOp{
		{Op: "create2", S: 2, Path: "/e", Data: "85"},
		{Op: "multi", S: 2, Ops: []diffOp{
			{Op: "createContainer", Path: "/e/f", Data: "44", Mode: 4, ACL: 3},
		}},
	})
}
