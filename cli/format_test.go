package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkclient"
)

// TestPrintStat checks StatPrinter's layout, with Java's Date format in
// UTC and Long.toHexString for negative owners.
func TestPrintStat(t *testing.T) {
	var b strings.Builder
	printStat(&b, wire.Stat{Czxid: 0x1f, Mzxid: 0x20, Ctime: 1795461192633, Mtime: 0, Pzxid: 0x21,
		Cversion: -2, Version: 3, Aversion: 1, EphemeralOwner: -0x8000000000000000, DataLength: 5, NumChildren: 2}, time.UTC)
	want := `cZxid = 0x1f
ctime = Mon Nov 23 19:13:12 UTC 2026
mZxid = 0x20
mtime = Thu Jan 01 00:00:00 UTC 1970
pZxid = 0x21
cversion = -2
dataVersion = 3
aclVersion = 1
ephemeralOwner = 0x8000000000000000
dataLength = 5
numChildren = 2
`
	if b.String() != want {
		t.Errorf("printStat:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestACLLine(t *testing.T) {
	for _, c := range []struct {
		acl  wire.ACL
		want string
	}{
		{wire.ACL{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}, "'world,'anyone\n: cdrwa"},
		{wire.ACL{Perms: wire.PermRead | wire.PermAdmin, ID: wire.ID{Scheme: "digest", ID: "u:x"}}, "'digest,'u:x\n: ra"},
		{wire.ACL{Perms: 0, ID: wire.ID{Scheme: "x509", ID: "CN=a,O=b}%"}}, "'x509,'CN=a%2CO=b%7D%25\n: "},
	} {
		if got := aclLine(c.acl); got != c.want {
			t.Errorf("aclLine(%v) = %q, want %q", c.acl, got, c.want)
		}
	}
}

// TestWrap checks the words of zkCli's CliWrapperException and
// KeeperException.getMessage for each kind of error.
func TestWrap(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&zkclient.Error{Code: wire.CodeNoNode, Path: "/a"}, "Node does not exist: /a"},
		{&zkclient.Error{Code: wire.CodeNoNode}, "Node does not exist: null"},
		{&zkclient.Error{Code: wire.CodeNodeExists, Path: "/a"}, "Node already exists: /a"},
		{&zkclient.Error{Code: wire.CodeNotEmpty, Path: "/a"}, "Node not empty: /a"},
		{&zkclient.Error{Code: wire.CodeBadVersion, Path: "/a"}, "version No is not valid : /a"},
		{&zkclient.Error{Code: wire.CodeNoAuth, Path: "/a"}, "Insufficient permission : /a"},
		{&zkclient.Error{Code: wire.CodeInvalidACL}, "Acl is not valid : null"},
		{&zkclient.Error{Code: wire.CodeNoChildrenForEphemerals, Path: "/e/c"}, "Ephemerals cannot have children: /e/c"},
		{&zkclient.Error{Code: wire.CodeBadArguments, Path: "/a"}, "Arguments are not valid : /a"},
		{&zkclient.Error{Code: wire.CodeConnectionLoss, Path: "/a"}, "KeeperErrorCode = ConnectionLoss for /a"},
		{&zkclient.Error{Code: wire.CodeSessionExpired, Path: "/a"}, "KeeperErrorCode = Session expired for /a"},
		{&zkclient.Error{Code: wire.CodeUnimplemented}, "KeeperErrorCode = Unimplemented"},
		{&zkclient.Error{Code: -999, Path: "/a"}, "KeeperErrorCode = Unknown error UNKNOWN(-999) for /a"},
		{&zkclient.PathError{Reason: "Path must start with / character"}, "Path must start with / character"},
	} {
		if got := wrap(c.err).Error(); got != c.want {
			t.Errorf("wrap(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

func TestClientConfig(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", " "},
		{"server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\nserver.2=h2:2888:3888;2182\nversion=100000000", "100000000 0.0.0.0:2181,0.0.0.0:2182"},
	} {
		if got := clientConfig(c.in); got != c.want {
			t.Errorf("clientConfig(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestJavaString(t *testing.T) {
	if got := javaString([]byte("a\xffb\xc3")); got != "a\uFFFDb\uFFFD" {
		t.Errorf("javaString = %q", got)
	}
}
