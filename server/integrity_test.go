package server

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/raftstore"
)

// replaceInFiles replaces old with new (the same length) in every file
// under dir, and returns how many places it changed.
func replaceInFiles(t *testing.T, dir string, old, new []byte) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if k := bytes.Count(b, old); k > 0 {
			n += k
			return os.WriteFile(path, bytes.ReplaceAll(b, old, new), 0o600)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCorruptLogRefused: one byte of a follower's log changed while it
// was down, in a value or in a length. Issue 26 saw the follower restart
// and answer balance=9000 where the others answered balance=1000, or
// skip the entry it could not decode and drift; ZooKeeper refuses to
// start ("CRC check failed"). The follower must refuse to start, saying
// which file or entry is damaged.
func TestCorruptLogRefused(t *testing.T) {
	value := []byte("balance=1000")
	damages := []struct {
		name     string
		old, new []byte
	}{
		{"a value byte", value, []byte("balance=9000")},
		// The data's jute length, 12, one less: the request no longer
		// uses exactly its bytes.
		{"a length byte", append([]byte{0, 0, 0, 12}, value...), append([]byte{0, 0, 0, 11}, value...)},
	}
	for _, store := range []string{raftstore.LogStoreBolt, raftstore.LogStoreSeglog} {
		for _, dmg := range damages {
			t.Run(store+"/"+dmg.name, func(t *testing.T) {
				c := startDurable(t, 3, nil, store, 100*time.Millisecond)
				leader := c.index(c.leader())
				w, _ := dialVia(t, c.addrs(leader)[0], 10*time.Second, nil)
				createOnce(t, w, "/balance", value)
				// Later entries, so the damaged one is not at the log's
				// end, where a store may take it for a write torn by a
				// crash and cut it.
				for i := range 20 {
					createOnce(t, w, fmt.Sprintf("/later%d", i), nil)
				}
				f := c.follower()
				waitFor(t, 10*time.Second, "the follower to apply the write", func() bool {
					return c.members[f].db.LastZxid() >= c.members[leader].db.LastZxid()
				})
				c.stop(f)
				if n := replaceInFiles(t, c.dataDir(f), dmg.old, dmg.new); n == 0 {
					t.Fatalf("%q is nowhere in the follower's %s log", dmg.old, store)
				}
				err := c.start(f)
				if err == nil {
					r, _ := dial(t, c.addrs(f)[0], 10*time.Second)
					if _, err := r.Sync("/balance"); err != nil {
						t.Fatal(err)
					}
					got, _, err := r.Get("/balance")
					t.Fatalf("the damaged follower started and answered %q (%v), where the others hold %q", got, err, value)
				}
				if !strings.Contains(err.Error(), c.dataDir(f)) {
					t.Fatalf("the refusal does not name the data directory %s: %v", c.dataDir(f), err)
				}
				t.Logf("refused: %v", err)
				// The others serve on, the write intact.
				check, _ := dial(t, c.addrs(leader)[0], 10*time.Second)
				if got, _, err := check.Get("/balance"); err != nil || !bytes.Equal(got, value) {
					t.Fatalf("the leader answers %q, %v", got, err)
				}
			})
		}
	}
}

// createOnce creates path, trying again for 20s after a connection lost
// on a loaded machine (an election under a 100ms tick drops the clients),
// a create whose answer was lost counting when the node is there.
func createOnce(t *testing.T, c *zk.Conn, path string, data []byte) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := c.Create(path, data, 0, openACL)
		switch {
		case err == nil, errors.Is(err, zk.ErrNodeExists):
			return
		case !errors.Is(err, zk.ErrConnectionClosed) || time.Now().After(deadline):
			t.Fatalf("create %s: %v", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
