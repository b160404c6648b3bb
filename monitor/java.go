package monitor

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hutchzk/hutch/wire"
)

// ZooKeeper's answers are Java's toString of its values and the iteration
// order of its hash tables; these reproduce them.

// javaHashOrder sorts keys into the iteration order of a java.util.HashMap
// (or HashSet) holding them: by bucket in a table sized for their number.
// Keys sharing a bucket come out in insertion order in Java; here, in
// string order.
func javaHashOrder(keys []string) []string {
	size := 16
	for len(keys) > size*3/4 {
		size *= 2
	}
	bucket := func(k string) int32 {
		h := wire.JavaStringHash(k)
		return (h ^ int32(uint32(h)>>16)) & int32(size-1)
	}
	out := slices.Clone(keys)
	slices.SortFunc(out, func(a, b string) int {
		if ba, bb := bucket(a), bucket(b); ba != bb {
			return int(ba - bb)
		}
		return strings.Compare(a, b)
	})
	return out
}

// javaDouble formats f as Java's Double.toString does for the values
// latencies take.
func javaDouble(f float64) string {
	if f != 0 && (f < 1e-3 || f >= 1e7) {
		m := strconv.FormatFloat(f, 'E', -1, 64)
		mant, exp, _ := strings.Cut(m, "E")
		if !strings.Contains(mant, ".") {
			mant += ".0"
		}
		e, _ := strconv.Atoi(exp)
		return mant + "E" + strconv.Itoa(e)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// javaDate formats t as Java's Date.toString does.
func javaDate(t time.Time) string { return t.Format("Mon Jan 02 15:04:05 MST 2006") }
