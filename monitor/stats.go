package monitor

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/hutchzk/hutch/membership"
)

// writeStat writes srvr, or with clients stat: ZooKeeper's StatCommand.
func writeStat(b *strings.Builder, v *view, clients bool) {
	fmt.Fprintf(b, "Zookeeper version: %s\n", FullVersion())
	if v.Mode.IsReadOnly() {
		b.WriteString("READ-ONLY mode; serving only read-only clients\n")
	}
	if clients {
		b.WriteString("Clients:\n")
		writeConnections(b, v, true)
	}
	st := v.Stats
	fmt.Fprintf(b, "Latency min/avg/max: %d/%s/%d\n", st.MinLatency, javaDouble(st.AvgLatency), st.MaxLatency)
	fmt.Fprintf(b, "Received: %d\nSent: %d\nConnections: %d\nOutstanding: %d\n", st.PacketsReceived, st.PacketsSent, st.Connections, st.Outstanding)
	fmt.Fprintf(b, "Zxid: 0x%x\nMode: %s\nNode count: %d\n", st.LastZxid, v.Mode, st.Nodes)
	if v.Mode.Leads() {
		fmt.Fprintf(b, "Proposal sizes last/min/max: %d/%d/%d\n", st.ProposalLast, st.ProposalMin, st.ProposalMax)
	}
}

// writeConnections writes cons (or, brief, stat's client list): one line
// per connection, then an empty line, as ServerCnxn.dumpConnectionInfo.
func writeConnections(b *strings.Builder, v *view, brief bool) {
	for _, c := range v.Connections {
		interest := "1"
		if c.Session == 0 {
			interest = "0"
		}
		fmt.Fprintf(b, " /%s[%s](queued=%d,recved=%d,sent=%d", c.Remote, interest, c.Outstanding, c.Received, c.Sent)
		if !brief && c.Session != 0 {
			fmt.Fprintf(b, ",sid=0x%x,lop=%s,est=%d,to=%d", c.Session, c.LastOp, c.Established.UnixMilli(), c.Timeout.Milliseconds())
			if c.LastCxid >= 0 {
				fmt.Fprintf(b, ",lcxid=0x%x", c.LastCxid)
			}
			fmt.Fprintf(b, ",lzxid=0x%x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d",
				uint64(c.LastZxid), v.elapsedMillis(c.LastResponse), c.LastLatency, c.MinLatency, c.AvgLatency, c.MaxLatency)
		}
		b.WriteString(")\n")
	}
	b.WriteString("\n")
}

// serverStatsJSON fills the server_stats answer.
func serverStatsJSON(out map[string]any, v *view) {
	st := v.Stats
	data, log := dirSizes(v)
	out["version"] = FullVersion()
	out["read_only"] = false
	out["server_stats"] = map[string]any{
		"packets_sent":                 st.PacketsSent,
		"packets_received":             st.PacketsReceived,
		"fsync_threshold_exceed_count": 0,
		"client_response_stats":        map[string]any{"last_buffer_size": -1, "min_buffer_size": -1, "max_buffer_size": -1},
		"data_dir_size":                data,
		"log_dir_size":                 log,
		"provider_null":                false,
		"server_state":                 v.Mode,
		"last_processed_zxid":          st.LastZxid,
		"outstanding_requests":         st.Outstanding,
		"avg_latency":                  st.AvgLatency,
		"max_latency":                  st.MaxLatency,
		"min_latency":                  st.MinLatency,
		"num_alive_client_connections": st.Connections,
		"auth_failed_count":            st.AuthFailed,
		"non_mtlsremote_conn_count":    0,
		"non_mtlslocal_conn_count":     0,
		"uptime":                       v.uptime().Milliseconds(),
	}
	out["client_response"] = map[string]any{"last_buffer_size": -1, "min_buffer_size": -1, "max_buffer_size": -1}
	out["node_count"] = st.Nodes
}

// connectionsJSON fills the connections answer, split by port as
// ZooKeeper splits them by factory; brief leaves out the session fields.
func connectionsJSON(out map[string]any, v *view, brief bool) {
	plain, secure := []map[string]any{}, []map[string]any{}
	for _, c := range v.Connections {
		interest := 1
		if c.Session == 0 {
			interest = 0
		}
		m := map[string]any{
			"remote_socket_address": c.Remote,
			"interest_ops":          interest,
			"outstanding_requests":  c.Outstanding,
			"packets_received":      c.Received,
			"packets_sent":          c.Sent,
		}
		if !brief && c.Session != 0 {
			m["session_id"] = c.Session
			m["last_operation"] = c.LastOp
			m["established"] = c.Established.UnixMilli()
			m["session_timeout"] = c.Timeout.Milliseconds()
			m["last_cxid"] = c.LastCxid
			m["last_zxid"] = c.LastZxid
			m["last_response_time"] = v.elapsedMillis(c.LastResponse)
			m["last_latency"] = c.LastLatency
			m["min_latency"] = c.MinLatency
			m["avg_latency"] = c.AvgLatency
			m["max_latency"] = c.MaxLatency
		}
		if c.Secure {
			secure = append(secure, m)
		} else {
			plain = append(plain, m)
		}
	}
	out["connections"] = plain
	out["secure_connections"] = secure
}

// monitorValue is one mntr line.
type monitorValue struct {
	key   string
	value any
}

// monitorValues lists mntr's keys: version and state first, then the
// metrics hutch keeps, in the order ZooKeeper 3.8 prints them. The
// Prometheus gauges are read from the same list.
func monitorValues(v *view) []monitorValue {
	st, r := v.Stats, v.Replication
	fds, maxFDs := fileDescriptors()
	list := []monitorValue{
		{"version", FullVersion()},
		{"server_state", v.Mode},
		{"ephemerals_count", st.Ephemerals},
		{"num_alive_connections", st.Connections},
		{"avg_latency", st.AvgLatency},
		{"outstanding_requests", st.Outstanding},
		{"znode_count", st.Nodes},
		{"global_sessions", st.Sessions},
		{"packets_sent", st.PacketsSent},
		{"packets_received", st.PacketsReceived},
		{"watch_count", st.Watches},
		{"auth_failed_count", st.AuthFailed},
		{"min_latency", st.MinLatency},
		{"max_file_descriptor_count", maxFDs},
		{"approximate_data_size", st.DataSize},
		{"open_file_descriptor_count", fds},
		{"local_sessions", 0},
		{"uptime", v.uptime().Milliseconds()},
		{"max_latency", st.MaxLatency},
		{"bytes_received_count", st.BytesReceived},
	}
	if v.Mode.Leads() {
		synced, observers := 0, 0
		for _, m := range r.Members {
			switch {
			case m.ID == r.NodeID:
			case m.Role == membership.Observer:
				observers++
			case m.Voter:
				synced++
			}
		}
		list = append(list,
			monitorValue{"learners", len(r.Members) - 1},
			monitorValue{"synced_followers", synced},
			monitorValue{"synced_non_voting_followers", 0},
			monitorValue{"synced_observers", observers},
			monitorValue{"pending_syncs", 0},
			monitorValue{"last_proposal_size", st.ProposalLast},
			monitorValue{"max_proposal_size", st.ProposalMax},
			monitorValue{"min_proposal_size", st.ProposalMin},
		)
	}
	return list
}

// fileDescriptors counts this process's open descriptors and its limit.
func fileDescriptors() (open, limit int64) {
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		open = int64(len(ents))
	}
	limit = -1
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		limit = int64(lim.Cur)
	}
	return open, limit
}
