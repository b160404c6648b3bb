package zkformat

import (
	"encoding/hex"
	"testing"
)

// TestSessionPassword pins the password Debian's ZooKeeper 3.8.0 gave a
// session (kazoo's client_id after connecting): the import derives the
// same, so the session's client can re-attach to hutch.
func TestSessionPassword(t *testing.T) {
	const id = 0x10000347e130000
	want := "2f26426a90ad616e2512474a59404ee0"
	if got := hex.EncodeToString(SessionPassword(id)); got != want {
		t.Fatalf("password of session %#x: %s, ZooKeeper gave %s", int64(id), got, want)
	}
}
