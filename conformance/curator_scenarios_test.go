package conformance

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// curatorScenarios are CuratorCheck's scenarios, in the order it runs them,
// each with the check of what it printed.
var curatorScenarios = []struct {
	name  string
	check func(t *testing.T, r curatorResult)
}{
	{"mutex-reentrant", func(t *testing.T, r curatorResult) {
		r.want(t, map[string]string{
			"reacquired":              "true",
			"participants_held_twice": "1", // reentrancy counts locally, one znode
			"other_while_held":        "false",
			"held_after_one_release":  "true",
			"other_after_one_release": "false",
			"held_after_two_releases": "false",
			"other_after_release":     "true",
			"lock_nodes_after":        "0",
		})
	}},
	{"mutex-stock", func(t *testing.T, r curatorResult) {
		// 10 clients × 100 sales under one InterProcessMutex: no lost
		// update, no version conflict, never two holders.
		r.want(t, map[string]string{
			"final": "0", "sold": "1000", "conflicts": "0", "max_holders": "1", "lock_nodes_after": "0",
		})
	}},
	{"semaphore-mutex", func(t *testing.T, r curatorResult) {
		r.want(t, map[string]string{
			"reacquired":          "false", // not reentrant
			"other_while_held":    "false",
			"other_after_release": "true",
			"counter":             "80",
			"max_holders":         "1",
		})
	}},
	{"read-write-lock", func(t *testing.T, r curatorResult) {
		r.want(t, map[string]string{
			"readers_share":           "true",
			"writer_while_read":       "false",
			"writer_while_one_reader": "false",
			"writer_after_readers":    "true",
			"reader_while_write":      "false",
			"writer_while_write":      "false",
			"writer_takes_read":       "true",
			"reader_after_write":      "true",
			"rounds":                  "48",
			"violations":              "0",
			"max_writers":             "1",
		})
		if n := r.int(t, "max_readers"); n < 1 || n > 4 {
			t.Errorf("max_readers = %d, want 1..4 (four reader threads)", n)
		}
	}},
	{"multi-lock", func(t *testing.T, r curatorResult) {
		r.want(t, map[string]string{
			"multi_acquired":         "true",
			"a_while_multi":          "false",
			"b_while_multi":          "false",
			"a_after_multi":          "true",
			"multi_while_b_held":     "false",
			"a_after_failed_multi":   "true", // the failed multi gave a back
			"multi_after_b_released": "true",
			"lock_nodes_after":       "0",
		})
	}},
	{"semaphore", func(t *testing.T, r curatorResult) {
		r.want(t, map[string]string{
			"all_leases":         "3",
			"extra_while_full":   "false",
			"extra_after_return": "true",
			"acquired":           "30",
			"lease_nodes_after":  "0",
		})
		if n := r.int(t, "max_leases"); n < 1 || n > 3 {
			t.Errorf("max_leases = %d, want 1..3 (maxLeases 3)", n)
		}
	}},
	{"leader-latch", checkCuratorLeaders("latch-")},
	{"leader-selector", func(t *testing.T, r curatorResult) {
		checkCuratorLeaders("selector-")(t, r)
		r.want(t, map[string]string{"extra_leaderships": "0"})
	}},
	{"shared-count", func(t *testing.T, r curatorResult) {
		// 7 set directly, then 4 clients × 25 compare-and-set increments.
		r.want(t, map[string]string{"listener_saw": "5", "stale_set": "false", "final": "107"})
	}},
	{"atomic-long", func(t *testing.T, r curatorResult) {
		r.want(t, map[string]string{
			"succeeded": "200", "failed": "0", "final": "200",
			"cas_matching": "true", "cas_stale": "false", "after_cas": "1000",
		})
	}},
	{"containers", func(t *testing.T, r curatorResult) {
		r.want(t, map[string]string{
			// Clients see 0 for a container, as for any non-ephemeral node.
			"parent_ephemeral_owner":    "0",
			"container_parents_removed": "true",
			"containers_left":           "",
			"plain_parent_kept":         "true",
			"unused_container_kept":     "true", // never had a child: not a candidate
		})
	}},
	{"protection", func(t *testing.T, r curatorResult) {
		const guid = `_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-`
		first := r.match(t, "first", regexp.MustCompile(`^`+guid+`job-(\d{10})$`))
		second := r.match(t, "second", regexp.MustCompile(`^`+guid+`job-(\d{10})$`))
		r.match(t, "plain", regexp.MustCompile(`^`+guid+`plain$`))
		if first != nil && second != nil && (first[1] != "0000000000" || second[1] != "0000000001") {
			t.Errorf("protected sequence suffixes %s, %s; want 0000000000, 0000000001", first[1], second[1])
		}
		r.want(t, map[string]string{
			"first_normalized":       "job-0000000000",
			"first_is_protected":     "true",
			"first_owned_by_session": "true",
			"first_data":             "one",
		})
		want := []string{r["plain"], r["second"], r["first"]}
		slices.Sort(want) // CuratorCheck sorts too; the GUIDs decide the order
		if got := r["children"]; got != strings.Join(want, ",") {
			t.Errorf("children = %q, want %q", got, strings.Join(want, ","))
		}
	}},
}

// checkCuratorLeaders checks a leader scenario: three participants, each
// leading in turn after the previous leader left, never two at once.
func checkCuratorLeaders(prefix string) func(t *testing.T, r curatorResult) {
	return func(t *testing.T, r curatorResult) {
		t.Helper()
		r.want(t, map[string]string{"max_simultaneous_leaders": "1"})
		leaders := strings.Split(r["leaders"], ",")
		seen := make(map[string]bool)
		for _, l := range leaders {
			seen[l] = true
		}
		if len(leaders) != 3 || len(seen) != 3 {
			t.Errorf("leaders in turn = %v, want 3 distinct", leaders)
		}
		for l := range seen {
			if !strings.HasPrefix(l, prefix) {
				t.Errorf("leader id %q, want prefix %q", l, prefix)
			}
		}
	}
}

// want reports every key whose value differs from the one given.
func (r curatorResult) want(t *testing.T, want map[string]string) {
	t.Helper()
	for k, v := range want {
		got, ok := r[k]
		if !ok {
			t.Errorf("%s: not printed, want %q", k, v)
		} else if got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func (r curatorResult) int(t *testing.T, key string) int {
	t.Helper()
	n, err := strconv.Atoi(r[key])
	if err != nil {
		t.Errorf("%s = %q, want a number", key, r[key])
	}
	return n
}

func (r curatorResult) match(t *testing.T, key string, re *regexp.Regexp) []string {
	t.Helper()
	m := re.FindStringSubmatch(r[key])
	if m == nil {
		t.Errorf("%s = %q, want a match for %s", key, r[key], re)
	}
	return m
}
