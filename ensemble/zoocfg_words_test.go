package ensemble

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
)

// dumpNumbers matches the ids, counts, times and dates in dump's lines.
var dumpNumbers = regexp.MustCompile(`0x[0-9a-f]+|\d+|[A-Z][a-z]{2} [A-Z][a-z]{2} N N:N:N [A-Z]+ N`)

// ensembleWordsReport is what an operator's scripts read from the leader
// and a follower of a three-node ensemble: srvr, conf, mntr's leader keys
// and the ensemble admin commands, reduced to what must match ZooKeeper
// (keys, order, roles, counts; not ports, times or ids).
func ensembleWordsReport(t *testing.T, nodes []zooCfgNode, modes []string, admin bool) []string {
	t.Helper()
	var out []string
	for _, role := range []string{"leader", "follower"} {
		i := slices.Index(modes, role)
		nd := nodes[i]
		word := func(w string) string {
			t.Helper()
			s, err := realzk.FourLetterWord(nd.clientAddr, w, 10*time.Second)
			if err != nil {
				t.Fatalf("%s of the %s: %v", w, role, err)
			}
			return s
		}
		for _, ln := range strings.Split(word("srvr"), "\n") {
			key, val, _ := strings.Cut(ln, ": ")
			switch key {
			case "Mode", "Node count", "Outstanding":
				out = append(out, role+" srvr "+ln)
			case "":
			default:
				out = append(out, role+" srvr "+key)
				if key == "Proposal sizes last/min/max" && len(strings.Split(val, "/")) != 3 {
					t.Errorf("%s srvr: bad proposal sizes %q", role, val)
				}
			}
		}
		for _, ln := range strings.Split(word("conf"), "\n") {
			key, val, _ := strings.Cut(ln, "=")
			switch {
			case key == "initLimit" || key == "syncLimit" || key == "electionAlg" || key == "peerType" || key == "tickTime":
				out = append(out, role+" conf "+ln)
			case strings.HasPrefix(key, "server."):
				parts := strings.Split(val, ":")
				out = append(out, fmt.Sprintf("%s conf %s fields=%d role=%s", role, key, len(parts), strings.SplitN(parts[len(parts)-1], ";", 2)[0]))
			case ln != "":
				out = append(out, role+" conf "+key)
			}
		}
		// dump: the session part differs by role; which sessions a node
		// holds depends on where the clients connected, so keep the
		// distinct line forms up to the connections part.
		seen := map[string]bool{}
		for _, ln := range strings.Split(word("dump"), "\n") {
			if ln == "Connections dump:" {
				break
			}
			ln = dumpNumbers.ReplaceAllString(ln, "N")
			if ln == "N\tNms" || ln == "\tN" || ln == "N:" || strings.HasPrefix(ln, "\t/") {
				continue // one session or path: their number depends on where clients connected
			}
			if !seen[ln] {
				seen[ln] = true
				out = append(out, role+" dump "+ln)
			}
		}
		mntr := map[string]string{}
		for _, ln := range strings.Split(word("mntr"), "\n") {
			if k, v, ok := strings.Cut(ln, "\t"); ok {
				mntr[k] = v
			}
		}
		for _, k := range []string{"zk_server_state", "zk_learners", "zk_synced_followers", "zk_synced_non_voting_followers", "zk_pending_syncs", "zk_znode_count"} {
			out = append(out, fmt.Sprintf("%s mntr %s=%s", role, k, mntr[k]))
		}
		for _, k := range []string{"zk_last_proposal_size", "zk_max_proposal_size", "zk_min_proposal_size"} {
			_, ok := mntr[k]
			out = append(out, fmt.Sprintf("%s mntr has %s=%v", role, k, ok))
		}
		if !admin {
			continue
		}
		for _, cmd := range []string{"leader", "zabstate", "voting_view"} {
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + nd.adminAddr + "/commands/" + cmd)
			if err != nil {
				t.Fatalf("admin %s of the %s: %v", cmd, role, err)
			}
			var v map[string]any
			err = json.NewDecoder(resp.Body).Decode(&v)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("admin %s of the %s: %v", cmd, role, err)
			}
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			out = append(out, fmt.Sprintf("%s admin %s keys %s", role, cmd, strings.Join(keys, ",")))
			switch cmd {
			case "leader":
				out = append(out, fmt.Sprintf("%s admin leader is_leader=%v", role, v["is_leader"]))
			case "zabstate":
				out = append(out, fmt.Sprintf("%s admin zabstate voting=%v zabstate=%v", role, v["voting"], v["zabstate"]))
			case "voting_view":
				view, _ := v["current_config"].(map[string]any)
				out = append(out, fmt.Sprintf("%s admin voting_view members=%d", role, len(view)))
				for _, m := range view {
					mk := []string{}
					for k := range m.(map[string]any) {
						mk = append(mk, k)
					}
					sort.Strings(mk)
					out = append(out, fmt.Sprintf("%s admin voting_view member keys %s", role, strings.Join(mk, ",")))
					break
				}
			}
		}
	}
	return out
}
