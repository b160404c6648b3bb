package quota

import "testing"

func TestStatsTrackParseAndFormat(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		ok      bool
	}{
		{"", "count=-1,bytes=-1", true},
		{"count=0,bytes=0", "count=0,bytes=0", true},
		// What zkCli's setquota writes: the "=" after bytes is for 3.4 parsers.
		{"count=2,bytes=-1=;byteHardLimit=-1;countHardLimit=-1", "count=2,bytes=-1=;byteHardLimit=-1;countHardLimit=-1", true},
		{"countHardLimit=3;count=1", "count=1,bytes=-1=;countHardLimit=3", true},
		{"count=5", "count=5,bytes=-1", true},
		{"count=,bytes=4", "Index 1 out of bounds for length 1", false}, // "count=".split("=") is ["count"]: no value
		{"count==7,bytes=4", "count=-1,bytes=4", true},                  // "count","","7": the empty value is -1
		{"count=1=2,bytes=+4", "count=1,bytes=4", true},                 // extra fields ignored; Long.parseLong takes "+4"
		{"count=1,,;;bytes=2", "count=1,bytes=2", true},                 // runs of separators are one
		{"zz=1,count=2,bytes=3,aa=4", "count=2,bytes=3=;aa=4;zz=1", true},
		{"count=1,count=9", "count=9,bytes=-1", true},
		{",count=1", "Index 1 out of bounds for length 1", false}, // a leading empty pair has no value
		{"count", "Index 1 out of bounds for length 1", false},
		{"count=x", `For input string: "x"`, false},
		{"count=99999999999999999999", `For input string: "99999999999999999999"`, false},
		{"=", "Index 0 out of bounds for length 0", false},
	} {
		st, err := Parse([]byte(tc.in))
		if ok := err == nil; ok != tc.ok {
			t.Errorf("parse %q: %v, want ok=%v", tc.in, err, tc.ok)
			continue
		}
		if err != nil && err.Error() != tc.out {
			t.Errorf("parse %q: %q, want Java's message %q", tc.in, err, tc.out)
		}
		if err == nil {
			if got := st.String(); got != tc.out {
				t.Errorf("parse %q then format = %q, want %q", tc.in, got, tc.out)
			}
		}
	}
}

func TestExceededMessage(t *testing.T) {
	for _, tc := range []struct {
		q    Exceeded
		want string
	}{
		{Exceeded{Path: "/a", Current: 3, Limit: 2}, "Quota exceeded: /a [current count=3, softCountLimit=2]"},
		{Exceeded{Path: "/a/b", Bytes: true, Current: 12, Limit: 10, Hard: true}, "Quota exceeded: /a/b [current bytes=12, hardByteLimit=10]"},
	} {
		if got := tc.q.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.q, got, tc.want)
		}
	}
}

// FuzzParse: Parse never panics, and what String writes reads back to
// the same string.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "count=0,bytes=0", "count=2,bytes=-1=;byteHardLimit=-1;countHardLimit=-1",
		",count=1", "=", "a==1;;b=+2,", "count=99999999999999999999"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		out := s.String()
		again, err := Parse([]byte(out))
		if err != nil {
			t.Fatalf("%q formats as %q, which does not parse: %v", data, out, err)
		}
		if again.String() != out {
			t.Fatalf("%q formats as %q, then as %q", data, out, again.String())
		}
	})
}
