package wire

import "unicode/utf16"

// JavaStringHash is Java's String.hashCode over UTF-16 code units. Where
// ZooKeeper answers with the contents of a Java hash table (the
// identities whoAmI lists, the paths wchc lists), their order is decided
// by it.
func JavaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}
