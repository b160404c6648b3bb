package testcluster

import (
	"cmp"
	"context"
	"slices"

	"github.com/hutchzk/hutch/trace"
)

// Marks are how many events each member has recorded so far, member 1
// first: WaitFor(ctx, marks, ...) looks only at what comes after.
func (c *Cluster) Marks() []int {
	out := make([]int, len(c.members))
	for i, m := range c.members {
		out[i] = m.rec.Len()
	}
	return out
}

// WaitFor returns the first event match keeps that any member records at
// or after its mark in from (nil: from the start), waiting for one if
// need be, and the member that recorded it. A transaction is applied by
// every member: the first to record it answers.
func (c *Cluster) WaitFor(ctx context.Context, from []int, match func(trace.Event) bool) (int, trace.Event, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type found struct {
		member int
		e      trace.Event
		err    error
	}
	results := make(chan found, len(c.members))
	for i, m := range c.members {
		mark := 0
		if i < len(from) {
			mark = from[i]
		}
		go func() {
			e, err := m.rec.Wait(ctx, mark, match)
			results <- found{i + 1, e, err}
		}()
	}
	var first error
	for range c.members {
		r := <-results
		if r.err == nil {
			return r.member, r.e, nil
		}
		if first == nil {
			first = r.err
		}
	}
	return 0, trace.Event{}, first
}

// Events merges the members' traces into the ensemble's: each transaction
// and each session close once (as the first member to list it recorded
// it), each watch notification and re-attach as the member that made it
// recorded it, ordered by the transactions: a notification or re-attach
// comes after the last transaction its member had applied before it. Seq
// numbers the merged events from 1.
func (c *Cluster) Events() []trace.Event {
	type keyed struct {
		e      trace.Event
		after  int64 // the zxid of the last transaction its member applied by then
		rank   int   // transactions first, then closes, then the rest
		member int
		index  int
	}
	type txnKey struct {
		kind trace.Kind
		zxid int64
	}
	var all []keyed
	seen := map[txnKey]bool{}
	for i, m := range c.members {
		var last int64
		for j, e := range m.rec.Events() {
			rank := 2
			switch e.Kind {
			case trace.TxnApplied:
				rank = 0
			case trace.SessionClosed:
				rank = 1
			}
			if rank < 2 && e.Zxid != 0 {
				last = max(last, e.Zxid)
				k := txnKey{e.Kind, e.Zxid}
				if seen[k] {
					continue
				}
				seen[k] = true
			}
			all = append(all, keyed{e, last, rank, i + 1, j})
		}
	}
	slices.SortStableFunc(all, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.after, b.after), cmp.Compare(a.rank, b.rank),
			cmp.Compare(a.member, b.member), cmp.Compare(a.index, b.index))
	})
	out := make([]trace.Event, len(all))
	for i, k := range all {
		out[i] = k.e
		out[i].Seq = uint64(i + 1)
	}
	return out
}
