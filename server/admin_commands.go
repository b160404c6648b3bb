package server

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// adminCommand is one AdminServer command: its names (the first is the
// one ZooKeeper reports as "command"), whether it needs a serving server,
// and what it adds to the JSON answer.
type adminCommand struct {
	names   []string
	serving bool
	run     func(out map[string]any)
}

// adminCommands lists ZooKeeper 3.8's AdminServer commands as hutch
// answers them, with ZooKeeper's names, aliases and JSON fields, then
// hutch's own.
func (s *Server) adminCommands() []adminCommand {
	return []adminCommand{
		{[]string{"ruok"}, false, func(map[string]any) {}},
		{[]string{"server_stats", "srvr"}, true, func(out map[string]any) { s.adminServerStats(out) }},
		{[]string{"stats", "stat"}, true, func(out map[string]any) {
			s.adminServerStats(out)
			s.adminConnections(out, true)
		}},
		{[]string{"monitor", "mntr"}, true, func(out map[string]any) {
			for _, kv := range s.monitorValues(s.Stats(), s.Replication()) {
				out[kv.key] = kv.value
			}
		}},
		{[]string{"configuration", "conf", "config"}, true, func(out map[string]any) {
			cfg := s.cfg
			dataDir, logDir := s.dataDirs()
			maxConns := max(cfg.MaxClientConnsPerIP, 0)
			out["client_port"] = addrPort(s.Addr())
			out["data_dir"] = dataDir
			out["data_log_dir"] = logDir
			out["tick_time"] = cfg.TickTime.Milliseconds()
			out["max_client_cnxns"] = maxConns
			out["min_session_timeout"] = cfg.MinSessionTimeout.Milliseconds()
			out["max_session_timeout"] = cfg.MaxSessionTimeout.Milliseconds()
			out["server_id"] = s.serverIDForReports()
			out["client_port_listen_backlog"] = -1
		}},
		{[]string{"connections", "cons"}, true, func(out map[string]any) { s.adminConnections(out, false) }},
		{[]string{"connection_stat_reset", "crst"}, true, func(map[string]any) { s.resetConnectionStats() }},
		{[]string{"stat_reset", "srst"}, true, func(map[string]any) { s.stats.reset() }},
		{[]string{"environment", "env", "envi"}, false, func(out map[string]any) {
			for _, kv := range environment() {
				out[kv[0]] = kv[1]
			}
		}},
		{[]string{"system_properties", "sysp"}, false, func(out map[string]any) {
			for _, kv := range environment() {
				out[kv[0]] = kv[1]
			}
			for k, v := range s.systemProperties() {
				out[k] = v
			}
		}},
		{[]string{"dump"}, true, func(out map[string]any) {
			expiry := map[string][]int64{}
			for _, b := range s.expiryBuckets() {
				k := strconv.FormatInt(s.elapsedMillis(b.Expires), 10)
				expiry[k] = append(expiry[k], b.Sessions...)
			}
			eph := map[string][]string{}
			for id, paths := range s.db.Ephemerals() {
				eph[strconv.FormatInt(id, 10)] = paths
			}
			out["expiry_time_to_session_ids"] = expiry
			out["session_id_to_ephemeral_paths"] = eph
		}},
		{[]string{"watch_summary", "wchs"}, true, func(out map[string]any) {
			w := s.watchSummary()
			out["num_connections"] = w.connections
			out["num_paths"] = w.paths
			out["num_total_watches"] = w.total
		}},
		{[]string{"watches", "wchc"}, true, func(out map[string]any) {
			m := map[string][]string{}
			for id, paths := range s.sessionWatches() {
				m[strconv.FormatInt(id, 10)] = javaHashOrder(paths)
			}
			out["session_id_to_watched_paths"] = m
		}},
		{[]string{"watches_by_path", "wchp"}, true, func(out map[string]any) {
			out["path_to_session_ids"] = s.watchersByPath()
		}},
		{[]string{"dirs"}, true, func(out map[string]any) {
			data, log := s.dirSizes()
			out["datadir_size"] = data
			out["logdir_size"] = log
		}},
		{[]string{"hash"}, true, func(out map[string]any) {
			list := []map[string]any{}
			for _, d := range s.db.DigestLog() {
				list = append(list, map[string]any{"zxid": d.Zxid, "digest": d.Digest})
			}
			out["digests"] = list
		}},
		{[]string{"is_read_only", "isro"}, true, func(out map[string]any) { out["read_only"] = false }},
		{[]string{"last_snapshot", "lsnp"}, true, func(out map[string]any) {
			zxid, ts := int64(-1), int64(-1)
			if info := s.db.LastSnapshot(); info != nil {
				zxid, ts = info.Zxid, info.Time.Unix()
			}
			out["zxid"] = strconv.FormatInt(zxid, 16)
			out["timestamp"] = ts
		}},
		{[]string{"initial_configuration", "icfg"}, false, func(out map[string]any) {
			out["initial_configuration"] = s.cfg.ConfigText
		}},
		{[]string{"leader", "lead"}, true, func(out map[string]any) {
			r := s.Replication()
			if r.Mode == "standalone" {
				out["error"] = "server is not initialized"
				return
			}
			out["is_leader"] = r.Mode == "leader"
			out["leader_id"] = int64(r.LeaderID)
			host, _, _ := net.SplitHostPort(r.LeaderAddr)
			out["leader_ip"] = host
		}},
		{[]string{"voting_view"}, true, func(out map[string]any) {
			view := map[string]any{}
			for _, m := range s.Replication().Members {
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
		{[]string{"zabstate"}, false, func(out map[string]any) {
			r := s.Replication()
			if r.Mode == "standalone" {
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
			zxid := s.db.LastZxid()
			out["myid"] = int64(r.NodeID)
			out["is_leader"] = r.Mode == "leader"
			out["quorum_address"] = self
			out["election_address"] = self
			out["client_address"] = s.Addr().String()
			out["voting"] = voting
			out["last_zxid"] = fmt.Sprintf("0x%x", zxid)
			out["zab_epoch"] = zxid >> 32
			out["zab_counter"] = zxid & 0xffffffff
			// Raft has no discovery or synchronization phase a client
			// could see: a node with a leader is broadcasting.
			state := "election"
			if r.LeaderID != 0 {
				state = "broadcast"
			}
			out["zabstate"] = state
		}},
		{[]string{"observers", "obsr"}, true, func(out map[string]any) {
			out["synced_observers"] = 0
			out["observers"] = []any{}
		}},
		{[]string{"observer_connection_stat_reset", "orst"}, true, func(map[string]any) {}},

		// hutch's own.
		{[]string{"digest"}, false, func(out map[string]any) {
			d, z := s.Digest()
			out["digest"] = fmt.Sprintf("%016x", d)
			out["last_zxid"] = z
		}},
		{[]string{"members"}, false, func(out map[string]any) {
			r := s.Replication()
			list := []map[string]any{}
			for _, m := range r.Members {
				list = append(list, map[string]any{"id": m.ID, "addr": m.Addr, "voter": m.Voter, "leader": m.ID == r.LeaderID})
			}
			out["members"] = list
		}},
		{[]string{"raft"}, false, func(out map[string]any) {
			r := s.Replication()
			out["mode"] = r.Mode
			out["node_id"] = r.NodeID
			out["leader_id"] = r.LeaderID
			out["leader_addr"] = r.LeaderAddr
			out["term"] = r.Term
			if !r.LastContact.IsZero() {
				out["last_contact_ms"] = time.Since(r.LastContact).Milliseconds()
			}
			out["stats"] = r.Raft
		}},
	}
}

// serverIDForReports is the id conf reports: 0 standalone, as ZooKeeper.
func (s *Server) serverIDForReports() int64 {
	if r := s.Replication(); r.Mode != "standalone" {
		return int64(r.NodeID)
	}
	return 0
}

// adminServerStats fills the server_stats answer.
func (s *Server) adminServerStats(out map[string]any) {
	st := s.Stats()
	data, log := s.dirSizes()
	out["version"] = Version
	out["read_only"] = false
	out["server_stats"] = map[string]any{
		"packets_sent":                 st.PacketsSent,
		"packets_received":             st.PacketsReceived,
		"fsync_threshold_exceed_count": 0,
		"client_response_stats":        map[string]any{"last_buffer_size": -1, "min_buffer_size": -1, "max_buffer_size": -1},
		"data_dir_size":                data,
		"log_dir_size":                 log,
		"provider_null":                false,
		"server_state":                 s.Mode(),
		"last_processed_zxid":          st.LastZxid,
		"outstanding_requests":         st.Outstanding,
		"avg_latency":                  st.AvgLatency,
		"max_latency":                  st.MaxLatency,
		"min_latency":                  st.MinLatency,
		"num_alive_client_connections": st.Connections,
		"auth_failed_count":            st.AuthFailed,
		"non_mtlsremote_conn_count":    0,
		"non_mtlslocal_conn_count":     0,
		"uptime":                       st.Uptime.Milliseconds(),
	}
	out["client_response"] = map[string]any{"last_buffer_size": -1, "min_buffer_size": -1, "max_buffer_size": -1}
	out["node_count"] = st.Nodes
}

// adminConnections fills the connections answer, split by port as
// ZooKeeper splits them by factory; brief leaves out the session fields.
func (s *Server) adminConnections(out map[string]any, brief bool) {
	plain, secure := []map[string]any{}, []map[string]any{}
	for _, r := range s.connectionReports() {
		interest := 1
		if r.Session == 0 {
			interest = 0
		}
		m := map[string]any{
			"remote_socket_address": r.Remote,
			"interest_ops":          interest,
			"outstanding_requests":  r.Outstanding,
			"packets_received":      r.Received,
			"packets_sent":          r.Sent,
		}
		if !brief && r.Session != 0 {
			m["session_id"] = r.Session
			m["last_operation"] = r.LastOp
			m["established"] = r.Established.UnixMilli()
			m["session_timeout"] = r.Timeout.Milliseconds()
			m["last_cxid"] = r.LastCxid
			m["last_zxid"] = r.LastZxid
			m["last_response_time"] = s.elapsedMillis(r.LastResponse)
			m["last_latency"] = r.LastLatency
			m["min_latency"] = r.MinLatency
			m["avg_latency"] = r.AvgLatency
			m["max_latency"] = r.MaxLatency
		}
		if r.Secure {
			secure = append(secure, m)
		} else {
			plain = append(plain, m)
		}
	}
	out["connections"] = plain
	out["secure_connections"] = secure
}

// systemProperties are the settings ZooKeeper would hold as zookeeper.*
// system properties.
func (s *Server) systemProperties() map[string]string {
	words := []string{}
	for w := range s.words {
		words = append(words, w)
	}
	props := map[string]string{
		"zookeeper.4lw.commands.whitelist": joinSorted(words),
		"zookeeper.admin.enableServer":     "true",
	}
	if a := s.AdminAddr(); a != nil {
		host, port, _ := net.SplitHostPort(a.String())
		props["zookeeper.admin.serverAddress"] = host
		props["zookeeper.admin.serverPort"] = port
	}
	return props
}

func joinSorted(list []string) string {
	slices.Sort(list)
	return strings.Join(list, ",")
}
