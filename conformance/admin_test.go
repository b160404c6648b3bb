package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/server"
)

// TestAdminCommands asks ZooKeeper's AdminServer and hutch's for every
// command, by name and by alias, after the same session activity, and
// holds hutch to ZooKeeper's JSON: the same fields with the same types,
// and the same values where both must agree.
// adminToken is the hutch side's admin token in TestAdminCommands.
const adminToken = "conformance-admin-token"

func TestAdminCommands(t *testing.T) {
	type endpoints struct{ client, admin string }
	starts := []struct {
		name  string
		start func(t *testing.T) endpoints
	}{
		{"zookeeper", func(t *testing.T) endpoints {
			port := realzk.FreePort(t)
			zk := realzk.Start(t, realzk.Config("admin.enableServer", "true"),
				realzk.Config("admin.serverAddress", "127.0.0.1"), realzk.Config("admin.serverPort", strconv.Itoa(port)))
			return endpoints{zk.Addr, "127.0.0.1:" + strconv.Itoa(port)}
		}},
		{"hutch", func(t *testing.T) endpoints {
			logs := newLogBuffer()
			srv := server.New(server.Config{ListenAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", AdminToken: adminToken,
				Logger: slog.New(slog.NewTextHandler(logs, nil))})
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			dumpOnFailure(t, "hutch log", logs)
			t.Cleanup(func() { _ = srv.Close() })
			return endpoints{srv.Addr().String(), srv.AdminAddr().String()}
		}},
	}
	commands := []string{"ruok", "server_stats", "srvr", "stats", "stat", "monitor", "mntr", "configuration", "conf",
		"connections", "cons", "environment", "envi", "dump", "watch_summary", "wchs", "watches", "wchc",
		"watches_by_path", "wchp", "dirs", "hash", "is_read_only", "isro", "last_snapshot", "leader",
		"voting_view", "zabstate", "observers", "connection_stat_reset", "stat_reset", "initial_configuration", "no_such_command"}
	shapes := map[string][]string{}
	for _, st := range starts {
		t.Run(st.name, func(t *testing.T) {
			ep := st.start(t)
			conn, events, err := zk.Connect([]string{ep.client}, 30*time.Second, zk.WithLogInfo(false))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			waitSession(t, events)
			if _, err := conn.Create("/a", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Create("/a/e", []byte("x"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			if _, _, _, err := conn.GetW("/a"); err != nil {
				t.Fatal(err)
			}
			if _, _, _, err := conn.ExistsW("/b"); err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, name := range commands {
				// hutch's admin port needs its token for the commands that
				// change the server (the stat resets); ZooKeeper 3.8's
				// ignores the header.
				req, err := http.NewRequest(http.MethodGet, "http://"+ep.admin+"/commands/"+name, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+adminToken)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var v map[string]any
				if err := json.Unmarshal(body, &v); err != nil {
					t.Fatalf("%s: %v in %s", name, err, body)
				}
				lines = append(lines, fmt.Sprintf("%s: status %d %s", name, resp.StatusCode, resp.Header.Get("Content-Type")))
				lines = append(lines, name+": "+adminShape(name, v))
			}
			// The command list names every ZooKeeper command hutch serves.
			resp, err := http.Get("http://" + ep.admin + "/commands")
			if err != nil {
				t.Fatal(err)
			}
			list, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, name := range []string{"configuration", "connections", "dump", "monitor", "ruok", "stats", "watches", "zabstate"} {
				if !strings.Contains(string(list), `href="/commands/`+name+`"`) {
					t.Errorf("GET /commands does not list %s:\n%s", name, list)
				}
			}
			shapes[st.name] = lines
		})
	}
	want, got := shapes["zookeeper"], shapes["hutch"]
	if want == nil || got == nil {
		return // a side failed or was skipped; its subtest says why
	}
	for i := range want {
		if i >= len(got) || want[i] != got[i] {
			g := "(nothing)"
			if i < len(got) {
				g = got[i]
			}
			t.Errorf("admin answers differ:\n zookeeper: %s\n     hutch: %s", want[i], g)
		}
	}
}

// dataKeyed are the answers whose map keys are data (session ids, paths,
// times), not field names.
var dataKeyed = map[string]bool{"expiry_time_to_session_ids": true, "session_id_to_ephemeral_paths": true,
	"session_id_to_watched_paths": true, "path_to_session_ids": true}

// adminShape renders an answer as its fields and their types, with the
// values both servers must agree on.
func adminShape(command string, v map[string]any) string {
	switch command {
	case "monitor", "mntr":
		// ZooKeeper has hundreds of metrics; hutch's must be among them.
		kept := map[string]any{}
		for _, k := range hutchMonitorKeys {
			k = strings.TrimPrefix(k, "zk_")
			if x, ok := v[k]; ok {
				kept[k] = x
			}
		}
		kept["command"], kept["error"] = v["command"], v["error"]
		v = kept
	case "dump":
		// ZooKeeper's expiry queue keeps the bucket a session left when
		// it was touched until that bucket's time passes, so its dump may
		// or may not list an empty bucket, depending on whether a request
		// crossed a tick boundary; the buckets holding sessions are what
		// both must show.
		if buckets, ok := v["expiry_time_to_session_ids"].(map[string]any); ok {
			for k, ids := range buckets {
				if list, ok := ids.([]any); ok && len(list) == 0 {
					delete(buckets, k)
				}
			}
		}
	case "environment", "envi":
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return strings.Join(keys, ",")
	}
	exact := map[string]bool{"command": true, "error": true, "server_state": true, "node_count": true, "read_only": true,
		"tick_time": true, "min_session_timeout": true, "max_session_timeout": true, "server_id": true,
		"client_port_listen_backlog": true, "num_connections": true, "num_paths": true, "num_total_watches": true,
		"ephemerals_count": true, "znode_count": true, "global_sessions": true, "watch_count": true,
		"approximate_data_size": true, "voting": true, "zabstate": true, "last_processed_zxid": true}
	return shapeOf(v, exact, "")
}

func shapeOf(x any, exact map[string]bool, key string) string {
	switch v := x.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(" ")
			}
			name := k
			if dataKeyed[key] {
				name = "*"
			}
			b.WriteString(name + ":" + shapeOf(v[k], exact, k))
		}
		b.WriteString("}")
		return b.String()
	case []any:
		if len(v) == 0 {
			return "[]"
		}
		return fmt.Sprintf("[%d×%s]", len(v), shapeOf(v[0], exact, key))
	case nil:
		return "null"
	case bool:
		if exact[key] {
			return strconv.FormatBool(v)
		}
		return "bool"
	case float64:
		if exact[key] {
			return strconv.FormatFloat(v, 'g', -1, 64)
		}
		return "num"
	case string:
		if exact[key] {
			return strconv.Quote(v)
		}
		return "str"
	}
	return fmt.Sprintf("%T", x)
}
