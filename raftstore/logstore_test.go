package raftstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogFormat: a new data directory records the kind of log it holds;
// reopening it takes that kind, and asking for another is refused rather
// than starting a second, empty log beside the first (which would forget
// the term, the vote and every entry).
func TestLogFormat(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(dir string) // what the directory holds already
		want    string           // kind asked for
		got     string           // kind decided, or "" for a refusal
		errHas  string
	}{
		{name: "a new directory takes the default", want: "", got: DefaultLogStore},
		{name: "a new directory takes the kind asked for", want: LogStoreWAL, got: LogStoreWAL},
		{name: "a new directory takes bolt when asked", want: LogStoreBolt, got: LogStoreBolt},
		{name: "a directory keeps its kind when none is asked for",
			prepare: func(dir string) { write(t, dir, logFormatFile, "wal\n") }, got: LogStoreWAL},
		{name: "asking for another kind is refused",
			prepare: func(dir string) { write(t, dir, logFormatFile, "wal\n") }, want: LogStoreBolt, errHas: "holds a wal log"},
		{name: "a directory from before the format file holds bolt",
			prepare: func(dir string) { write(t, dir, "raft.db", "") }, got: LogStoreBolt},
		{name: "such a directory refuses wal",
			prepare: func(dir string) { write(t, dir, "raft.db", "") }, want: LogStoreWAL, errHas: "holds a bolt log"},
		{name: "an unknown kind is refused", want: "rocks", errHas: "unknown log store"},
		{name: "an unknown recorded kind is refused",
			prepare: func(dir string) { write(t, dir, logFormatFile, "rocks\n") }, errHas: "unknown log store"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.prepare != nil {
				tc.prepare(dir)
			}
			got, err := logFormat(dir, tc.want)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("logFormat(%q) = %q, %v; want an error with %q", tc.want, got, err, tc.errHas)
				}
				return
			}
			if err != nil || got != tc.got {
				t.Fatalf("logFormat(%q) = %q, %v; want %q", tc.want, got, err, tc.got)
			}
			b, err := os.ReadFile(filepath.Join(dir, logFormatFile))
			if err != nil || strings.TrimSpace(string(b)) != tc.got {
				t.Fatalf("format file holds %q, %v; want %q", b, err, tc.got)
			}
		})
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
