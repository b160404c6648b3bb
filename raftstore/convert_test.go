package raftstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// TestConvertLogStore: a data directory moves from each store kind to
// each other with its entries, term and vote; the directory then opens
// as the new kind; the old files are kept aside; a directory a running
// member holds is refused.
func TestConvertLogStore(t *testing.T) {
	for _, from := range LogStores {
		for _, to := range LogStores {
			if from == to {
				continue
			}
			t.Run(from+"-to-"+to, func(t *testing.T) {
				dir := t.TempDir()
				st, err := openLogStore(dir, from, testLogger())
				if err != nil {
					t.Fatal(err)
				}
				var entries []*raft.Log
				for i := uint64(1); i <= 600; i++ {
					entries = append(entries, crashEntry(i, 1+i/200))
				}
				if err := st.logs.StoreLogs(entries); err != nil {
					t.Fatal(err)
				}
				if err := st.logs.DeleteRange(1, 40); err != nil { // compacted behind a snapshot
					t.Fatal(err)
				}
				if err := st.stable.SetUint64([]byte("CurrentTerm"), 4); err != nil {
					t.Fatal(err)
				}
				st.stable.SetUint64([]byte("LastVoteTerm"), 3)
				st.stable.Set([]byte("LastVoteCand"), []byte("127.0.0.1:7003"))
				wantFirst, _ := st.logs.FirstIndex()
				if from != LogStoreWAL { // raft-wal's meta store waits on its lock
					if _, err := ConvertLogStore(dir, to, testLogger()); err == nil || !strings.Contains(err.Error(), "stopped") {
						t.Fatalf("converting a directory in use: %v, want a refusal", err)
					}
				}
				st.close()

				old, err := ConvertLogStore(dir, to, testLogger())
				if err != nil {
					t.Fatal(err)
				}
				if kind, err := logFormat(dir, ""); kind != to || err != nil {
					t.Fatalf("the directory holds %q, %v after converting to %s", kind, err, to)
				}
				for _, name := range storeFiles[from] {
					if _, err := os.Stat(filepath.Join(old, name)); err != nil {
						t.Errorf("the old store's %s is not kept aside: %v", name, err)
					}
					if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
						t.Errorf("the old store's %s is still in the data directory", name)
					}
				}
				st, err = openLogStore(dir, "", testLogger())
				if err != nil {
					t.Fatal(err)
				}
				defer st.close()
				if st.kind != to {
					t.Fatalf("opened a %s store, want %s", st.kind, to)
				}
				first, _ := st.logs.FirstIndex()
				last, _ := st.logs.LastIndex()
				// seglog keeps a compacted segment's older entries until the
				// whole segment goes: the copy may start earlier.
				if first == 0 || first > wantFirst || last != 600 {
					t.Fatalf("converted log holds %d-%d, want %d-600", first, last, wantFirst)
				}
				for i := first; i <= last; i++ {
					var l raft.Log
					if err := st.logs.GetLog(i, &l); err != nil {
						t.Fatal(err)
					}
					if want := crashEntry(i, 1+i/200); l.Term != want.Term || !bytes.Equal(l.Data, want.Data) {
						t.Fatalf("entry %d converted as term %d %q", i, l.Term, l.Data)
					}
				}
				term, err := st.stable.GetUint64([]byte("CurrentTerm"))
				voteTerm, _ := st.stable.GetUint64([]byte("LastVoteTerm"))
				cand, _ := st.stable.Get([]byte("LastVoteCand"))
				if got := fmt.Sprintf("%d %v %d %s", term, err, voteTerm, cand); got != "4 <nil> 3 127.0.0.1:7003" {
					t.Fatalf("term, vote: %s", got)
				}
			})
		}
	}
}
