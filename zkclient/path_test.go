package zkclient

import "testing"

// TestValidatePath checks the messages of Java's PathUtils.validatePath,
// whose character positions count UTF-16 units.
func TestValidatePath(t *testing.T) {
	for _, c := range []struct {
		path       string
		sequential bool
		want       string // "" for valid
	}{
		{"/", false, ""},
		{"/a/b", false, ""},
		{"/a.", false, ""},
		{"/..a", false, ""},
		{"/é", false, ""},
		{"/a/", true, ""},
		{"", false, "Path length must be > 0"},
		{"a", false, "Path must start with / character"},
		{"/a/", false, "Path must not end with / character"},
		{"/a//b", false, `Invalid path string "/a//b" caused by empty node name specified @3`},
		{"/a/./b", false, `Invalid path string "/a/./b" caused by relative paths not allowed @3`},
		{"/a/..", false, `Invalid path string "/a/.." caused by relative paths not allowed @4`},
		{"/a\x00b", false, `Invalid path string "/a` + "\x00" + `b" caused by null character not allowed @2`},
		{"/a\x01", false, `Invalid path string "/a` + "\x01" + `" caused by invalid character @2`},
		{"/é\u0085", false, `Invalid path string "/é` + "\u0085" + `" caused by invalid character @2`},
		{"/😀", false, `Invalid path string "/😀" caused by invalid character @1`},
		{"/a/😀/\x01", false, `Invalid path string "/a/😀/` + "\x01" + `" caused by invalid character @3`},
		{"/a//", true, `Invalid path string "/a//1" caused by empty node name specified @3`},
	} {
		err := ValidatePath(c.path, c.sequential)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("ValidatePath(%q, %v) = %q, want %q", c.path, c.sequential, got, c.want)
		}
	}
}
