package zkclient

import (
	"strconv"
	"unicode/utf16"
)

// ValidatePath checks path as the Java client does before sending any
// request (PathUtils.validatePath) and returns a *PathError carrying that
// method's message, or nil. With sequential set the path is checked as if
// the server's suffix were appended, so "/a/" is a valid prefix.
//
// Java checks UTF-16 code units and reports their index, so the path is
// examined as UTF-16 here too: a rune above U+FFFF is a surrogate pair,
// which the forbidden range U+D800–U+F8FF refuses, and invalid UTF-8 is
// U+FFFD, which U+FFF0–U+FFFF refuses.
func ValidatePath(path string, sequential bool) error {
	if sequential {
		path += "1"
	}
	if path == "" {
		return &PathError{"Path length must be > 0"}
	}
	if path[0] != '/' {
		return &PathError{"Path must start with / character"}
	}
	if len(path) == 1 {
		return nil
	}
	if path[len(path)-1] == '/' {
		return &PathError{"Path must not end with / character"}
	}
	chars := utf16.Encode([]rune(path))
	reason := ""
	last := uint16('/')
	for i := 1; i < len(chars); last, i = chars[i], i+1 {
		c := chars[i]
		// wholeComponent: the dots ending at i make up a whole component.
		wholeComponent := func(dots int) bool {
			return chars[i-dots] == '/' && (i+1 == len(chars) || chars[i+1] == '/')
		}
		switch {
		case c == 0:
			reason = "null character not allowed @" + strconv.Itoa(i)
		case c == '/' && last == '/':
			reason = "empty node name specified @" + strconv.Itoa(i)
		case c == '.' && last == '.':
			if wholeComponent(2) {
				reason = "relative paths not allowed @" + strconv.Itoa(i)
			}
		case c == '.':
			if wholeComponent(1) {
				reason = "relative paths not allowed @" + strconv.Itoa(i)
			}
		case c > 0 && c <= 0x1f, c >= 0x7f && c <= 0x9f, c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0:
			reason = "invalid character @" + strconv.Itoa(i)
		}
		if reason != "" {
			return &PathError{"Invalid path string \"" + path + "\" caused by " + reason}
		}
	}
	return nil
}
