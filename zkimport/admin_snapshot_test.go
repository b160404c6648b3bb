package zkimport_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/server"
	"github.com/hutchzk/hutch/zkformat"
	"github.com/hutchzk/hutch/zkimport"
)

// TestAdminSnapshotCommand: ZooKeeper 3.9's admin snapshot command on
// hutch streams a ZooKeeper snapshot that hutch import reads back into
// the same tree; it answers only an identity with a permission on "/",
// once per 0.3 s; restore is authorized, then refused.
func TestAdminSnapshotCommand(t *testing.T) {
	srv := server.New(server.Config{ListenAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", SuperDigest: superDigest()})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	c := connect(t, srv.Addr().String())
	for _, p := range []string{"/a", "/a/b", "/c"} {
		if _, err := c.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.SetACL("/", zk.DigestACL(zk.PermAll, "alice", "pw"), -1); err != nil {
		t.Fatal(err)
	}
	base := "http://" + srv.AdminAddr().String() + "/commands/"
	get := func(path, auth string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	for _, c := range []struct {
		auth   string
		status int
		msg    string
	}{
		{"", 401, "Auth info is missing for the command"},
		{"kerberos x", 401, "Not authenticated"},
		{"digest bob:pw", 403, "Not authorized"},
	} {
		resp, body := get("snapshot", c.auth)
		var out map[string]any
		_ = json.Unmarshal(body, &out)
		if resp.StatusCode != c.status || out["error"] != c.msg {
			t.Errorf("snapshot with %q: %d %s, want %d %q", c.auth, resp.StatusCode, body, c.status, c.msg)
		}
	}
	resp, body := get("snapshot?streaming=true", "digest alice:pw")
	if resp.StatusCode != 200 || resp.Header.Get("snapshot_size") != strings.TrimSpace(resp.Header.Get("Content-Length")) {
		t.Fatalf("snapshot: %d, headers %v", resp.StatusCode, resp.Header)
	}
	zxid := resp.Header.Get("last_zxid")
	if again, _ := get("snap?streaming=false", "digest alice:pw"); again.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a second snapshot at once: %d, want 429", again.StatusCode)
	}
	time.Sleep(350 * time.Millisecond) // the command's own rate limit
	if meta, b := get("snap?streaming=false", superSecret[:strings.IndexByte(superSecret, ':')]+"x"); meta.StatusCode != 401 {
		t.Errorf("malformed auth: %d %s", meta.StatusCode, b)
	}
	if meta, b := get("snap?streaming=false", "digest "+superSecret); meta.StatusCode != 200 || meta.Header.Get("last_zxid") != zxid || strings.Contains(string(b), "ZKSN") {
		t.Errorf("snapshot without streaming: %d %v %s", meta.StatusCode, meta.Header, b)
	}

	// The stream is a ZooKeeper snapshot with 3.9's trailer; import it.
	dir := filepath.Join(t.TempDir(), "zk")
	z, err := strconv.ParseInt(strings.TrimPrefix(zxid, "0x"), 16, 64)
	if err != nil {
		t.Fatalf("last_zxid %q: %v", zxid, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, zkformat.VersionDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, zkformat.VersionDir, zkformat.SnapshotName(z)), body, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := zkimport.Import(zkimport.Options{Source: zkimport.Source{DataDir: dir}, Output: zkimport.Output{Dir: filepath.Join(t.TempDir(), "out")}})
	if err != nil {
		t.Fatal(err)
	}
	if r.LastZxid != z || r.Digests != 1 || r.Nodes != 7 {
		t.Fatalf("import of the streamed snapshot: %+v", r)
	}

	req, _ := http.NewRequest(http.MethodPost, base+"restore", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "digest alice:pw")
	rresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rresp.Body.Close()
	if rresp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("restore: %d, want 503", rresp.StatusCode)
	}
}
