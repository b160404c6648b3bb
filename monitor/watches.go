package monitor

import (
	"fmt"
	"slices"
	"strings"
)

// ZooKeeper's wchs, wchc and wchp, and their JSON, report the data table
// only: the watches getData and exists set, and the data half of
// persistent ones.

// watchSummary counts data watches as wchs and watch_summary report them.
type watchSummary struct{ connections, paths, total int }

func summarizeWatches(v *view) watchSummary {
	watchers, paths := map[int64]bool{}, map[string]bool{}
	total := 0
	for _, w := range v.Watches {
		if w.Child {
			continue
		}
		watchers[w.Watcher] = true
		paths[w.Path] = true
		total++
	}
	return watchSummary{connections: len(watchers), paths: len(paths), total: total}
}

// watchesBySession lists the paths each session watches, as ZooKeeper
// reports them: by session, where the watches are kept by connection.
func watchesBySession(v *view) map[int64][]string {
	out := map[int64][]string{}
	for _, w := range v.Watches {
		if !w.Child {
			out[w.Session] = append(out[w.Session], w.Path)
		}
	}
	return out
}

// watchersByPath turns watchesBySession around: the sessions watching
// each path, in id order (wchp, watches_by_path).
func watchersByPath(v *view) map[string][]int64 {
	watchers := map[string][]int64{}
	for id, paths := range watchesBySession(v) {
		for _, p := range paths {
			watchers[p] = append(watchers[p], id)
		}
	}
	for _, ids := range watchers {
		slices.Sort(ids)
	}
	return watchers
}

// writeWatchesBySession writes wchc. Paths come in the order of Java's
// HashSet of strings, as in ZooKeeper.
func writeWatchesBySession(b *strings.Builder, v *view) {
	bySession := watchesBySession(v)
	ids := make([]int64, 0, len(bySession))
	for id := range bySession {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(b, "0x%x\n", id)
		for _, p := range javaHashOrder(bySession[id]) {
			fmt.Fprintf(b, "\t%s\n", p)
		}
	}
	b.WriteString("\n")
}

// writeWatchesByPath writes wchp, paths in the order of Java's HashMap.
func writeWatchesByPath(b *strings.Builder, v *view) {
	watchers := watchersByPath(v)
	paths := make([]string, 0, len(watchers))
	for p := range watchers {
		paths = append(paths, p)
	}
	for _, p := range javaHashOrder(paths) {
		fmt.Fprintf(b, "%s\n", p)
		for _, id := range watchers[p] {
			fmt.Fprintf(b, "\t0x%x\n", id)
		}
	}
	b.WriteString("\n")
}
