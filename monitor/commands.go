package monitor

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/hutchzk/hutch/membership"
)

// command is one operator command. The four-letter dispatcher, the
// /commands listing and each /commands/<name> are all derived from the
// registry of them; a command's text and JSON read the same snapshot.
type command struct {
	// names are its AdminServer names: the first is the one ZooKeeper
	// reports as "command", the others are aliases.
	names []string
	// word is its four-letter word, "" for an AdminServer-only command.
	// Every word is subject to the whitelist.
	word string
	// serving marks a command answered only while the server serves
	// clients; otherwise it answers that it does not.
	serving bool
	// idleText, when set, is the four-letter answer while not serving
	// instead of ZooKeeper's usual one.
	idleText string
	// needs are the snapshot parts its answers read.
	needs Parts
	// do is what it changes before it answers (srst, crst).
	do func(src Source)
	// text writes the four-letter answer (commands with a word).
	text func(b *strings.Builder, v *view)
	// json adds its fields to the JSON answer; nil adds none.
	json func(out map[string]any, v *view)

	// Membership changes, by method (POST or DELETE) on
	// /commands/<path>: token marks that they need the admin token, valid
	// checks the JSON body and change makes the change.
	method, path string
	token        bool
	valid        func(r memberRequest, maxID uint64) bool
	change       func(ctx context.Context, src Source, r memberRequest) (membership.Config, error)
}

// memberRequest is the JSON body of a membership change.
type memberRequest struct {
	ID   uint64 `json:"id"`
	Addr string `json:"addr"` // the Raft (quorum) address, host:port
	// Role is participant (the default) or observer; Client the client
	// address, host:port, if the configuration is to name one.
	Role   string `json:"role,omitempty"`
	Client string `json:"client,omitempty"`
	// Version, when given, is the membership version (hex, as the
	// members command shows it) the change is made against: refused if
	// the membership has changed since, as a reconfig's fromConfig.
	Version string `json:"version,omitempty"`
}

// from is the version the request is made against, -1 for any; ok is
// false for one that is not hex.
func (r memberRequest) from() (v int64, ok bool) {
	if r.Version == "" {
		return -1, true
	}
	u, err := strconv.ParseUint(r.Version, 16, 63)
	return int64(u), err == nil
}

// spec is the request as a reconfig's joining server.N line; ZooKeeper's
// election port, which hutch does not use, is 0.
func (r memberRequest) spec() string {
	role := "participant"
	if r.Role != "" {
		role = r.Role
	}
	s := fmt.Sprintf("server.%d=%s:0:%s", r.ID, r.Addr, role)
	if r.Client != "" {
		s += ";" + r.Client
	}
	return s
}

// registry lists ZooKeeper 3.8's AdminServer commands and four-letter
// words as hutch answers them, with ZooKeeper's names, aliases and
// fields, then hutch's own. A new command is one more entry here.
var registry = []command{
	{names: []string{"ruok"}, word: "ruok",
		text: func(b *strings.Builder, _ *view) { b.WriteString("imok") }},
	{names: []string{"server_stats", "srvr"}, word: "srvr", serving: true, needs: PartStats,
		text: func(b *strings.Builder, v *view) { writeStat(b, v, false) },
		json: serverStatsJSON},
	{names: []string{"stats", "stat"}, word: "stat", serving: true, needs: PartStats | PartConnections,
		text: func(b *strings.Builder, v *view) { writeStat(b, v, true) },
		json: func(out map[string]any, v *view) {
			serverStatsJSON(out, v)
			connectionsJSON(out, v, true)
		}},
	{names: []string{"monitor", "mntr"}, word: "mntr", serving: true, needs: PartStats | PartReplication,
		text: func(b *strings.Builder, v *view) {
			for _, kv := range monitorValues(v) {
				if f, ok := kv.value.(float64); ok {
					fmt.Fprintf(b, "zk_%s\t%s\n", kv.key, javaDouble(f))
					continue
				}
				fmt.Fprintf(b, "zk_%s\t%v\n", kv.key, kv.value)
			}
		},
		json: func(out map[string]any, v *view) {
			for _, kv := range monitorValues(v) {
				out[kv.key] = kv.value
			}
		}},
	{names: []string{"configuration", "conf", "config"}, word: "conf", serving: true, needs: PartReplication,
		text: writeConf, json: confJSON},
	{names: []string{"connections", "cons"}, word: "cons", serving: true, needs: PartConnections,
		text: func(b *strings.Builder, v *view) { writeConnections(b, v, false) },
		json: func(out map[string]any, v *view) { connectionsJSON(out, v, false) }},
	{names: []string{"connection_stat_reset", "crst"}, word: "crst", serving: true,
		do:   Source.ResetConnectionStats,
		text: func(b *strings.Builder, _ *view) { b.WriteString("Connection stats reset.\n") }},
	{names: []string{"stat_reset", "srst"}, word: "srst", serving: true,
		do:   Source.ResetStats,
		text: func(b *strings.Builder, _ *view) { b.WriteString("Server stats reset.\n") }},
	{names: []string{"environment", "env", "envi"}, word: "envi",
		text: func(b *strings.Builder, _ *view) {
			b.WriteString("Environment:\n")
			for _, kv := range environment() {
				fmt.Fprintf(b, "%s=%s\n", kv[0], kv[1])
			}
		},
		json: func(out map[string]any, _ *view) {
			for _, kv := range environment() {
				out[kv[0]] = kv[1]
			}
		}},
	{names: []string{"system_properties", "sysp"},
		json: func(out map[string]any, v *view) {
			for _, kv := range environment() {
				out[kv[0]] = kv[1]
			}
			for k, p := range systemProperties(v) {
				out[k] = p
			}
		}},
	{names: []string{"dump"}, word: "dump", serving: true, needs: PartConnections | PartSessions,
		text: writeDump, json: dumpJSON},
	{names: []string{"watch_summary", "wchs"}, word: "wchs", serving: true, needs: PartWatches,
		text: func(b *strings.Builder, v *view) {
			w := summarizeWatches(v)
			fmt.Fprintf(b, "%d connections watching %d paths\nTotal watches:%d\n", w.connections, w.paths, w.total)
		},
		json: func(out map[string]any, v *view) {
			w := summarizeWatches(v)
			out["num_connections"] = w.connections
			out["num_paths"] = w.paths
			out["num_total_watches"] = w.total
		}},
	{names: []string{"watches", "wchc"}, word: "wchc", serving: true, needs: PartWatches,
		text: writeWatchesBySession,
		json: func(out map[string]any, v *view) {
			m := map[string][]string{}
			for id, paths := range watchesBySession(v) {
				m[strconv.FormatInt(id, 10)] = javaHashOrder(paths)
			}
			out["session_id_to_watched_paths"] = m
		}},
	{names: []string{"watches_by_path", "wchp"}, word: "wchp", serving: true, needs: PartWatches,
		text: writeWatchesByPath,
		json: func(out map[string]any, v *view) { out["path_to_session_ids"] = watchersByPath(v) }},
	{names: []string{"dirs"}, word: "dirs", serving: true,
		text: func(b *strings.Builder, v *view) {
			data, log := dirSizes(v)
			fmt.Fprintf(b, "datadir_size: %d\nlogdir_size: %d\n", data, log)
		},
		json: func(out map[string]any, v *view) {
			out["datadir_size"], out["logdir_size"] = dirSizes(v)
		}},
	{names: []string{"hash"}, word: "hash", serving: true, needs: PartDigests,
		text: func(b *strings.Builder, v *view) {
			for _, d := range v.Digests.Log {
				fmt.Fprintf(b, "%x: %d\n", d.Zxid, d.Digest)
			}
		},
		json: func(out map[string]any, v *view) {
			list := []map[string]any{}
			for _, d := range v.Digests.Log {
				list = append(list, map[string]any{"zxid": d.Zxid, "digest": d.Digest})
			}
			out["digests"] = list
		}},
	{names: []string{"is_read_only", "isro"}, word: "isro", serving: true, idleText: "null",
		text: func(b *strings.Builder, v *view) {
			if v.Mode.IsReadOnly() {
				b.WriteString("ro")
			} else {
				b.WriteString("rw")
			}
		},
		json: func(out map[string]any, v *view) { out["read_only"] = v.Mode.IsReadOnly() }},
	{names: []string{"last_snapshot", "lsnp"}, serving: true, needs: PartDigests,
		json: func(out map[string]any, v *view) {
			zxid, ts := int64(-1), int64(-1)
			if info := v.Digests.LastSnapshot; info != nil {
				zxid, ts = info.Zxid, info.Time.Unix()
			}
			out["zxid"] = strconv.FormatInt(zxid, 16)
			out["timestamp"] = ts
		}},
	{names: []string{"initial_configuration", "icfg"},
		json: func(out map[string]any, v *view) { out["initial_configuration"] = v.Server.ConfigText }},
	{names: []string{"leader", "lead"}, serving: true, needs: PartReplication,
		json: func(out map[string]any, v *view) {
			r := v.Replication
			if !v.Mode.Replicated() {
				out["error"] = "server is not initialized"
				return
			}
			out["is_leader"] = v.Mode.Leads()
			out["leader_id"] = int64(r.LeaderID)
			host, _, _ := net.SplitHostPort(r.LeaderAddr)
			out["leader_ip"] = host
		}},
	{names: []string{"voting_view"}, serving: true, needs: PartReplication,
		json: func(out map[string]any, v *view) {
			view := map[string]any{}
			for _, m := range v.Replication.Members {
				if !m.Voter {
					continue
				}
				view[strconv.FormatUint(m.ID, 10)] = map[string]any{
					"server_addresses":   []string{m.Addr},
					"election_addresses": []string{m.Addr}, // Raft elects over the same port
					"client_address":     "",
					"learner_type":       "participant",
				}
			}
			out["current_config"] = view
		}},
	{names: []string{"zabstate"}, needs: PartReplication | PartStats, json: zabStateJSON},
	{names: []string{"observers", "obsr"}, serving: true,
		json: func(out map[string]any, _ *view) {
			out["synced_observers"] = 0
			out["observers"] = []any{}
		}},
	{names: []string{"observer_connection_stat_reset", "orst"}, serving: true},

	// hutch's own.
	{names: []string{"digest"}, needs: PartDigests,
		json: func(out map[string]any, v *view) {
			out["digest"] = fmt.Sprintf("%016x", v.Digests.Tree)
			out["last_zxid"] = v.Digests.Zxid
		}},
	{names: []string{"members"}, needs: PartReplication,
		json: func(out map[string]any, v *view) {
			r := v.Replication
			list := []map[string]any{}
			for _, m := range r.Members {
				list = append(list, map[string]any{"id": m.ID, "addr": m.Addr, "role": m.Role.String(), "voter": m.Voter, "leader": m.ID == r.LeaderID})
			}
			out["members"] = list
			// The membership's version, as /zookeeper/config's version
			// line has it: a member that has applied a newer one says more.
			out["version"] = strconv.FormatUint(uint64(r.Config.Version), 16)
		}},
	{names: []string{"raft"}, needs: PartReplication,
		json: func(out map[string]any, v *view) {
			r := v.Replication
			out["mode"] = v.Mode.String()
			out["node_id"] = r.NodeID
			out["leader_id"] = r.LeaderID
			out["leader_addr"] = r.LeaderAddr
			out["term"] = r.Term
			if !r.LastContact.IsZero() {
				out["last_contact_ms"] = v.Taken.Sub(r.LastContact).Milliseconds()
			}
			out["stats"] = r.Raft
		}},
	// The operator's membership changes: a reconfig's, by the same path.
	{names: []string{"add_member"}, method: http.MethodPost, path: "members", token: true,
		valid: func(r memberRequest, maxID uint64) bool {
			return r.ID >= 1 && r.ID <= maxID && r.Addr != "" && (r.Role == "" || r.Role == "participant" || r.Role == "observer")
		},
		change: func(ctx context.Context, src Source, r memberRequest) (membership.Config, error) {
			from, _ := r.from()
			return src.ReconfigureFrom(ctx, from, []string{r.spec()}, nil)
		}},
	{names: []string{"remove_member"}, method: http.MethodDelete, path: "members", token: true,
		valid: func(r memberRequest, maxID uint64) bool { return r.ID >= 1 && r.ID <= maxID },
		change: func(ctx context.Context, src Source, r memberRequest) (membership.Config, error) {
			from, _ := r.from()
			return src.ReconfigureFrom(ctx, from, nil, []uint64{r.ID})
		}},
}

// zabStateJSON fills zabstate: the node's place in the ensemble, in the
// terms of ZooKeeper's atomic broadcast.
func zabStateJSON(out map[string]any, v *view) {
	r := v.Replication
	if !v.Mode.Replicated() {
		out["voting"] = false
		out["zabstate"] = ""
		return
	}
	var self string
	voting := false
	for _, m := range r.Members {
		if m.ID == r.NodeID {
			self, voting = m.Addr, m.Voter
		}
	}
	zxid := v.Stats.LastZxid
	out["myid"] = int64(r.NodeID)
	out["is_leader"] = v.Mode.Leads()
	out["quorum_address"] = self
	out["election_address"] = self
	out["client_address"] = v.Server.ClientAddr
	out["voting"] = voting
	out["last_zxid"] = fmt.Sprintf("0x%x", zxid)
	out["zab_epoch"] = zxid >> 32
	out["zab_counter"] = zxid & 0xffffffff
	// Raft has no discovery or synchronization phase a client could see:
	// a node with a leader is broadcasting.
	state := "election"
	if r.LeaderID != 0 {
		state = "broadcast"
	}
	out["zabstate"] = state
}
