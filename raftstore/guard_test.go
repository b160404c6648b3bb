package raftstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/hutchzk/hutch/zkdb"
)

// TestUndecodableEntryHalts: an entry that does not decode stops the
// member, and nothing after it applies. It used to be skipped, on the
// assumption that every member skips it alike ("skipping undecodable log
// entry"), but damage happens on one member: the skipping one then
// drifts from the others (issue 26: its zxids apart, a node missing).
func TestUndecodableEntryHalts(t *testing.T) {
	app := newTestApp()
	var halted error
	f := &fsm{db: app.db, log: testLogger(), halt: func(err error) { halted = err }}
	good := func(path string) []byte {
		return zkdb.AppendEntry(nil, 1, encode(t, []zkdb.Command{createCommand(1, path)}))
	}
	f.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: good("/a")})
	bad := good("/b")
	bad[len(bad)/2] ^= 0x20
	f.Apply(&raft.Log{Index: 2, Term: 1, Type: raft.LogCommand, Data: bad})
	f.Apply(&raft.Log{Index: 3, Term: 1, Type: raft.LogCommand, Data: good("/c")})
	if halted == nil || !strings.Contains(halted.Error(), "log entry 2") || !errors.Is(halted, zkdb.ErrCorrupt) {
		t.Fatalf("halt error %v, want one naming entry 2 as corrupt", halted)
	}
	if got := app.db.Applied(); got != 1 {
		t.Fatalf("applied index %d after the damaged entry 2, want 1: nothing past it applies", got)
	}
	if app.exists("/b") || app.exists("/c") {
		t.Fatal("an entry at or after the damaged one was applied")
	}
}
