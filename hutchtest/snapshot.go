package hutchtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hutchzk/hutch/wire"
)

// Snapshot is a tree's content, for fixtures: every node a test created
// that outlives its session (persistent, container and TTL nodes) with
// its data and ACL, parents before children. Ephemerals are left out,
// as are the root and ZooKeeper's own nodes; a node's Stat (zxids,
// times, versions) is not kept. It encodes as JSON a person can read and
// write (Marshal, WriteFile, ReadSnapshot).
type Snapshot struct {
	Nodes []SnapshotNode `json:"nodes"`
}

// SnapshotNode is one node of a Snapshot.
type SnapshotNode struct {
	Path string
	Data []byte
	// ACL holds entries as zkCli writes them, scheme:id:perms
	// ("world:anyone:cdrwa", "digest:bob:HASH=:r"); empty means
	// world:anyone:cdrwa.
	ACL       []string
	Container bool
	TTL       time.Duration
}

// snapshotNodeJSON is SnapshotNode on disk: data as text when it is
// UTF-8, in base64 otherwise.
type snapshotNodeJSON struct {
	Path       string   `json:"path"`
	Data       *string  `json:"data,omitempty"`
	DataBase64 string   `json:"data_base64,omitempty"`
	ACL        []string `json:"acl,omitempty"`
	Container  bool     `json:"container,omitempty"`
	TTLMillis  int64    `json:"ttl_ms,omitempty"`
}

// MarshalJSON writes the node with its data as text when it is UTF-8.
func (n SnapshotNode) MarshalJSON() ([]byte, error) {
	j := snapshotNodeJSON{Path: n.Path, ACL: n.ACL, Container: n.Container, TTLMillis: n.TTL.Milliseconds()}
	switch {
	case n.Data == nil:
	case utf8.Valid(n.Data):
		text := string(n.Data)
		j.Data = &text
	default:
		j.DataBase64 = base64.StdEncoding.EncodeToString(n.Data)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (n *SnapshotNode) UnmarshalJSON(b []byte) error {
	var j snapshotNodeJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*n = SnapshotNode{Path: j.Path, ACL: j.ACL, Container: j.Container, TTL: time.Duration(j.TTLMillis) * time.Millisecond}
	switch {
	case j.Data != nil:
		n.Data = []byte(*j.Data)
	case j.DataBase64 != "":
		data, err := base64.StdEncoding.DecodeString(j.DataBase64)
		if err != nil {
			return fmt.Errorf("%s: data_base64: %w", j.Path, err)
		}
		n.Data = data
	}
	return nil
}

// ReadSnapshot reads a Snapshot from a JSON file (a fixture).
func ReadSnapshot(path string) (Snapshot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Snapshot{}, err
	}
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return Snapshot{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// WriteFile writes the snapshot to path as indented JSON.
func (s Snapshot) WriteFile(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Snapshot captures the tree's content (see type Snapshot).
func (s *Server) Snapshot() Snapshot {
	s.tb.Helper()
	var snap Snapshot
	for _, n := range s.srv().ReadTree() {
		if builtIn(n.Path) || n.Stat.EphemeralOwner != 0 {
			continue
		}
		sn := SnapshotNode{Path: n.Path, Data: n.Data, Container: n.Container, TTL: time.Duration(n.TTL) * time.Millisecond}
		if !openACL(n.ACL) {
			for _, a := range n.ACL {
				sn.ACL = append(sn.ACL, formatACL(a))
			}
		}
		snap.Nodes = append(snap.Nodes, sn)
	}
	return snap
}

// Load creates every node of snap, in order, as the super user (its ACLs
// bind clients, not the loading), each through the log like any client's
// write, so a loaded tree is replicated and kept like any other. It fails
// the test if a node cannot be created (it exists already, its parent is
// missing, an ACL does not parse).
func (s *Server) Load(snap Snapshot) {
	s.tb.Helper()
	srv := s.srv()
	for _, n := range snap.Nodes {
		acl, err := parseACLs(n.ACL)
		if err != nil {
			s.tb.Fatalf("hutchtest: load %s: %v", n.Path, err)
		}
		flags := wire.ModePersistent
		switch {
		case n.Container:
			flags = wire.ModeContainer
		case n.TTL > 0:
			flags = wire.ModePersistentWithTTL
		}
		if err := srv.CreateNode(n.Path, n.Data, acl, flags, n.TTL); err != nil {
			s.tb.Fatalf("hutchtest: load: %v", err)
		}
	}
}

// openACL reports ZooKeeper's OPEN_ACL_UNSAFE, which a Snapshot leaves
// unsaid.
func openACL(acl []wire.ACL) bool {
	return len(acl) == 1 && acl[0] == wire.ACL{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}
}

// The permission letters zkCli uses, in its order.
var permLetters = []struct {
	bit    int32
	letter byte
}{{wire.PermCreate, 'c'}, {wire.PermDelete, 'd'}, {wire.PermRead, 'r'}, {wire.PermWrite, 'w'}, {wire.PermAdmin, 'a'}}

func formatACL(a wire.ACL) string {
	var perms []byte
	for _, p := range permLetters {
		if a.Perms&p.bit != 0 {
			perms = append(perms, p.letter)
		}
	}
	return a.ID.Scheme + ":" + a.ID.ID + ":" + string(perms)
}

// parseACLs reads scheme:id:perms entries; none is OPEN_ACL_UNSAFE.
func parseACLs(entries []string) ([]wire.ACL, error) {
	if len(entries) == 0 {
		return []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}, nil
	}
	out := make([]wire.ACL, 0, len(entries))
	for _, e := range entries {
		scheme, rest, ok1 := strings.Cut(e, ":")
		i := strings.LastIndexByte(rest, ':')
		if !ok1 || i < 0 {
			return nil, fmt.Errorf("ACL %q is not scheme:id:perms", e)
		}
		id, letters := rest[:i], rest[i+1:]
		var perms int32
		for _, c := range []byte(letters) {
			found := false
			for _, p := range permLetters {
				if p.letter == c {
					perms |= p.bit
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("ACL %q: permission %s is not one of cdrwa", e, strconv.QuoteRune(rune(c)))
			}
		}
		out = append(out, wire.ACL{Perms: perms, ID: wire.ID{Scheme: scheme, ID: id}})
	}
	return out, nil
}
