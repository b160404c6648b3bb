package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/internal/realzk"
)

// kazooLine is one line the kazoo script prints; which fields are set
// depends on Op.
type kazooLine struct {
	Op       string             `json:"op"`
	Error    string             `json:"error"`
	Trace    string             `json:"trace"`
	SessionA int64              `json:"session_a"`
	SessionB int64              `json:"session_b"`
	Path     string             `json:"path"`
	Children []string           `json:"children"`
	Data     *string            `json:"data"`
	Stat     *kazooStat         `json:"stat"`
	Event    *kazooEvent        `json:"event"`
	Type     string             `json:"type"`
	State    string             `json:"state"`
	Errors   map[string]*string `json:"errors"`
}

// kazooStat is kazoo's ZnodeStat, field for field.
type kazooStat struct {
	Czxid          int64 `json:"czxid"`
	Mzxid          int64 `json:"mzxid"`
	Ctime          int64 `json:"ctime"`
	Mtime          int64 `json:"mtime"`
	Version        int32 `json:"version"`
	Cversion       int32 `json:"cversion"`
	Aversion       int32 `json:"aversion"`
	EphemeralOwner int64 `json:"ephemeralOwner"`
	DataLength     int32 `json:"dataLength"`
	NumChildren    int32 `json:"numChildren"`
	Pzxid          int64 `json:"pzxid"`
}

func (s *kazooStat) zk() *zk.Stat {
	if s == nil {
		return nil
	}
	st := zk.Stat(*s)
	return &st
}

// kazooEvent is kazoo's WatchedEvent with its type and state names.
type kazooEvent struct {
	Type  string `json:"type"`
	State string `json:"state"`
	Path  string `json:"path"`
}

// runKazoo runs testdata/kazoo_check.py against addr with the Python that
// has Debian's kazoo and returns the lines it printed.
func runKazoo(t *testing.T, addr string) []kazooLine {
	t.Helper()
	if _, err := os.Stat(realzk.Python); err != nil {
		realzk.Unavailable(t, realzk.Python)
	}
	if err := exec.Command(realzk.Python, "-c", "import kazoo").Run(); err != nil {
		realzk.Unavailable(t, "kazoo for "+realzk.Python+" (Debian's python3-kazoo)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*commandTimeout)
	defer cancel()
	cmd := groupCommand(ctx, realzk.Python, "testdata/kazoo_check.py", addr)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	var lines []kazooLine
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l kazooLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("kazoo script printed %q: %v", sc.Text(), err)
		}
		if l.Op == "error" {
			t.Fatalf("kazoo script failed: %s\n%s\nstderr:\n%s", l.Error, l.Trace, stderr.String())
		}
		lines = append(lines, l)
	}
	if runErr != nil {
		t.Fatalf("kazoo script: %v\nstdout:\n%s\nstderr:\n%s", runErr, stdout.String(), stderr.String())
	}
	return lines
}

// TestKazoo drives each target with kazoo, the Python client: ephemeral
// sequential create, get_children, get with a watch, set, delete, and the
// DataWatch and ChildrenWatch recipes that re-arm a watch on every event.
func TestKazoo(t *testing.T) {
	forEachTarget(t, func(t *testing.T, addr string, l *ledger) {
		lines := runKazoo(t, addr)
		next := func(op string) kazooLine {
			t.Helper()
			if len(lines) == 0 {
				t.Fatalf("kazoo script ended before %q", op)
			}
			l := lines[0]
			lines = lines[1:]
			if l.Op != op {
				t.Fatalf("kazoo script printed %q, want %q next", l.Op, op)
			}
			return l
		}

		conn := next("connected")
		if conn.SessionA == 0 || conn.SessionB == 0 || conn.SessionA == conn.SessionB {
			t.Errorf("session ids %#x and %#x; want two different non-zero ids", conn.SessionA, conn.SessionB)
		}
		owners := map[int64]string{0: "none", conn.SessionA: "a", conn.SessionB: "b"}
		const node, second = "/kazoo/n-0000000000", "/kazoo/n-0000000001"
		for _, want := range []string{node, second} {
			if got := next("create").Path; got != want {
				t.Errorf("create(sequence=True, ephemeral=True) = %q, want %q", got, want)
			}
		}
		if got := next("ls").Children; !slices.Equal(got, []string{"n-0000000000", "n-0000000001"}) {
			t.Errorf("get_children(/kazoo) = %v", got)
		}

		parent := next("get")
		wantData(t, "get /kazoo", parent.Data, "parent")
		get := next("get")
		wantData(t, "get "+node, get.Data, "hello")
		st := get.Stat.zk()
		l.record("get /kazoo: %s", statLine(parent.Stat.zk(), owners))
		l.record("get %s: %s", node, statLine(st, owners))
		checkStat(t, "get "+node, st, zk.Stat{DataLength: 5, EphemeralOwner: conn.SessionA})
		if st.Czxid <= 0 || st.Czxid != st.Mzxid || st.Czxid != st.Pzxid {
			t.Errorf("new node %s: czxid %#x, mzxid %#x, pzxid %#x; want all equal and > 0", node, st.Czxid, st.Mzxid, st.Pzxid)
		}
		// The second create is the next transaction, and the parent's
		// last child change.
		checkStat(t, "get /kazoo", parent.Stat.zk(), zk.Stat{
			Cversion: 2, DataLength: 6, NumChildren: 2, Pzxid: st.Czxid + 1,
		})

		dw := next("datawatch")
		wantData(t, "DataWatch initial call", dw.Data, "hello")
		if dw.Event != nil || dw.Stat == nil || *dw.Stat != *get.Stat {
			t.Errorf("DataWatch initial call: event %+v, stat %+v; want no event and the stat get returned", dw.Event, dw.Stat)
		}
		if got := next("childrenwatch").Children; !slices.Equal(got, []string{"n-0000000000", "n-0000000001"}) {
			t.Errorf("ChildrenWatch initial call = %v", got)
		}

		if got := next("set_bad_version").Error; got != "BadVersionError" {
			t.Errorf("set(version=7) raised %q, want BadVersionError", got)
		}
		set := next("set").Stat.zk()
		l.record("set %s: %s", node, statLine(set, owners))
		checkStat(t, "set "+node, set, zk.Stat{
			Czxid: st.Czxid, Ctime: st.Ctime, Version: 1, DataLength: 6, EphemeralOwner: conn.SessionA, Pzxid: st.Pzxid,
		})
		if set.Mzxid <= st.Mzxid {
			t.Errorf("set: mzxid %#x, want > %#x", set.Mzxid, st.Mzxid)
		}
		wantEvent(t, "get(watch=...)", next("watch").event(), "CHANGED", node)
		dw = next("datawatch")
		wantData(t, "DataWatch after set", dw.Data, "world!")
		wantEvent(t, "DataWatch after set", dw.Event, "CHANGED", node)
		if dw.Stat == nil || *dw.Stat.zk() != *set {
			t.Errorf("DataWatch after set: stat %+v, want the stat set returned %+v", dw.Stat, *set)
		}

		wantErrors := map[string]string{
			"create_existing":        "NodeExistsError",
			"create_under_ephemeral": "NoChildrenForEphemeralsError",
			"create_without_parent":  "NoNodeError",
			"delete_not_empty":       "NotEmptyError",
			"delete_bad_version":     "BadVersionError",
			"get_missing":            "NoNodeError",
		}
		errs := next("errors").Errors
		for call, want := range wantErrors {
			if got := errs[call]; got == nil || *got != want {
				t.Errorf("%s raised %v, want %s", call, deref(got), want)
			}
		}

		next("delete")
		dw = next("datawatch")
		if dw.Data != nil || dw.Stat != nil {
			t.Errorf("DataWatch after delete: data %v, stat %+v; want None, None", deref(dw.Data), dw.Stat)
		}
		wantEvent(t, "DataWatch after delete", dw.Event, "DELETED", node)
		if got := next("childrenwatch").Children; !slices.Equal(got, []string{"n-0000000001"}) {
			t.Errorf("ChildrenWatch after delete = %v, want [n-0000000001]", got)
		}
		if ex := next("exists"); ex.Stat != nil {
			t.Errorf("exists(%s) after delete = %+v, want None", node, ex.Stat)
		}

		wantEvent(t, "exists watch on a's ephemeral after a closed", next("watch").event(), "DELETED", second)
		ls := next("ls")
		if len(ls.Children) != 0 {
			t.Errorf("get_children(/kazoo) after a closed = %v, want []", ls.Children)
		}
		// pzxid is the zxid of a's closeSession, which deleted the node.
		l.record("ls /kazoo after a closed: %v %s", ls.Children, statLine(ls.Stat.zk(), owners))
		next("done")
	})
}

func (l kazooLine) event() *kazooEvent {
	return &kazooEvent{Type: l.Type, State: l.State, Path: l.Path}
}

func wantData(t *testing.T, what string, got *string, want string) {
	t.Helper()
	if got == nil || *got != want {
		t.Errorf("%s: data %v, want %q", what, deref(got), want)
	}
}

func wantEvent(t *testing.T, what string, got *kazooEvent, typ, path string) {
	t.Helper()
	want := kazooEvent{Type: typ, State: "CONNECTED", Path: path}
	if got == nil || *got != want {
		t.Errorf("%s: event %+v, want %+v", what, got, want)
	}
}

// deref shows a JSON null as <nil> and a string quoted.
func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
