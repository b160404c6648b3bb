package x500

import "testing"

// FuzzName: any input either fails cleanly or gives a name. Java's own
// output does not always parse back (a value ending in an escaped comma
// after other backslashes, an escaped carriage return), so neither is
// required here; the Java comparison checks the strings themselves.
func FuzzName(f *testing.F) {
	for _, tt := range nameCases {
		f.Add(encodeName(f, tt.rdns...))
	}
	f.Add([]byte{0x30, 0x03, 0x31, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, der []byte) {
		s, err := Name(der)
		if err != nil && s != "" {
			t.Fatalf("Name(%x) = %q with error %v", der, s, err)
		}
		Valid(s)
	})
}

// FuzzValid: the parser never panics or loops on any string.
func FuzzValid(f *testing.F) {
	for _, tt := range validCases {
		f.Add(tt.s)
	}
	f.Fuzz(func(t *testing.T, s string) { Valid(s) })
}
