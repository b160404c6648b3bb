package tree

import (
	"strings"
	"unicode/utf8"
)

// ValidatePath applies ZooKeeper's PathUtils.validatePath rules and returns
// ErrBadArguments for a path ZooKeeper would refuse. With sequential set the
// path is checked as if a suffix were appended, so "/a/" is a valid prefix.
//
// ZooKeeper checks UTF-16 code units after decoding the wire bytes as UTF-8.
// Two consequences are mirrored here: invalid UTF-8 decodes to U+FFFD, which
// lies in the forbidden U+FFF0–U+FFFF range, and every rune above U+FFFF is a
// surrogate pair, which lies in the forbidden U+D800–U+F8FF range. So any path
// with invalid UTF-8 or a supplementary-plane rune is invalid.
func ValidatePath(path string, sequential bool) error {
	if sequential {
		path += "1"
	}
	if !validPath(path) {
		return ErrBadArguments
	}
	return nil
}

func validPath(path string) bool {
	if len(path) == 0 || path[0] != '/' {
		return false
	}
	if len(path) == 1 {
		return true
	}
	if path[len(path)-1] == '/' {
		return false
	}
	lastc := rune('/')
	for i := 1; i < len(path); {
		c, size := rune(path[i]), 1
		if c >= utf8.RuneSelf {
			// An invalid byte decodes to U+FFFD here as in Java, and is
			// refused by the range check below.
			c, size = utf8.DecodeRuneInString(path[i:])
		}
		next := i + size
		switch {
		case c == 0:
			return false
		case c == '/' && lastc == '/':
			return false // empty component
		case c == '.' && lastc == '.':
			// ".." as a whole component; path[i-2] is the byte before the
			// first dot, which is '/' only if that dot starts a component.
			if path[i-2] == '/' && (next == len(path) || path[next] == '/') {
				return false
			}
		case c == '.':
			if path[i-1] == '/' && (next == len(path) || path[next] == '/') {
				return false
			}
		case c > 0 && c <= 0x1f,
			c >= 0x7f && c <= 0x9f,
			c >= 0xd800 && c <= 0xf8ff,
			c >= 0xfff0: // includes every rune > U+FFFF (surrogate pairs in Java)
			return false
		}
		lastc = c
		i = next
	}
	return true
}

// splitParent returns the parent path the way ZooKeeper does
// (path.substring(0, lastIndexOf('/'))), so the parent of "/a" is "", which the
// tree treats as an alias of the root. ok is false when the path has no '/' or
// contains NUL, which ZooKeeper rejects with BadArguments before any lookup.
func splitParent(path string) (parent, child string, ok bool) {
	i := strings.LastIndexByte(path, '/')
	if i < 0 || strings.IndexByte(path, 0) >= 0 {
		return "", "", false
	}
	return path[:i], path[i+1:], true
}

// eventPath maps the root alias "" back to "/" for watch events, as DataTree
// does when it fires NodeChildrenChanged on a top-level node's parent.
func eventPath(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// isSpecialPath reports the nodes ZooKeeper refuses to delete.
func isSpecialPath(p string) bool {
	switch p {
	case "/", procPath, quotaPath, configPath:
		return true
	}
	return false
}

// javaTrim mimics String.trim: it strips every char <= ' ' from both ends.
func javaTrim(s string) string {
	i, j := 0, len(s)
	for i < j && s[i] <= ' ' {
		i++
	}
	for j > i && s[j-1] <= ' ' {
		j--
	}
	return s[i:j]
}
