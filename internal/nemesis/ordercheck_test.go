package nemesis

import (
	"fmt"
	"testing"

	"github.com/hutchzk/hutch/wire"
)

// w is a write of directory 0; child names the node it would create,
// with a given sequence number.
func w(inc, k int, st writeState) *pwrite { return &pwrite{inc: inc, k: k, state: st} }

func child(inc, k, seq int) string { return fmt.Sprintf("w-%d-%d-%010d", inc, k, seq) }

func TestCheckOrder(t *testing.T) {
	ack, unk, ref := writeAcked, writeUnknown, writeRefused
	refusedMoved := &pwrite{inc: 1, k: 1, state: ref, code: wire.CodeSessionMoved}
	tests := []struct {
		name           string
		writes         []*pwrite
		children       []string
		lost, violated int
	}{
		{"all acknowledged, in order",
			[]*pwrite{w(1, 0, ack), w(1, 1, ack), w(2, 0, ack)},
			[]string{child(1, 0, 0), child(1, 1, 1), child(2, 0, 2)}, 0, 0},
		{"lost tail of a connection absent, next incarnation goes on",
			[]*pwrite{w(1, 0, ack), w(1, 1, unk), w(1, 2, unk), w(2, 0, ack)},
			[]string{child(1, 0, 0), child(2, 0, 1)}, 0, 0},
		{"lost tail committed before the re-attach",
			[]*pwrite{w(1, 0, ack), w(1, 1, unk), w(1, 2, unk), w(2, 0, ack)},
			[]string{child(1, 0, 0), child(1, 1, 1), child(1, 2, 2), child(2, 0, 3)}, 0, 0},
		{"lost tail partly committed, as a prefix",
			[]*pwrite{w(1, 0, unk), w(1, 1, unk), w(1, 2, unk)},
			[]string{child(1, 0, 0)}, 0, 0},
		{"refused write missing in the middle",
			[]*pwrite{w(1, 0, ack), refusedMoved, w(1, 2, ack)},
			[]string{child(1, 0, 0), child(1, 2, 1)}, 0, 0},
		{"sequence numbers need not be contiguous",
			[]*pwrite{w(1, 0, ack), w(1, 1, ack)},
			[]string{child(1, 0, 5), child(1, 1, 9)}, 0, 0},

		{"acknowledged write missing",
			[]*pwrite{w(1, 0, ack), w(1, 1, ack)},
			[]string{child(1, 0, 0)}, 1, 0},
		{"stale write of an old connection commits after the new one's",
			[]*pwrite{w(1, 0, ack), w(1, 1, unk), w(2, 0, ack)},
			[]string{child(1, 0, 0), child(2, 0, 1), child(1, 1, 2)}, 0, 1},
		{"a connection's writes commit out of order",
			[]*pwrite{w(1, 0, ack), w(1, 1, ack)},
			[]string{child(1, 1, 0), child(1, 0, 1)}, 0, 1},
		{"a lost write skipped, a later one of the connection committed",
			[]*pwrite{w(1, 0, ack), w(1, 1, unk), w(1, 2, unk)},
			[]string{child(1, 0, 0), child(1, 2, 1)}, 0, 1},
		{"refused write exists",
			[]*pwrite{w(1, 0, ack), refusedMoved},
			[]string{child(1, 0, 0), child(1, 1, 1)}, 0, 1},
		{"a node nobody sent",
			[]*pwrite{w(1, 0, ack)},
			[]string{child(1, 0, 0), child(7, 7, 1)}, 0, 1},
		{"written twice",
			[]*pwrite{w(1, 0, unk)},
			[]string{child(1, 0, 0), child(1, 0, 1)}, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := checkOrder(1, tc.writes, map[int][]string{0: tc.children})
			if o.lost != tc.lost || o.violations != tc.violated {
				t.Fatalf("lost %d, violations %d; want %d and %d; details: %q", o.lost, o.violations, tc.lost, tc.violated, o.details)
			}
		})
	}
}
