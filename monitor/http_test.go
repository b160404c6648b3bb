package monitor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/membership"
)

// get asks the admin handler for path and returns the status and body.
func get(tb testing.TB, h http.Handler, method, path, auth, body string) (int, string) {
	tb.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

// decode reads JSON keeping numbers exact (session ids exceed float64's
// precision).
func decode(tb testing.TB, s string) any {
	tb.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		tb.Fatalf("%v in %q", err, s)
	}
	return v
}

// TestAdminCommands holds the AdminServer commands' JSON, in each role,
// to ZooKeeper 3.8's fields for the fixture's state.
func TestAdminCommands(t *testing.T) {
	e1, e2 := at(time.Second).UnixMilli(), at(2*time.Second).UnixMilli()
	tests := []struct {
		mode       membership.State
		name, want string
	}{
		{Standalone, "ruok", `{"command": "ruok", "error": null}`},
		{Standalone, "dump", `{"command": "dump", "error": null,
			"expiry_time_to_session_ids": {"120000": [72057594037927938, 72057594037927937], "122000": [72057594037927939]},
			"session_id_to_ephemeral_paths": {"72057594037927937": ["/a/e"], "72057594037927938": ["/b/e1", "/b/e2"]}}`},
		{Standalone, "cons", fmt.Sprintf(`{"command": "connections", "error": null,
			"connections": [
				{"avg_latency": 0, "established": %d, "interest_ops": 1, "last_cxid": 5, "last_latency": 1, "last_operation": "GETD",
				 "last_response_time": 2500, "last_zxid": 30, "max_latency": 1, "min_latency": 0, "outstanding_requests": 0,
				 "packets_received": 6, "packets_sent": 6, "remote_socket_address": "127.0.0.1:50001",
				 "session_id": 72057594037927937, "session_timeout": 30000},
				{"interest_ops": 0, "outstanding_requests": 0, "packets_received": 1, "packets_sent": 0, "remote_socket_address": "127.0.0.1:50003"}],
			"secure_connections": [
				{"avg_latency": 0, "established": %d, "interest_ops": 1, "last_cxid": -1, "last_latency": 0, "last_operation": "CREA",
				 "last_response_time": 3000, "last_zxid": 31, "max_latency": 0, "min_latency": 0, "outstanding_requests": 0,
				 "packets_received": 2, "packets_sent": 2, "remote_socket_address": "127.0.0.1:50002",
				 "session_id": 72057594037927938, "session_timeout": 10000}]}`, e1, e2)},
		{Standalone, "wchs", `{"command": "watch_summary", "error": null, "num_connections": 3, "num_paths": 2, "num_total_watches": 3}`},
		{Standalone, "wchc", `{"command": "watches", "error": null,
			"session_id_to_watched_paths": {"0": ["/a"], "72057594037927937": ["/a"], "72057594037927938": ["/b"]}}`},
		{Standalone, "wchp", `{"command": "watches_by_path", "error": null,
			"path_to_session_ids": {"/a": [0, 72057594037927937], "/b": [72057594037927938]}}`},
		{Standalone, "hash", `{"command": "hash", "error": null, "digests": [{"digest": 123, "zxid": 128}, {"digest": 456, "zxid": 256}]}`},
		{Standalone, "dirs", `{"command": "dirs", "error": null, "datadir_size": 0, "logdir_size": 0}`},
		{Standalone, "lsnp", `{"command": "last_snapshot", "error": null, "zxid": "-1", "timestamp": -1}`},
		{Standalone, "isro", `{"command": "is_read_only", "error": null, "read_only": false}`},
		{Standalone, "icfg", `{"command": "initial_configuration", "error": null, "initial_configuration": "tickTime=2000\n"}`},
		{Standalone, "conf", `{"command": "configuration", "error": null, "client_port": 2181, "client_port_listen_backlog": -1,
			"data_dir": "", "data_log_dir": "", "max_client_cnxns": 60, "max_session_timeout": 40000,
			"min_session_timeout": 4000, "server_id": 0, "tick_time": 2000}`},
		{Standalone, "srvr", `{"command": "server_stats", "error": null, "version": "3.8.0-hutch, built on BUILT", "read_only": false, "node_count": 7,
			"client_response": {"last_buffer_size": -1, "max_buffer_size": -1, "min_buffer_size": -1},
			"server_stats": {"auth_failed_count": 1, "avg_latency": 0.3333, "client_response_stats": {"last_buffer_size": -1, "max_buffer_size": -1, "min_buffer_size": -1},
				"data_dir_size": 0, "fsync_threshold_exceed_count": 0, "last_processed_zxid": 31, "log_dir_size": 0, "max_latency": 1,
				"min_latency": 0, "non_mtlslocal_conn_count": 0, "non_mtlsremote_conn_count": 0, "num_alive_client_connections": 3,
				"outstanding_requests": 0, "packets_received": 12, "packets_sent": 11, "provider_null": false, "server_state": "standalone", "uptime": 90000}}`},
		{Standalone, "lead", `{"command": "leader", "error": "server is not initialized"}`},
		{Standalone, "zabstate", `{"command": "zabstate", "error": null, "voting": false, "zabstate": ""}`},
		{Standalone, "obsr", `{"command": "observers", "error": null, "synced_observers": 0, "observers": []}`},
		{Standalone, "orst", `{"command": "observer_connection_stat_reset", "error": null}`},
		{Standalone, "digest", `{"command": "digest", "error": null, "digest": "00000000deadbeef", "last_zxid": 31}`},
		{Standalone, "members", `{"command": "members", "error": null, "members": [], "version": "0"}`},
		{Standalone, "raft", `{"command": "raft", "error": null, "mode": "standalone", "node_id": 1, "leader_id": 0, "leader_addr": "", "term": 0, "stats": null}`},
		{Standalone, "nope", `{"command": "nope", "error": "Unknown command: nope"}`},

		{Leader, "lead", `{"command": "leader", "error": null, "is_leader": true, "leader_id": 2, "leader_ip": "127.0.0.1"}`},
		{Leader, "zabstate", `{"command": "zabstate", "error": null, "myid": 2, "is_leader": true, "quorum_address": "127.0.0.1:7002",
			"election_address": "127.0.0.1:7002", "client_address": "127.0.0.1:2181", "voting": true, "last_zxid": "0x1f",
			"zab_epoch": 0, "zab_counter": 31, "zabstate": "broadcast"}`},
		{Leader, "voting_view", `{"command": "voting_view", "error": null, "current_config": {
			"1": {"server_addresses": ["127.0.0.1:7001"], "election_addresses": ["127.0.0.1:7001"], "client_address": "", "learner_type": "participant"},
			"2": {"server_addresses": ["127.0.0.1:7002"], "election_addresses": ["127.0.0.1:7002"], "client_address": "", "learner_type": "participant"}}}`},
		{Leader, "members", `{"command": "members", "error": null, "version": "100000000", "members": [
			{"id": 1, "addr": "127.0.0.1:7001", "role": "participant", "voter": true, "leader": false},
			{"id": 2, "addr": "127.0.0.1:7002", "role": "participant", "voter": true, "leader": true},
			{"id": 3, "addr": "127.0.0.1:7003", "role": "observer", "voter": false, "leader": false}]}`},
		{Leader, "config", `{"command": "configuration", "error": null, "client_port": 2181, "client_port_listen_backlog": -1,
			"data_dir": "", "data_log_dir": "", "max_client_cnxns": 60, "max_session_timeout": 40000,
			"min_session_timeout": 4000, "server_id": 2, "tick_time": 2000}`},
		{Follower, "raft", `{"command": "raft", "error": null, "mode": "follower", "node_id": 1, "leader_id": 2, "leader_addr": "127.0.0.1:7002",
			"term": 4, "last_contact_ms": 500, "stats": {"applied_index": "40", "commit_index": "40", "first_log_index": "2",
			"fsm_applied_index": "40", "last_log_index": "41", "last_snapshot_index": "0"}}`},
		{Follower, "dump", `{"command": "dump", "error": null, "expiry_time_to_session_ids": {},
			"session_id_to_ephemeral_paths": {"72057594037927937": ["/a/e"], "72057594037927938": ["/b/e1", "/b/e2"]}}`},
		{Follower, "zabstate", `{"command": "zabstate", "error": null, "myid": 1, "is_leader": false, "quorum_address": "127.0.0.1:7001",
			"election_address": "127.0.0.1:7001", "client_address": "127.0.0.1:2181", "voting": true, "last_zxid": "0x1f",
			"zab_epoch": 0, "zab_counter": 31, "zabstate": "broadcast"}`},
	}
	for _, tc := range tests {
		t.Run(tc.mode.String()+"/"+tc.name, func(t *testing.T) {
			src := standalone()
			if tc.mode != Standalone {
				src = ensemble(tc.mode)
			}
			status, body := get(t, newMonitor(t, src, Config{}).AdminHandler(), http.MethodGet, "/commands/"+tc.name, "", "")
			if status != http.StatusOK {
				t.Fatalf("status %d", status)
			}
			if got, want := decode(t, builtOn.ReplaceAllString(body, "built on BUILT")), decode(t, tc.want); !reflect.DeepEqual(got, want) {
				t.Errorf("%s answers\n%s\nwant\n%s", tc.name, body, tc.want)
			}
			if tc.name != "nope" && src.calls != 1 {
				t.Errorf("%s took %d snapshots, want 1", tc.name, src.calls)
			}
		})
	}
}

// TestAdminFormat: answers are JSON indented by two spaces, one per
// request, with ZooKeeper's content type.
func TestAdminFormat(t *testing.T) {
	h := newMonitor(t, standalone(), Config{}).AdminHandler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/commands/ruok", nil))
	if got, want := rec.Body.String(), "{\n  \"command\": \"ruok\",\n  \"error\": null\n}\n"; got != want {
		t.Errorf("ruok = %q, want %q", got, want)
	}
	if ct := rec.Result().Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

// TestAdminAliases: every name of a command answers alike, under the
// command's first name.
func TestAdminAliases(t *testing.T) {
	h := newMonitor(t, ensemble(Leader), Config{})
	for _, c := range registry {
		if c.change != nil || c.hasName("environment") || c.hasName("system_properties") {
			continue // membership changes; the process's memory changes under env
		}
		var first any
		for _, n := range c.names {
			_, body := get(t, h.AdminHandler(), http.MethodGet, "/commands/"+n, "", "")
			got := decode(t, body).(map[string]any)
			delete(got, "uptime")
			delete(got, "open_file_descriptor_count")
			if s, ok := got["server_stats"].(map[string]any); ok {
				delete(s, "uptime")
			}
			if got["command"] != c.names[0] {
				t.Errorf("/commands/%s reports command %v", n, got["command"])
			}
			if first == nil {
				first = got
			} else if !reflect.DeepEqual(got, first) && !c.hasName("crst") && !c.hasName("srst") {
				t.Errorf("/commands/%s = %v, /commands/%s = %v", n, got, c.names[0], first)
			}
		}
	}
}

func (c command) hasName(n string) bool { return slices.Contains(c.names, n) }

// TestAdminEnvironment: env and sysp list envi's keys; sysp adds the
// whitelist and the admin address.
func TestAdminEnvironment(t *testing.T) {
	h := newMonitor(t, standalone(), Config{FourLetterWords: []string{"mntr", "ruok"}}).AdminHandler()
	_, body := get(t, h, http.MethodGet, "/commands/sysp", "", "")
	got := decode(t, body).(map[string]any)
	for _, kv := range environment() {
		if _, ok := got[kv[0]]; !ok {
			t.Errorf("sysp lacks %s", kv[0])
		}
	}
	for k, want := range map[string]string{"zookeeper.4lw.commands.whitelist": "mntr,ruok,srvr", "zookeeper.admin.serverAddress": "127.0.0.1",
		"zookeeper.admin.serverPort": "8080", "zookeeper.admin.enableServer": "true", "java.vendor": "hutch (Go)"} {
		if got[k] != want {
			t.Errorf("sysp %s = %v, want %q", k, got[k], want)
		}
	}
}

// TestAdminNotServing: while the server serves no clients the commands
// ZooKeeper gates say so; the others answer.
func TestAdminNotServing(t *testing.T) {
	src := ensemble(Follower)
	src.state.Serving = false
	h := newMonitor(t, src, Config{AdminToken: "t0ken"}).AdminHandler()
	for _, c := range registry {
		if c.change != nil {
			continue
		}
		_, body := get(t, h, http.MethodGet, "/commands/"+c.names[0], "Bearer t0ken", "")
		got := decode(t, body).(map[string]any)
		gated := got["error"] == "This ZooKeeper instance is not currently serving requests"
		if gated != c.serving || (gated && len(got) != 2) {
			t.Errorf("%s while not serving: %s", c.names[0], body)
		}
	}
}

// TestAdminList: GET /commands links every command by its first name,
// sorted, and no membership change.
func TestAdminList(t *testing.T) {
	_, body := get(t, newMonitor(t, standalone(), Config{}).AdminHandler(), http.MethodGet, "/commands", "", "")
	var want []string
	for _, c := range registry {
		if c.change == nil {
			want = append(want, c.names[0])
		}
	}
	slices.Sort(want)
	var b strings.Builder
	for _, n := range want {
		fmt.Fprintf(&b, "<a href=\"/commands/%s\">%s</a>\n<br/>\n", n, n)
	}
	if body != b.String() || len(want) != 27 {
		t.Errorf("/commands =\n%s\nwant %d commands:\n%s", body, len(want), b.String())
	}
}

// TestAdminMembership: with the admin token, the leader adds and removes
// members, and members shows the change; a change made against a version
// the membership has left is refused; a follower refuses; the body is
// checked before anything changes.
func TestAdminMembership(t *testing.T) {
	const token = "Bearer secret-token"
	src := ensemble(Leader)
	h := newMonitor(t, src, Config{AdminToken: "secret-token", MaxMemberID: 9}).AdminHandler()
	members := func() []any {
		_, body := get(t, h, http.MethodGet, "/commands/members", "", "")
		return decode(t, body).(map[string]any)["members"].([]any)
	}
	for _, tc := range []struct {
		method, auth, body string
		status             int
		members            int
	}{
		{http.MethodPost, "", `{"id":4,"addr":"127.0.0.1:7004"}`, http.StatusUnauthorized, 3},
		{http.MethodPost, token, `{"id":10,"addr":"127.0.0.1:7004"}`, http.StatusBadRequest, 3},
		{http.MethodPost, token, `{"id":4}`, http.StatusBadRequest, 3},
		{http.MethodPost, token, `{"id":4,"addr":"127.0.0.1:7004"}`, http.StatusOK, 4},
		{http.MethodDelete, token, `{"id":0}`, http.StatusBadRequest, 4},
		{http.MethodDelete, token, `{"id":3}`, http.StatusOK, 3},
		// Made against a version: refused once the membership moved on
		// (it is 100000002 now), and a version must be hex.
		{http.MethodPost, token, `{"id":6,"addr":"127.0.0.1:7006","version":"100000001"}`, http.StatusConflict, 3},
		{http.MethodDelete, token, `{"id":4,"version":"100000001"}`, http.StatusConflict, 3},
		{http.MethodPost, token, `{"id":6,"addr":"127.0.0.1:7006","version":"v2"}`, http.StatusBadRequest, 3},
	} {
		status, body := get(t, h, tc.method, "/commands/members", tc.auth, tc.body)
		if status != tc.status || len(members()) != tc.members {
			t.Errorf("%s %s: %d %s, %d members; want %d, %d members", tc.method, tc.body, status, body, len(members()), tc.status, tc.members)
		}
	}
	status, body := get(t, h, http.MethodPost, "/commands/members", token, `{"id":5,"addr":"127.0.0.1:7005","version":"100000002"}`)
	wantConfig := "server.1=127.0.0.1:7001:7101:participant\nserver.2=127.0.0.1:7002:7102:participant;127.0.0.1:2182\n" +
		"server.4=127.0.0.1:7004:0:participant\nserver.5=127.0.0.1:7005:0:participant\nversion=100000003"
	if want := `{"command": "add_member", "id": 5, "addr": "127.0.0.1:7005", "config": "` + strings.ReplaceAll(wantConfig, "\n", `\n`) + `", "error": null}`; status != http.StatusOK || !reflect.DeepEqual(decode(t, body), decode(t, want)) {
		t.Errorf("add: %d %s", status, body)
	}
	follower := newMonitor(t, ensemble(Follower), Config{AdminToken: "secret-token"}).AdminHandler()
	status, body = get(t, follower, http.MethodDelete, "/commands/members", token, `{"id":3}`)
	if want := `{"command": "remove_member", "error": "not the leader"}`; status != http.StatusConflict || !reflect.DeepEqual(decode(t, body), decode(t, want)) {
		t.Errorf("remove on a follower: %d %s", status, body)
	}
	if !bytes.Contains([]byte(body), []byte("\n  ")) {
		t.Errorf("answer not indented: %q", body)
	}
}
