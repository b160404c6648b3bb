package tree

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"maps"
	"strings"
	"testing"

	"github.com/hutchzk/hutch/wire"
)

var (
	open     = []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
	superID  = wire.ID{Scheme: "super", ID: ""}
	aliceID  = wire.ID{Scheme: "digest", ID: DigestID("alice:pw")}
	bobID    = wire.ID{Scheme: "digest", ID: DigestID("bob:pw")}
	localIP  = wire.ID{Scheme: "ip", ID: "10.1.2.3"}
	x509ID   = wire.ID{Scheme: "x509", ID: "CN=client,OU=hutch,O=test"}
	remoteIP = wire.ID{Scheme: "ip", ID: "192.168.0.9"}
)

// harness applies txns with increasing zxids (time = zxid*1000) on behalf of
// a current session and auth.
type harness struct {
	tb      testing.TB
	tr      *Tree
	zxid    int64
	session int64
	auth    []wire.ID
}

func newHarness(tb testing.TB) *harness {
	tb.Helper()
	return &harness{tb: tb, tr: New()}
}

func (h *harness) apply(op wire.OpCode, req any) Result {
	h.tb.Helper()
	h.zxid++
	return h.tr.Apply(&Txn{Zxid: h.zxid, Time: h.zxid * 1000, Session: h.session, Auth: h.auth, Op: op, Req: req})
}

// mustOK applies and fails the test on error.
func (h *harness) mustOK(op wire.OpCode, req any) Result {
	h.tb.Helper()
	r := h.apply(op, req)
	if r.Err != nil {
		h.tb.Fatalf("op %d %+v: unexpected error %v", op, req, r.Err)
	}
	if op == wire.OpMulti {
		if err := r.MultiErr(); err != nil {
			h.tb.Fatalf("multi: unexpected error %v", err)
		}
	}
	return r
}

func (h *harness) create(path string, flags int32) string {
	h.tb.Helper()
	return h.createACL(path, flags, open)
}

func (h *harness) createACL(path string, flags int32, acl []wire.ACL) string {
	h.tb.Helper()
	op := wire.OpCreate
	if flags == wire.ModeContainer {
		op = wire.OpCreateContainer
	}
	r := h.mustOK(op, &wire.CreateRequest{Path: path, Data: []byte("d"), ACL: acl, Flags: flags})
	return r.Resp.(*wire.Create2Response).Path
}

func (h *harness) session_(id int64) {
	h.tb.Helper()
	h.mustOK(wire.OpCreateSession, &CreateSession{ID: id, Timeout: 30000, Passwd: []byte("pw")})
}

func (h *harness) stat(path string) wire.Stat {
	h.tb.Helper()
	s, ok := h.tr.Stat(path)
	if !ok {
		h.tb.Fatalf("stat %q: no node", path)
	}
	return s
}

func snapshotBytes(tb testing.TB, tr *Tree) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := tr.WriteSnapshot(&buf); err != nil {
		tb.Fatalf("WriteSnapshot: %v", err)
	}
	return buf.Bytes()
}

// checkInvariants verifies structural consistency and the incremental digest.
func checkInvariants(tb testing.TB, tr *Tree) {
	tb.Helper()
	var sum uint64
	var zkSum int64
	count := 0
	for p, n := range tr.nodes {
		count++
		if z := zkDigestFromScratch(p, n.data, n.st.stored()); n.zdig != z {
			tb.Fatalf("%s: ZooKeeper digest term %x, recomputed %x", p, n.zdig, z)
		}
		zkSum += int64(n.zdig)
		if n.chash != contentHash(p, n.data, n.acl) {
			tb.Fatalf("%s: stale content hash", p)
		}
		if n.dig != nodeDigest(n.chash, &n.st) {
			tb.Fatalf("%s: stale digest term", p)
		}
		sum += n.dig
		st := n.stat()
		if int(st.NumChildren) != len(n.children) {
			tb.Fatalf("%s: numChildren %d != %d", p, st.NumChildren, len(n.children))
		}
		for name := range n.children {
			cp := p + "/" + name
			if p == "/" {
				cp = "/" + name
			}
			if tr.nodes[cp] == nil {
				tb.Fatalf("%s: child %q missing from node table", p, name)
			}
		}
		if p != "/" {
			parent, name, _ := splitParent(p)
			pn := tr.lookup(parent)
			if pn == nil {
				tb.Fatalf("%s: orphan", p)
			}
			if _, ok := pn.children[name]; !ok {
				tb.Fatalf("%s: not listed in parent", p)
			}
			if kindOf(pn.st.owner) == kindEphemeral {
				tb.Fatalf("%s: child of an ephemeral", p)
			}
		}
		switch kindOf(n.st.owner) {
		case kindEphemeral:
			if _, ok := tr.ephemerals[n.st.owner][p]; !ok {
				tb.Fatalf("%s: ephemeral not indexed", p)
			}
		case kindContainer:
			if _, ok := tr.containers[p]; !ok {
				tb.Fatalf("%s: container not indexed", p)
			}
		case kindTTL:
			if _, ok := tr.ttls[p]; !ok {
				tb.Fatalf("%s: ttl not indexed", p)
			}
		}
	}
	if sum != tr.digest {
		tb.Fatalf("digest %x != recomputed %x", tr.digest, sum)
	}
	if zkSum != tr.zkDigest {
		tb.Fatalf("ZooKeeper digest %d != recomputed %d", tr.zkDigest, zkSum)
	}
	for s, paths := range tr.ephemerals {
		if len(paths) == 0 {
			tb.Fatalf("session %x: empty ephemeral set kept", s)
		}
		for p := range paths {
			if n := tr.nodes[p]; n == nil || n.st.owner != s {
				tb.Fatalf("ephemeral index %x -> %s stale", s, p)
			}
		}
	}
	for p := range tr.containers {
		if n := tr.nodes[p]; n == nil || kindOf(n.st.owner) != kindContainer {
			tb.Fatalf("container index %s stale", p)
		}
	}
	for p := range tr.ttls {
		if n := tr.nodes[p]; n == nil || kindOf(n.st.owner) != kindTTL {
			tb.Fatalf("ttl index %s stale", p)
		}
	}
	if tr.undo != nil {
		tb.Fatalf("undo log left active")
	}
	quotas := map[string]int{}
	for p := range tr.nodes {
		parent, name, _ := splitParent(p)
		if key, ok := quotaKey(parent, name); ok {
			quotas[key]++
		}
	}
	if !maps.Equal(quotas, tr.quotas) {
		tb.Fatalf("quota index %v, the tree's limits nodes say %v", tr.quotas, quotas)
	}
	_ = count
}

// withoutACL drops the ACL from events, for tests about which events fire.
func withoutACL(evs []Event) []Event {
	if evs == nil {
		return nil
	}
	out := make([]Event, len(evs))
	for i, e := range evs {
		out[i] = Event{Type: e.Type, Path: e.Path}
	}
	return out
}

// zkDigestFromScratch is DigestCalculator.calculateDigest written out
// plainly, one CRC over path, data and Stat, to check the incremental one.
func zkDigestFromScratch(path string, data []byte, st StoredStat) uint32 {
	if strings.HasPrefix(path, "/zookeeper/") {
		return 0
	}
	if path == "/" {
		path = ""
	}
	var b bytes.Buffer
	b.WriteString(path)
	b.Write(data)
	for _, v := range []any{st.Czxid, st.Mzxid, st.Pzxid, st.Ctime, st.Mtime, st.Version, st.Cversion, st.Aversion, st.EphemeralOwner} {
		_ = binary.Write(&b, binary.BigEndian, v)
	}
	return crc32.ChecksumIEEE(b.Bytes())
}
