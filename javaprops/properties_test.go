package javaprops

import (
	"reflect"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []Property
	}{
		{"equals", "a=b\n", []Property{{"a", "b", 1}}},
		{"colon and spaces", "  a : b  \n", []Property{{"a", "b", 1}}},
		{"white space separator", "a b c\n", []Property{{"a", "b c", 1}}},
		{"space then equals", "a   =   b\n", []Property{{"a", "b", 1}}},
		{"empty value", "a=\n", []Property{{"a", "", 1}}},
		{"comments and blanks", "# x=y\n\n  ! z=w\na=1\n", []Property{{"a", "1", 4}}},
		{"continuation", "a=one \\\n    two\nb=3\n", []Property{{"a", "one two", 1}, {"b", "3", 3}}},
		{"escaped backslash is no continuation", "a=x\\\\\nb=y\n", []Property{{"a", `x\`, 1}, {"b", "y", 2}}},
		{"escapes", `k\=ey=\u0041\tb\:c` + "\n", []Property{{"k=ey", "A\tb:c", 1}}},
		{"CRLF and CR", "a=1\r\nb=2\rc=3", []Property{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}}},
		{"duplicates kept in order", "a=1\na=2\n", []Property{{"a", "1", 1}, {"a", "2", 2}}},
		{"continuation at end of input", "a=1\\", []Property{{"a", "1", 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, err := Read(strings.NewReader("\n\na=\\u00zz\n")); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("bad \\u escape: %v, want an error on line 3", err)
	}
}
