package tree

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hutchzk/hutch/wire"
)

// TestChildrenPage: paging through a node's children with every page
// size gives the sorted list, each name once, whatever order the set
// yields them in; a node the caller may not read is NoAuth.
func TestChildrenPage(t *testing.T) {
	h := newHarness(t)
	h.create("/p", 0)
	var want []string
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(300) {
		name := fmt.Sprintf("c%d", i)
		h.create("/p/"+name, 0)
		want = append(want, name)
	}
	slices.Sort(want)
	for _, limit := range []int{1, 2, 7, 100, 299, 300, 1000} {
		var got []string
		after := ""
		for {
			page, st, err := h.tr.ChildrenPage("/p", after, limit, nil)
			if err != nil || st.NumChildren != 300 {
				t.Fatalf("limit %d after %q: %v, %d children", limit, after, err, st.NumChildren)
			}
			if len(page) > limit || !slices.IsSorted(page) {
				t.Fatalf("limit %d after %q: page %v", limit, after, page)
			}
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			after = page[len(page)-1]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: paged %d names, want %d in order", limit, len(got), len(want))
		}
	}
	if page, _, err := h.tr.ChildrenPage("/p", "c5", 3, nil); err != nil || !slices.Equal(page, []string{"c50", "c51", "c52"}) {
		t.Fatalf("after c5: %v %v", page, err)
	}
	h.createACL("/secret", 0, []wire.ACL{{Perms: wire.PermAll, ID: aliceID}})
	if _, _, err := h.tr.ChildrenPage("/secret", "", 10, nil); !errors.Is(err, ErrNoAuth) {
		t.Fatalf("unreadable node: %v", err)
	}
	if _, _, err := h.tr.ChildrenPage("/none", "", 10, nil); !errors.Is(err, ErrNoNode) {
		t.Fatalf("missing node: %v", err)
	}
}

// bigNode is a tree whose /p has 100,000 children.
func bigNode(b *testing.B) *harness {
	h := newHarness(b)
	h.create("/p", 0)
	for i := range 100_000 {
		h.create(fmt.Sprintf("/p/n%07d", i), 0)
	}
	return h
}

// BenchmarkChildrenPage is one page of a node with 100,000 children.
func BenchmarkChildrenPage(b *testing.B) {
	h := bigNode(b)
	for b.Loop() {
		if _, _, err := h.tr.ChildrenPage("/p", "n0050000", 100, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetChildrenLarge is the whole sorted list of the same node,
// what a page cost before ChildrenPage.
func BenchmarkGetChildrenLarge(b *testing.B) {
	h := bigNode(b)
	for b.Loop() {
		if _, _, err := h.tr.GetChildren("/p", nil); err != nil {
			b.Fatal(err)
		}
	}
}
