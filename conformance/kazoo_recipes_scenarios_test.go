package conformance

import (
	"testing"
)

// kazooRecipeScenarios are recipes.py's scenarios, in the order it runs
// them, each with the check of what it recorded.
var kazooRecipeScenarios = []struct {
	name  string
	check func(t *testing.T, r kazooRecipeResult)
}{
	{"lock", func(t *testing.T, r kazooRecipeResult) {
		// 5 clients × 20 read-increment-writes of a znode under one Lock.
		r.want(t, map[string]any{
			"contenders_while_held": []string{"a"},
			"other_nonblocking":     false,
			"other_timeout":         false,
			"other_after_release":   true,
			"counter":               100,
			"max_holders":           1,
			"lock_nodes_after":      0,
		})
	}},
	{"rwlock", func(t *testing.T, r kazooRecipeResult) {
		r.want(t, map[string]any{
			"readers_share":           true,
			"writer_while_read":       false,
			"writer_while_one_reader": false,
			"writer_after_readers":    true,
			"reader_while_write":      false,
			"writer_while_write":      false,
			"reader_after_write":      true,
			// Three readers meet while holding the read lock; a writer
			// queued behind them gets it only after all left.
			"readers_together":           3,
			"readers_when_writer_got_it": []int{0},
			// 3 writers × 8 unguarded read-modify-writes.
			"writes":           24,
			"max_writers":      1,
			"lock_nodes_after": 0,
		})
	}},
	{"semaphore", func(t *testing.T, r kazooRecipeResult) {
		r.want(t, map[string]any{
			"holders_when_full":   []string{"s0", "s1"},
			"third_nonblocking":   false,
			"third_timeout":       false,
			"third_after_release": true,
			"acquired":            20,
			"holders_after":       []string{},
		})
		if n := r.int(t, "max_leases"); n < 1 || n > 2 {
			t.Errorf("max_leases = %d, want 1..2 (max_leases=2)", n)
		}
	}},
	{"election", func(t *testing.T, r kazooRecipeResult) {
		r.want(t, map[string]any{
			"contenders":               []string{"e0", "e1", "e2"},
			"max_simultaneous_leaders": 1,
			"extra_leaderships":        0,
		})
		// Each contender leads once, the next only after the previous gave
		// up (round 1: its session closed).
		log, _ := r["log"].([]any)
		if len(log) != 6 {
			t.Fatalf("log = %v, want 6 entries", log)
		}
		seen := make(map[string]bool)
		for i := 0; i < 6; i += 2 {
			lead, _ := log[i].(string)
			gone, _ := log[i+1].(string)
			id := lead[len("lead "):]
			how := "returned "
			if i == 2 {
				how = "session closed "
			}
			if lead[:len("lead ")] != "lead " || gone != how+id || seen[id] {
				t.Errorf("log = %v: want lead X, %sX for three distinct X", log, how)
				break
			}
			seen[id] = true
		}
	}},
	{"party", func(t *testing.T, r kazooRecipeResult) {
		r.want(t, map[string]any{
			"size":                3,
			"members":             []string{"p0", "p1", "p2"},
			"after_leave":         []string{"p0", "p2"},
			"after_session_close": []string{"p0"},
			"shallow_members":     []string{"s0", "s1"},
			"shallow_after_leave": []string{"s1"},
		})
	}},
	{"counter", func(t *testing.T, r kazooRecipeResult) {
		// 3, then 4 clients × 25 optimistic increments.
		r.want(t, map[string]any{"after_add_sub": 3, "pre_post": []int{5, 3}, "float": 3.0, "final": 103})
	}},
	{"barrier", func(t *testing.T, r kazooRecipeResult) {
		r.want(t, map[string]any{
			"wait_while_up":     false,
			"passed_while_up":   0,
			"waiters_released":  []bool{true, true, true},
			"wait_after_remove": true,
		})
	}},
	{"double-barrier", func(t *testing.T, r kazooRecipeResult) {
		r.want(t, map[string]any{
			"arrivals_seen_on_enter": []int{3, 3, 3},
			"leavers_seen_on_leave":  []int{3, 3, 3},
			"participating":          []bool{true, true, true},
			"members_after":          []string{},
		})
	}},
	{"queue", func(t *testing.T, r kazooRecipeResult) {
		r.want(t, map[string]any{
			"len":                            5,
			"order":                          []string{"high", "mid-0", "mid-1", "mid-2", "low"},
			"get_empty":                      nil,
			"consumed":                       30,
			"consumed_distinct":              30,
			"consumed_in_order_per_consumer": true,
		})
	}},
	{"locking-queue", func(t *testing.T, r kazooRecipeResult) {
		r.want(t, map[string]any{
			"a_gets":         "x",
			"b_gets":         "y", // x is locked by a
			"b_holds":        true,
			"b_released":     true,
			"a_consumed":     true,
			"b_gets_again":   "y",
			"b_consumed":     true,
			"len_after":      0,
			"get_empty":      nil,
			"jobs_consumed":  12,
			"jobs_distinct":  12,
			"len_after_jobs": 0,
		})
	}},
	{"data-watch", func(t *testing.T, r kazooRecipeResult) {
		// [data, version, event type]; nothing after the function returned
		// False.
		r.want(t, map[string]any{"calls": []any{
			[]any{"v0", 0, nil},
			[]any{"v1", 1, "CHANGED"},
			[]any{"v2", 2, "CHANGED"},
			[]any{"v3", 3, "CHANGED"},
			[]any{nil, nil, "DELETED"},
			[]any{"again", 0, "CREATED"},
		}})
	}},
	{"children-watch", func(t *testing.T, r kazooRecipeResult) {
		// A data change of the parent is no call.
		r.want(t, map[string]any{"calls": [][]string{
			{}, {"c0"}, {"c0", "c1"}, {"c0", "c1", "c2"}, {"c0", "c2"}, {"c0", "c2", "c3"},
		}})
	}},
	{"tree-cache", func(t *testing.T, r kazooRecipeResult) {
		const p = "/kazoo-recipes/tree-cache"
		r.want(t, map[string]any{
			"cached_x":              "11",
			"cached_children":       []string{"x", "y"},
			"cached_children_after": []string{"x"},
			"events": [][]string{
				{"added", p, ""},
				{"added", p + "/x", "1"},
				{"initialized"},
				{"added", p + "/y", "2"},
				{"updated", p + "/x", "11"},
				{"added", p + "/y/z", "3"},
				{"removed", p + "/y/z", "3"},
				{"removed", p + "/y", "2"},
			},
		})
	}},
}
