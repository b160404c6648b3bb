package wire

import "testing"

func TestJavaStringHash(t *testing.T) {
	// Values of String.hashCode() in Java.
	for _, tt := range []struct {
		s    string
		want int32
	}{
		{"", 0}, {"hello", 99162322}, {"digest", -1331913276}, {"ip", 3367}, {"é€", 15587}, {"😀", 1772899}, // the last is a surrogate pair
	} {
		if got := JavaStringHash(tt.s); got != tt.want {
			t.Errorf("JavaStringHash(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}
