package tree

import (
	"reflect"
	"testing"

	"github.com/hutchzk/hutch/wire"
)

func TestValidatePath(t *testing.T) {
	cases := []struct {
		path string
		seq  bool
		ok   bool
	}{
		{"/", false, true},
		{"/a", false, true},
		{"/a/b/c", false, true},
		{"/a.b", false, true},
		{"/...", false, true},
		{"/a/..b", false, true},
		{"/.a", false, true},
		{"/a.", false, true},
		{"/ä/日本", false, true},
		{"/\u00a0", false, true},
		{"/\uffef", false, true},
		{"/ a ", false, true},
		{"", false, false},
		{"a", false, false},
		{"a/b", false, false},
		{"/a/", false, false},
		{"/a/", true, true}, // sequential: a suffix follows
		{"/", true, true},
		{"//", true, false},
		{"//a", false, false},
		{"/a//b", false, false},
		{"/.", false, false},
		{"/..", false, false},
		{"/a/.", false, false},
		{"/a/./b", false, false},
		{"/a/../b", false, false},
		{"/.", true, true}, // "/.1"
		{"/a\x00b", false, false},
		{"/a\x01", false, false},
		{"/a\x1f", false, false},
		{"/a\x7f", false, false},
		{"/a\u0080", false, false},
		{"/a\u009f", false, false},
		{"/a\u00a0", false, true},
		{"/a\ud7ff", false, true},
		{"/a\ue000", false, false}, // private use: inside D800–F8FF
		{"/a\uf8ff", false, false},
		{"/a\uf900", false, true},
		{"/a\ufff0", false, false},
		{"/a\ufffd", false, false},
		{"/a\uffff", false, false},
		{"/a\U0001F600", false, false},   // surrogate pair in Java
		{"/a\xff", false, false},         // invalid UTF-8 decodes to U+FFFD
		{"/a\xed\xa0\x80", false, false}, // encoded surrogate
		{"/\xe4\xb8", false, false},      // truncated rune
	}
	for _, c := range cases {
		err := ValidatePath(c.path, c.seq)
		if (err == nil) != c.ok || (err != nil && err != ErrBadArguments) {
			t.Errorf("ValidatePath(%q, %v) = %v, want ok=%v", c.path, c.seq, err, c.ok)
		}
	}
}

func TestReads(t *testing.T) {
	h := newHarness(t)
	h.create("/a", 0)
	for _, n := range []string{"z", "b", "m", "a"} {
		h.create("/a/"+n, 0)
	}
	h.create("/a/b/deep", 0)
	h.create("/ab", 0) // shares the prefix "/a" but is not below it

	kids, st, err := h.tr.GetChildren("/a", nil)
	if err != nil || !reflect.DeepEqual(kids, []string{"a", "b", "m", "z"}) || st.NumChildren != 4 {
		t.Fatalf("GetChildren = %v %+v %v", kids, st, err)
	}
	if kids, _, _ := h.tr.GetChildren("/a/z", nil); kids == nil || len(kids) != 0 {
		t.Fatalf("leaf children = %#v", kids)
	}
	if kids, _, _ := h.tr.GetChildren("", nil); !reflect.DeepEqual(kids, []string{"a", "ab", "zookeeper"}) {
		t.Fatalf("GetChildren(\"\") = %v (root alias)", kids)
	}
	for path, want := range map[string]int32{"/a": 5, "/a/b": 1, "/a/z": 0, "/": 10, "": 11, "/zookeeper": 2} {
		if n, err := h.tr.AllChildrenNumber(path, nil); err != nil || n != want {
			t.Errorf("AllChildrenNumber(%q) = %d, %v; want %d", path, n, err, want)
		}
	}
	for _, p := range []string{"/nope", "/a/", "a", "/a/../a"} {
		if _, _, err := h.tr.GetData(p, nil); err != ErrNoNode {
			t.Errorf("GetData(%q) = %v", p, err)
		}
		if _, err := h.tr.AllChildrenNumber(p, nil); err != ErrNoNode {
			t.Errorf("AllChildrenNumber(%q) = %v", p, err)
		}
		if _, ok := h.tr.Stat(p); ok {
			t.Errorf("Stat(%q) found", p)
		}
	}
	if _, err := h.tr.Exists("/a\x00"); err != ErrBadArguments {
		t.Errorf("Exists NUL = %v", err)
	}
	if _, err := h.tr.ExistsACL("/a\x00", nil); err != ErrBadArguments {
		t.Errorf("ExistsACL NUL = %v", err)
	}
	if _, err := h.tr.ExistsACL("/nope", nil); err != ErrNoNode {
		t.Errorf("ExistsACL missing = %v", err)
	}
	if s, err := h.tr.Exists("/a/b"); err != nil || s.NumChildren != 1 {
		t.Errorf("Exists = %+v %v", s, err)
	}
	if d, s, err := h.tr.GetData("/a/b", nil); err != nil || string(d) != "d" || s.DataLength != 1 {
		t.Errorf("GetData = %q %+v %v", d, s, err)
	}
	// Data returned earlier is not changed by a later setData.
	d, _, _ := h.tr.GetData("/a/b", nil)
	h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: "/a/b", Data: []byte("new"), Version: -1})
	if string(d) != "d" {
		t.Errorf("old data slice changed to %q", d)
	}
	// Apply copies request data.
	buf := []byte("abc")
	h.mustOK(wire.OpSetData, &wire.SetDataRequest{Path: "/a/b", Data: buf, Version: -1})
	buf[0] = 'X'
	if d, _, _ := h.tr.GetData("/a/b", nil); string(d) != "abc" {
		t.Errorf("tree aliases request data: %q", d)
	}
}
