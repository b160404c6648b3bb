package monitor

import (
	"strconv"
	"testing"
)

// TestMemoBounded: a snapshot's memo keeps at most maxMemoEntries values;
// past that, each asker gets its value made, the same as it would have
// been kept, and what was kept is still shared.
func TestMemoBounded(t *testing.T) {
	c := &memo{m: map[string]*memoEntry{}}
	made := 0
	for i := range 2 * maxMemoEntries {
		key := "point " + strconv.Itoa(i)
		if got := derive(c, key, func() int { made++; return i }); got != i {
			t.Fatalf("%s: %d", key, got)
		}
	}
	if len(c.m) != maxMemoEntries || made != 2*maxMemoEntries {
		t.Fatalf("%d values kept, %d made, want %d kept and %d made", len(c.m), made, maxMemoEntries, 2*maxMemoEntries)
	}
	derive(c, "point 0", func() int { made++; return -1 })
	derive(c, "point "+strconv.Itoa(maxMemoEntries), func() int { made++; return -1 })
	if made != 2*maxMemoEntries+1 {
		t.Errorf("a kept value was made again, or one past the bound was not (%d made)", made)
	}
}
