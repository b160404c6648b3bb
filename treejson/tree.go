package treejson

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

// Tree is a subtree's content: every node under Root (Root itself
// included unless it is "/"), parents before children.
type Tree struct {
	// Root is the path the nodes were read under; "" or "/" for the
	// whole tree. Load can put the nodes under another path.
	Root  string `json:"root,omitempty"`
	Nodes []Node `json:"nodes"`
}

// Node is one node of a Tree.
type Node struct {
	Path string
	Data []byte
	// ACL holds entries as zkCli writes them, scheme:id:perms
	// ("world:anyone:cdrwa", "digest:bob:HASH=:r"); empty means
	// world:anyone:cdrwa.
	ACL       []string
	Container bool
	TTL       time.Duration
	// Ephemeral marks a node a session owned; Load creates it as an
	// ephemeral of the loading session.
	Ephemeral bool
	// Stat is the node's Stat as the server served it, when the dump was
	// asked for it (for comparing; Load cannot set it).
	Stat *wire.Stat
}

// CreateFlags is the create mode that makes a node of n's kind.
func (n *Node) CreateFlags() int32 {
	switch {
	case n.Container:
		return wire.ModeContainer
	case n.TTL > 0:
		return wire.ModePersistentWithTTL
	case n.Ephemeral:
		return wire.ModeEphemeral
	}
	return wire.ModePersistent
}

// nodeJSON is Node on disk: data as text when it is UTF-8, in base64
// otherwise.
type nodeJSON struct {
	Path       string   `json:"path"`
	Data       *string  `json:"data,omitempty"`
	DataBase64 string   `json:"data_base64,omitempty"`
	ACL        []string `json:"acl,omitempty"`
	Container  bool     `json:"container,omitempty"`
	TTLMillis  int64    `json:"ttl_ms,omitempty"`
	Ephemeral  bool     `json:"ephemeral,omitempty"`
	Stat       *stat    `json:"stat,omitempty"`
}

// stat is wire.Stat with zkCli's names.
type stat struct {
	Czxid          int64 `json:"cZxid"`
	Ctime          int64 `json:"ctime"`
	Mzxid          int64 `json:"mZxid"`
	Mtime          int64 `json:"mtime"`
	Pzxid          int64 `json:"pZxid"`
	Cversion       int32 `json:"cversion"`
	Version        int32 `json:"dataVersion"`
	Aversion       int32 `json:"aclVersion"`
	EphemeralOwner int64 `json:"ephemeralOwner"`
	DataLength     int32 `json:"dataLength"`
	NumChildren    int32 `json:"numChildren"`
}

// MarshalJSON writes the node with its data as text when it is UTF-8.
func (n Node) MarshalJSON() ([]byte, error) {
	j := nodeJSON{Path: n.Path, ACL: n.ACL, Container: n.Container, TTLMillis: n.TTL.Milliseconds(), Ephemeral: n.Ephemeral}
	switch {
	case n.Data == nil:
	case utf8.Valid(n.Data):
		text := string(n.Data)
		j.Data = &text
	default:
		j.DataBase64 = base64.StdEncoding.EncodeToString(n.Data)
	}
	if s := n.Stat; s != nil {
		j.Stat = &stat{s.Czxid, s.Ctime, s.Mzxid, s.Mtime, s.Pzxid, s.Cversion, s.Version, s.Aversion, s.EphemeralOwner, s.DataLength, s.NumChildren}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (n *Node) UnmarshalJSON(b []byte) error {
	var j nodeJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*n = Node{Path: j.Path, ACL: j.ACL, Container: j.Container, TTL: time.Duration(j.TTLMillis) * time.Millisecond, Ephemeral: j.Ephemeral}
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
	if s := j.Stat; s != nil {
		n.Stat = &wire.Stat{Czxid: s.Czxid, Mzxid: s.Mzxid, Ctime: s.Ctime, Mtime: s.Mtime, Version: s.Version, Cversion: s.Cversion,
			Aversion: s.Aversion, EphemeralOwner: s.EphemeralOwner, DataLength: s.DataLength, NumChildren: s.NumChildren, Pzxid: s.Pzxid}
	}
	return nil
}

// ReadFile reads a Tree from a JSON file.
func ReadFile(path string) (Tree, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Tree{}, err
	}
	var t Tree
	if err := json.Unmarshal(b, &t); err != nil {
		return Tree{}, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// WriteFile writes the tree to path as indented JSON.
func (t Tree) WriteFile(path string) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// OpenACL reports ZooKeeper's OPEN_ACL_UNSAFE, which a Tree leaves unsaid.
func OpenACL(acl []wire.ACL) bool {
	return len(acl) == 1 && acl[0] == wire.ACL{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}
}

// The permission letters zkCli uses, in its order.
var permLetters = []struct {
	bit    int32
	letter byte
}{{wire.PermCreate, 'c'}, {wire.PermDelete, 'd'}, {wire.PermRead, 'r'}, {wire.PermWrite, 'w'}, {wire.PermAdmin, 'a'}}

// FormatACL writes an ACL entry as scheme:id:perms.
func FormatACL(a wire.ACL) string {
	var perms []byte
	for _, p := range permLetters {
		if a.Perms&p.bit != 0 {
			perms = append(perms, p.letter)
		}
	}
	return a.ID.Scheme + ":" + a.ID.ID + ":" + string(perms)
}

// FormatACLs writes an ACL as a Node keeps it: nothing for
// OPEN_ACL_UNSAFE.
func FormatACLs(acl []wire.ACL) []string {
	if OpenACL(acl) {
		return nil
	}
	out := make([]string, 0, len(acl))
	for _, a := range acl {
		out = append(out, FormatACL(a))
	}
	return out
}

// ParseACLs reads scheme:id:perms entries; none is OPEN_ACL_UNSAFE.
func ParseACLs(entries []string) ([]wire.ACL, error) {
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
